// Data parallel through the CLI on the simulated device: `vramlab run --json` gives every
// rank's readings (the published FSDP2 run, rank by rank), NCCL's buffers beside the CUDA
// context, the human table per rank, and `fit --param world` the smallest world that fits.
// Needs the addon built with the engine (VRAMLAB_ADDON or build/Release).
import { describe, expect, it } from 'vitest';
import { useTempHome } from '../helpers/temp_home';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { runCli } from '../helpers/io';
import reference from '../refs/dist_reference.json';

const home = useTempHome('vramlab-cli-par-');

const cli = runCli;
let n = 0;
function specFile(spec: unknown): string {
  const f = path.join(home.dir, `spec${n++}.json`);
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

// the published DDP run of GPT-2 124M (bf16 autocast, AdamW), launched twice on 2x H200
const publishedDdp = reference.runs.find((r) => r.spec.parallel.kind === 'ddp' && r.spec.model.dim === 768)!;
type Readings = Record<string, number>;

describe('vramlab run with DDP', () => {
  it('--json: the first iteration exact on every rank of both launches, later readings inside the reported range', async () => {
    const { code, out } = await cli(['run', specFile(publishedDdp.spec), '--json']);
    expect(code).toBe(0);
    const j = JSON.parse(out) as { ranks: Readings[]; rank_class: number[]; ranges: Record<string, [number, number]>; readings: Readings };
    expect(j.ranks).toHaveLength(2);
    expect(j.rank_class).toEqual([0, 0]); // every rank runs one program
    const launches = publishedDdp.runs as Readings[][];
    const deterministic = Object.keys(launches[0][0]).filter((k) => !/^it[1-9]/.test(k) && k !== 'reserved_peak');
    for (const launch of launches)
      launch.forEach((rank, k) => {
        for (const key of deterministic) expect(j.ranks[k][key], `rank ${k} ${key}`).toBe(rank[key]);
        for (const [key, [lo, hi]] of Object.entries(j.ranges)) {
          expect(rank[key], `rank ${k} ${key}`).toBeGreaterThanOrEqual(lo);
          expect(rank[key], `rank ${k} ${key}`).toBeLessThanOrEqual(hi);
        }
      });
    // the two launches disagree after the rebuild, and the range spans what they saw
    expect(Object.keys(j.ranges)).toContain('it1_after_zero_grad');
    for (const key of deterministic) expect(j.ranges[key]).toBeUndefined();
  });

  it('prints a range, not one number, where PyTorch does not fix the reading', async () => {
    const { code, out } = await cli(['run', specFile(publishedDdp.spec)]);
    expect(code).toBe(0);
    expect(out).toMatch(/ddp x2/);
    expect(out).toMatch(/it1_after_zero_grad\s+\S+ [KMG]iB–\S+ [KMG]iB/);
    expect(out).toMatch(/PyTorch does not fix these readings/);
  });

  it('sweep --param world runs DDP at each world, each rank holding a full replica and its buckets', async () => {
    const spec = { ...publishedDdp.spec, iterations: 1 };
    const { code, out } = await cli(['sweep', specFile(spec), '--param', 'world', '--values', '1,2,8', '--json', '-q']);
    expect(code).toBe(0);
    const r = JSON.parse(out) as { runs: { value: number; status: string; readings: Readings }[] };
    expect(r.runs.map((x) => x.value)).toEqual([1, 2, 8]);
    expect(r.runs.every((x) => x.status === 'done')).toBe(true);
    // DDP replicates: parameters plus one flat bucket per rank, whatever the world
    for (const x of r.runs) expect(x.readings.params).toBe((publishedDdp.runs as Readings[][])[0][0].params);
  });

  it('fit --param batch finds the largest per-rank batch at world 8, planning for the held buckets', async () => {
    const small = reference.runs.find((r) => r.spec.parallel.kind === 'ddp' && r.spec.precision === 'fp32')!.spec;
    const spec = { ...small, parallel: { kind: 'ddp', world: 8 } };
    const { code, out } = await cli(['fit', specFile(spec), '--param', 'batch', '--capacity', '2GiB', '--max', '64', '--json', '-q']);
    expect(code).toBe(0);
    const r = JSON.parse(out) as { value: number; probes: { ok: boolean; value: number }[] };
    expect(r.value).toBeGreaterThanOrEqual(1);
    for (const p of r.probes) expect(p.ok).toBe(p.value <= r.value);
  });
});
