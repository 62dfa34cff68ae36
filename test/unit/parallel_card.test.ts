// NCCL's buffers are on the card beside the CUDA context wherever the lab says what a
// data-parallel run holds: fit's whole-card line and table, sweep's column and the run's
// verdict agree, and after an OOM every distinct rank has its own verdict (uneven shards at
// world 3 make rank 2 smaller than ranks 0-1). Needs the addon built with the engine.
import { describe, expect, it } from 'vitest';
import { useTempHome } from '../helpers/temp_home';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { runCli } from '../helpers/io';
import { formatBytes } from '../../main/contract/units';

const home = useTempHome('vramlab-par-card-');

let n = 0;
function specFile(spec: unknown): string {
  const f = path.join(home.dir, `spec${n++}.json`);
  writeFileSync(f, JSON.stringify(spec));
  return f;
}

// A small GPT sharded with bf16 parameters: world 1 and 2 run out under 500 MiB, world 4 fits.
const gpt = { kind: 'gpt', vocab: 8192, seq: 256, dim: 512, depth: 6, heads: 8 };
const spec = (world?: number) => ({
  model: gpt,
  batch: 8,
  optimizer: 'adamw',
  parallel: { kind: 'fsdp2', param_dtype: 'bf16', reduce_dtype: 'fp32', ...(world ? { world } : {}) },
});

describe('NCCL on the card for data-parallel runs', () => {
  it("fit --param world counts NCCL in its whole-card line, as sweep's column and the run's verdict do", async () => {
    const run = JSON.parse((await runCli(['run', specFile(spec(4)), '--capacity', '500MiB', '--json'])).out);
    expect(run.status).toBe('done');
    expect(run.nccl).toBeGreaterThan(0);
    const onCard = run.peak_reserved + run.context + run.nccl;
    expect(run.verdict.on_card).toBe(onCard);
    expect(run.verdict.nccl).toBe(run.nccl);

    const fit = await runCli(['fit', specFile(spec()), '--param', 'world', '--capacity', '500MiB', '--max', '16', '-q']);
    expect(fit.code).toBe(0);
    expect(fit.out).toMatch(/smallest world that fits .*: 4 GPUs/);
    const line = fit.out.split('\n').find((l) => l.includes('peak reserved') && l.includes(' = '))!;
    expect(line).toContain(`+ NCCL ${formatBytes(run.nccl)}`);
    expect(line).toContain(`= ${formatBytes(onCard)} of`);
    const fitRow = fit.out.split('\n').find((l) => /^\s*4\s+yes\b/.test(l))!;
    expect(fitRow).toContain(formatBytes(onCard));

    const sweep = await runCli(['sweep', specFile(spec()), '--param', 'world', '--values', '2,4', '--capacity', '500MiB', '-q']);
    expect(sweep.code).toBe(0);
    const sweepRow = sweep.out.split('\n').find((l) => /^\s*4\s+done\b/.test(l))!;
    expect(sweepRow).toContain(formatBytes(onCard));
    // World 2 runs out in both: at the OOM NCCL's buffers were already held, and both say so alike.
    const onCardCell = (row: string) => row.trim().split(/\s{2,}/)[4];
    const fitOom = fit.out.split('\n').find((l) => /^\s*2\s+no\b/.test(l))!;
    const sweepOom = sweep.out.split('\n').find((l) => /^\s*2\s+oom\b/.test(l))!;
    expect(onCardCell(fitOom)).toBe(onCardCell(sweepOom));
    const probes = JSON.parse(
      (await runCli(['fit', specFile(spec()), '--param', 'world', '--capacity', '500MiB', '--max', '16', '--json', '-q'])).out,
    ).probes as { value: number; ok: boolean; nccl: number }[];
    expect(probes.slice(0, 3).map((p) => [p.value, p.ok, p.nccl > 0])).toEqual([
      [1, false, false],
      [2, false, true],
      [4, true, true],
    ]);
    // With probes at once a round may also try a larger world beside 4: it fits too.
    expect(probes.slice(3).every((p) => p.value > 4 && p.ok && p.nccl > 0)).toBe(true);
  });

  it('after an OOM each distinct rank says what it needs on the card, NCCL included', async () => {
    const { out } = await runCli(['run', specFile(spec(3)), '--capacity', '330MiB', '--json']);
    const j = JSON.parse(out);
    expect(j.status).toBe('oom');
    // The engine ends the run at the failure; the unbounded run gives the classes and NCCL's share.
    expect(j.rank_class).toEqual([0, 0, 2]);
    expect(j.nccl).toBeGreaterThan(0);
    expect(j.rank_verdicts.map((v: { rank: number }) => v.rank)).toEqual([0, 2]);
    for (const v of j.rank_verdicts) {
      expect(v.verdict.on_card).toBe(v.peak_reserved + j.context + j.nccl);
      expect(v.verdict.margin).toBe(v.verdict.limit - v.verdict.on_card);
      expect(v.verdict.fits).toBe(false);
    }
    // Rank 2 holds the shorter shards: it needs less than rank 0, whose need is the run's verdict.
    expect(j.rank_verdicts[1].peak_reserved).toBeLessThan(j.rank_verdicts[0].peak_reserved);
    expect(j.rank_verdicts[0].verdict).toEqual(j.verdict);
    const text = (await runCli(['run', specFile(spec(3)), '--capacity', '330MiB'])).out;
    expect(text).toMatch(/ranks 0–1: does not fit: needs .* short by/);
    expect(text).toMatch(/rank 2: does not fit: needs .* short by/);
    expect(text).toMatch(/with the context and NCCL/);
  });
});
