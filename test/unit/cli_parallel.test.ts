// Data parallel through the CLI on the simulated device: `vramlab run --json` gives every
// rank's readings (the published FSDP2 run, rank by rank), NCCL's buffers beside the CUDA
// context, the human table per rank, and `fit --param world` the smallest world that fits.
// Needs the addon built with the engine (VRAMLAB_ADDON or build/Release).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { runCli } from '../helpers/io';
import reference from '../refs/dist_reference.json';

let dir = '';
let savedHome: string | undefined;
beforeAll(() => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'vramlab-cli-par-'));
  savedHome = process.env.VRAMLAB_HOME;
  process.env.VRAMLAB_HOME = path.join(dir, 'home');
});
afterAll(() => {
  if (savedHome === undefined) delete process.env.VRAMLAB_HOME;
  else process.env.VRAMLAB_HOME = savedHome;
  rmSync(dir, { recursive: true, force: true });
});

const cli = runCli;
let n = 0;
function specFile(spec: unknown): string {
  const f = path.join(dir, `spec${n++}.json`);
  writeFileSync(f, JSON.stringify(spec));
  return f;
}

// the published GPT run with bf16 parameters and fp32 reduction
const published = reference.runs.find(
  (r) =>
    r.spec.parallel.kind === 'fsdp2' &&
    (r.spec.parallel as { param_dtype?: string }).param_dtype === 'bf16' &&
    r.spec.model.dim === 512 &&
    !('reshard_after_forward' in r.spec.parallel),
)!;

describe('vramlab run with spec.parallel', () => {
  it('--json lists every rank: the published FSDP2 run, each rank exact', async () => {
    const { code, out } = await cli(['run', specFile(published.spec), '--json']);
    expect(code).toBe(0);
    const j = JSON.parse(out);
    expect(j.ranks).toHaveLength(2);
    expect(j.rank_class).toEqual([0, 0]);
    for (const launch of published.runs) launch.forEach((rank, k) => expect(j.ranks[k]).toEqual(rank));
    expect(j.readings).toEqual(j.ranks[0]);
    expect(j.nccl).toBeGreaterThan(0);
  });

  it('prints one column for ranks that share a simulation and counts NCCL on the card', async () => {
    const { code, out } = await cli(['run', specFile({ ...published.spec, parallel: { ...published.spec.parallel, world: 8 } })]);
    expect(code).toBe(0);
    expect(out).toMatch(/every rank \(8\)/);
    expect(out).toMatch(/\+ NCCL 846\.00 MiB =/);
    expect(out).toMatch(/fsdp2 x8/);
  });

  it('fit --param world finds the smallest world that fits, more ranks needing less each', async () => {
    const spec = { ...published.spec, parallel: { kind: 'fsdp2', param_dtype: 'bf16', reduce_dtype: 'fp32' } };
    const { code, out } = await cli(['fit', specFile(spec), '--param', 'world', '--capacity', '500MiB', '--max', '16', '--json', '-q']);
    expect(code).toBe(0);
    const r = JSON.parse(out);
    expect(r.value).toBe(4); // world 1 and 2 run out under 500 MiB, world 4 fits
    const fits = r.probes.filter((p: { ok: boolean }) => p.ok).map((p: { value: number }) => p.value);
    expect(Math.min(...fits)).toBe(r.value);
    expect(r.probes.filter((p: { ok: boolean; value: number }) => !p.ok).every((p: { value: number }) => p.value < r.value)).toBe(true);
  });
});
