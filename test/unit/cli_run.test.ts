// `vramlab run` end to end on the simulated device: the parity protocol's readings
// through --json, invalid specs, OOM as a result, CSV export and the runs command.
// Needs the addon built with the engine (VRAMLAB_ADDON or build/Release).
import { describe, expect, it } from 'vitest';
import { useTempHome } from '../helpers/temp_home';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import Papa from 'papaparse';
import { runCli } from '../helpers/io';
import reference from '../refs/pytorch_reference.json';
import lossMeasured from '../refs/measured/h200_protocol_loss_matmul_warmup.json';

const MiB = 2 ** 20;
const home = useTempHome('vramlab-cli-');

const cli = runCli;

let n = 0;
function specFile(spec: unknown): string {
  const f = path.join(home.dir, `spec${n++}.json`);
  writeFileSync(f, typeof spec === 'string' ? spec : JSON.stringify(spec));
  return f;
}

type ParityConfig = {
  model: string;
  in?: number;
  hidden?: number;
  depth: number;
  out?: number;
  dim?: number;
  batch: number;
  ckpt?: string;
  opt: string;
};

function toSpec(c: ParityConfig) {
  return {
    model:
      c.model === 'mlp'
        ? { kind: 'mlp', in: c.in, hidden: c.hidden, depth: c.depth, out: c.out }
        : { kind: 'residual', dim: c.dim, depth: c.depth },
    batch: c.batch,
    checkpoint: c.ckpt ?? 'none',
    optimizer: c.opt,
    iterations: 2,
    accum: 1,
    precision: 'fp32',
    device: 'sim:h200-141gb',
  };
}

describe('vramlab run --json reproduces the PyTorch parity readings', () => {
  const runs = (reference as { parity_examples: { runs: { config: ParityConfig; torch: Record<string, number> }[] } }).parity_examples.runs;
  it.each(runs.map((r) => [`${r.config.model} ${r.config.ckpt ?? ''} ${r.config.opt}`, r] as const))('%s', async (_name, ref) => {
    const { code, out, err } = await cli(['run', specFile(toSpec(ref.config)), '--json']);
    expect(err).toBe('');
    expect(code).toBe(0);
    const result = JSON.parse(out);
    expect(result.status).toBe('done');
    expect(result.oom).toBeNull();
    // reserved_peak (max_memory_reserved over the run) comes on top of the published readings.
    expect(Object.keys(result.readings)).toEqual([...Object.keys(ref.torch), 'reserved_peak']);
    for (const [key, want] of Object.entries(ref.torch)) {
      const tol = Math.max(0.01 * Math.abs(want), 2 * MiB);
      expect(Math.abs(result.readings[key] - want), `${key}: got ${result.readings[key]}, PyTorch ${want}`).toBeLessThanOrEqual(tol);
    }
  });

  it('has the inference and loss-accumulation keys', async () => {
    const inf = JSON.parse((await cli(['run', specFile({ mode: 'inference' }), '--json'])).out);
    expect(Object.keys(inf.readings)).toEqual(['params', 'input', 'after_forward', 'peak']);
    const keep = JSON.parse(
      (await cli(['run', specFile({ mode: 'loss_accumulation', iterations: 10, keep_loss_graph: true }), '--json'])).out,
    );
    const drop = JSON.parse(
      (await cli(['run', specFile({ mode: 'loss_accumulation', iterations: 10, keep_loss_graph: false }), '--json'])).out,
    );
    expect(Object.keys(keep.readings)).toContain('after_loop');
    // Keeping the loss tensor keeps ten graphs' activations alive; .item() keeps none.
    expect(keep.readings.after_loop).toBeGreaterThan(drop.readings.after_loop + 9 * 256 * 2048 * 4);
  });
});

describe('vramlab run --json with the mse and cross_entropy losses matches PyTorch', () => {
  // test/refs/measured/h200_protocol_loss_matmul_warmup.json was taken after a plain-matmul
  // warm-up; `vramlab run` uses the published Linear warm-up, whose forward already made the
  // 1 MiB cuBLASLt workspace, so every reading from after_forward on is exactly 1 MiB lower.
  type LossRun = { spec: Record<string, unknown>; readings: Record<string, number> };
  const runs = (lossMeasured as unknown as { runs: LossRun[] }).runs;
  const pick = (loss: string) => runs.find((r) => r.spec.loss === loss && r.spec.mode === undefined && r.spec.precision === undefined)!;
  it.each([
    ['mse', pick('mse')],
    ['cross_entropy', pick('cross_entropy')],
  ] as const)('%s', async (_loss, ref) => {
    const { code, out, err } = await cli(['run', specFile({ ...ref.spec, device: 'sim:h200-141gb' }), '--json']);
    expect(err).toBe('');
    expect(code).toBe(0);
    const result = JSON.parse(out);
    expect(result.status).toBe('done');
    expect(result.spec.loss).toBe(ref.spec.loss);
    expect(Object.keys(result.readings)).toEqual([...Object.keys(ref.readings), 'reserved_peak']);
    for (const [key, torch] of Object.entries(ref.readings)) {
      const want = key === 'params' || key === 'input' ? torch : torch - MiB;
      expect(result.readings[key], `${key}: PyTorch ${torch} (matmul warm-up)`).toBe(want);
    }
  });

  it('counts the target in the input reading', async () => {
    const input = async (loss: string) =>
      JSON.parse((await cli(['run', specFile({ loss, batch: 256, device: 'sim:h200-141gb' }), '--json'])).out).readings.input;
    const sum = await input('sum');
    expect((await input('mse')) - sum).toBe(256 * 10 * 4); // randn(batch, out) fp32
    expect((await input('cross_entropy')) - sum).toBe(256 * 8); // randint labels, int64
  });
});

describe('vramlab run', () => {
  it('rejects an invalid spec with the field and range, starting nothing', async () => {
    const r = await cli(['run', specFile({ batch: 0, model: { kind: 'mlp', depth: -1 } }), '--json']);
    expect(r.code).toBe(2);
    expect(r.out).toBe('');
    expect(r.err).toContain('batch: must be an integer from 1 to');
    expect(r.err).toContain('model.depth: must be an integer from 1 to');
    expect(JSON.parse((await cli(['runs', '--json'])).out).every((m: { spec: { batch: number } }) => m.spec.batch !== 0)).toBe(true);
    expect((await cli(['run', specFile('{not json'), '--json'])).err).toMatch(/is not JSON/);
    expect((await cli(['run', path.join(home.dir, 'missing.json')])).code).toBe(2);
    expect((await cli(['run', specFile({ device: 'sim:nonesuch' }), '--json'])).err).toMatch(/nonesuch/);
    expect((await cli(['run', specFile({ alloc_conf: 'max_split_size_mb:1' }), '--json'])).err).toMatch(/max_split_size_mb/);
    expect((await cli(['run', specFile({ loss: 'hinge' }), '--json'])).err).toMatch(/loss: must be one of "sum", "mse", "cross_entropy"/);
    expect((await cli(['run', specFile({ capacity: '500GiB' }), '--json'])).err).toMatch(/capacity .* is more than sim:h100-80gb/);
  });

  it("reports an OOM as a result (exit 0) with PyTorch's message and a diagnosis; --fail-on-oom exits 3", async () => {
    const spec = specFile({ batch: 65536, capacity: '2GiB', device: 'sim:h100-80gb' });
    const r = await cli(['run', spec, '--json']);
    expect(r.code).toBe(0);
    const res = JSON.parse(r.out);
    expect(res.status).toBe('oom');
    expect(res.oom.message).toMatch(/^CUDA out of memory\. Tried to allocate/);
    expect(res.oom.message).toMatch(/2\.00 GiB allowed/);
    expect(res.oom.capacity).toBe(2 * 2 ** 30);
    expect(res.oom.requested).toBeGreaterThan(0);
    expect(res.oom.dominant.category).toBe('activations');
    expect(res.oom.suggestions.join(' ')).toMatch(/batch/);
    expect((await cli(['run', spec, '--json', '--fail-on-oom'])).code).toBe(3);
    const human = await cli(['run', spec]);
    expect(human.out).toMatch(/OUT OF MEMORY/);
  });

  it('writes the timeline as CSV and manages runs through `vramlab runs`', async () => {
    const csvFile = path.join(home.dir, 'timeline.csv');
    const r = await cli([
      'run',
      specFile({ model: { kind: 'residual', depth: 4, dim: 256 }, batch: 32 }),
      '--json',
      '--csv',
      csvFile,
      '--name',
      'csv run',
    ]);
    expect(r.code).toBe(0);
    const { id, summary_peak = JSON.parse(r.out).peak_allocated } = JSON.parse(r.out);
    const parsed = Papa.parse<Record<string, number | string | null>>(readFileSync(csvFile, 'utf8'), {
      header: true,
      dynamicTyping: true,
      skipEmptyLines: true,
    });
    expect(parsed.errors).toEqual([]);
    expect(parsed.data.length).toBeGreaterThan(10);
    expect(Math.max(...parsed.data.map((row) => Number(row.allocated_bytes)))).toBe(summary_peak);
    const phases = new Set(parsed.data.map((row) => row.phase));
    for (const p of ['forward', 'backward', 'optimizer_step']) expect(phases).toContain(p);
    for (const row of parsed.data) expect(Number(row.cached_free_bytes)).toBe(Number(row.reserved_bytes) - Number(row.allocated_bytes));

    const list = JSON.parse((await cli(['runs', 'list', '--json'])).out);
    expect(list.find((m: { id: string }) => m.id === id).name).toBe('csv run');
    expect((await cli(['runs', 'rename', id, 'renamed', 'run'])).code).toBe(0);
    expect(JSON.parse((await cli(['runs', 'show', id, '--json'])).out).name).toBe('renamed run');
    const summaryFile = path.join(home.dir, 'summary.csv');
    expect((await cli(['runs', 'export-summary', '--csv', summaryFile])).code).toBe(0);
    const rows = Papa.parse<Record<string, unknown>>(readFileSync(summaryFile, 'utf8'), { header: true, skipEmptyLines: true }).data;
    expect(rows.length).toBe(list.length);
    const other = list.find((m: { id: string }) => m.id !== id).id;
    expect((await cli(['runs', 'compare', id, other])).out).toContain('peak allocated');
    expect((await cli(['runs', 'delete', id])).code).toBe(0);
    expect((await cli(['runs', 'show', id])).code).toBe(1);
  });

  it('sweeps and fits from the command line', async () => {
    const base = specFile({ model: { kind: 'residual', depth: 8, dim: 256 }, batch: 16, device: 'sim:h100-80gb' });
    const sweep = await cli(['sweep', base, '--param', 'checkpoint', '--values', 'none,block,sqrt', '--json', '-q']);
    expect(sweep.code).toBe(0);
    const s = JSON.parse(sweep.out);
    expect(s.runs.map((r: { value: unknown }) => r.value)).toEqual(['none', 'block', 'sqrt']);
    const fwd = s.runs.map((r: { readings: Record<string, number> }) => r.readings.after_forward);
    expect(fwd[1]).toBeLessThan(fwd[0]); // checkpointing keeps fewer activations
    const bad = await cli(['sweep', base, '--param', 'batch', '--values', '8,-1']);
    expect(bad.code).toBe(2);
    expect(bad.err).toMatch(/value 2 \(-1\): batch/);

    const fit = await cli(['fit', specFile({ batch: 256, capacity: '1GiB', device: 'sim:h100-80gb' }), '--json', '-q']);
    expect(fit.code).toBe(0);
    const f = JSON.parse(fit.out);
    expect(f.capacity).toBe(2 ** 30);
    const ok = f.probes.filter((p: { ok: boolean }) => p.ok).map((p: { batch: number }) => p.batch);
    const bad2 = f.probes.filter((p: { ok: boolean }) => !p.ok).map((p: { batch: number }) => p.batch);
    expect(f.batch).toBe(Math.max(...ok));
    expect(Math.min(...bad2)).toBe(f.batch + 1);
  }, 120_000);
});
