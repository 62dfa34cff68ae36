// `vramlab run` of a data-parallel spec as a real job: one rank process per GPU on cuda:N
// (for real on a machine with GPUs: test/gpu/nccl.sh), here the same plumbing on the
// simulated device with --launch: two real rank processes (the CLI as `__rank`) exchange
// the group id, each runs its rank's program and reads as the in-process simulation of
// that rank; a failing rank ends the job with its reason; more ranks than visible GPUs is
// refused before anything starts. Needs the addon and `npm run build:main` (bin/vramlab.js).
import { describe, expect, it } from 'vitest';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { useTempHome } from '../helpers/temp_home';
import { runCli } from '../helpers/io';
import { loadAddon } from '../../main/addon/load';

const home = useTempHome('vramlab-cli-launch-');
let n = 0;
function specFile(spec: unknown): string {
  const f = path.join(home.dir, `spec${n++}.json`);
  writeFileSync(f, JSON.stringify(spec));
  return f;
}

const small = {
  device: 'sim:h100-80gb',
  model: { kind: 'gpt', vocab: 512, seq: 32, dim: 64, depth: 2, heads: 4 },
  batch: 2,
  optimizer: 'adamw',
  iterations: 2,
};

describe('vramlab run with spec.parallel launched as rank processes', () => {
  it('three FSDP2 rank processes read as the simulation, rank by rank (rows that split unevenly differ)', async () => {
    const spec = { ...small, model: { ...small.model, vocab: 8192, dim: 96 }, parallel: { kind: 'fsdp2', world: 3 } };
    const launched = await runCli(['run', specFile(spec), '--launch', '--json']);
    expect(launched.err).toBe('');
    expect(launched.code).toBe(0);
    const j = JSON.parse(launched.out);
    const sim = JSON.parse((await runCli(['run', specFile(spec), '--json'])).out);
    expect(j.launched).toBe(true);
    expect(j.rank_devices).toEqual(['sim:h100-80gb', 'sim:h100-80gb', 'sim:h100-80gb']);
    expect(j.ranks).toEqual(sim.ranks);
    expect(j.ranks[2]).not.toEqual(j.ranks[0]); // 8192 rows in chunks of 2731: rank 2 holds 2730
    expect(j.readings).toEqual(j.ranks[0]);
    // every gradient reduce-scattered, nothing all-reduced
    for (const c of j.collectives) {
      expect(c.reduce_scatter).toBeGreaterThan(0);
      expect(c.all_reduce).toBe(0);
    }
  });

  it('DDP ranks launched read as the simulation (the held side of its ranges)', async () => {
    const spec = { ...small, parallel: { kind: 'ddp', world: 2, bucket_cap_mb: 0.05 } };
    const j = JSON.parse((await runCli(['run', specFile(spec), '--launch', '--json'])).out);
    const sim = JSON.parse((await runCli(['run', specFile(spec), '--json'])).out);
    expect(j.ranks).toEqual([sim.readings, sim.readings]);
    expect(j.collectives[0].all_reduce).toBeGreaterThan(0);
  });

  it('a rank that fails ends the job with its reason', async () => {
    // FSDP2 casts forward inputs outside a checkpoint's recomputation: PyTorch and each rank fail
    const spec = {
      ...small,
      model: { kind: 'llama', vocab: 512, seq: 32, dim: 64, depth: 2, heads: 4, kv_heads: 2, ffn: 96 },
      checkpoint: 'block',
      parallel: { kind: 'fsdp2', world: 2, param_dtype: 'bf16', reduce_dtype: 'fp32' },
    };
    const r = await runCli(['run', specFile(spec), '--launch', '--json']);
    expect(r.code).toBe(1);
    expect(r.err).toMatch(/rank \d: .*CheckpointError/);
  });

  it('on cuda:0 asks for one GPU per rank and refuses more ranks than are visible', async () => {
    const gpus = loadAddon()
      .listDevices()
      .filter((d) => d.kind === 'cuda').length;
    const spec = { ...small, device: 'cuda:0', parallel: { kind: 'fsdp2', world: gpus + 1 } };
    const r = await runCli(['run', specFile(spec), '--json']);
    expect(r.code).toBe(2);
    expect(r.err).toContain(`parallel.world ${gpus + 1} runs one rank per GPU: ${gpus + 1} GPUs needed, ${gpus} visible`);
    const other = await runCli(['run', specFile({ ...spec, device: 'cuda:1' }), '--json']);
    expect(other.code).toBe(2);
    expect(other.err).toContain('starts at cuda:0');
  });
});
