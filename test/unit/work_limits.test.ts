// Unbounded work and sizes that overflow are refused at the spec
// boundary (main/contract/limits.ts) from every entry point, and a bounded store for the
// largest run that is allowed (main/store/decimate.ts) with its peaks kept exactly.
// Before: `iterations: 100000` was accepted and ran 31 s at 1.7 GB RSS writing 817 MB.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { checkSpec, parseSpec } from '../../main/contract/spec';
import { MAX_LAYER_STEPS, MAX_ITERATIONS } from '../../main/contract/limits';
import { checkSweep } from '../../main/runner/sweep';
import { fitLimit } from '../../main/runner/fit';
import { RunStore } from '../../main/store/store';
import { RunManager } from '../../main/runner/manager';
import { LEVEL_SAMPLES, SampleDecimator } from '../../main/store/decimate';
import { createHost } from '../../main/host/create';
import { main } from '../../main/cli/main';
import type { MemorySample } from '../../main/contract/runs';
import { native } from '../helpers/addon';
import { captureIO } from '../helpers/io';

let dir = '';
beforeAll(() => void (dir = mkdtempSync(path.join(os.tmpdir(), 'vramlab-limits-'))));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const issues = (spec: unknown) => {
  const r = checkSpec(spec);
  return r.ok ? [] : r.issues;
};

describe('total work is bounded at the spec boundary', () => {
  it('refuses iterations: 100000 and products of in-range fields that run away', () => {
    expect(issues({ iterations: 100_000 }).join()).toMatch(/iterations: must be an integer from 1 to 10000 \(got 100000\)/);
    expect(issues({ iterations: 9000, model: { kind: 'mlp', depth: 64 } }).join()).toMatch(/too much work/);
    expect(issues({ accum: 4096, model: { kind: 'residual', depth: 4096 } }).join()).toMatch(/too much work/);
    expect(issues({ iterations: MAX_ITERATIONS, model: { kind: 'mlp', depth: Math.floor(MAX_LAYER_STEPS / MAX_ITERATIONS) } })).toEqual([]);
  });

  it('bounds the transformer families by the same product (they have depth)', () => {
    const gpt = { kind: 'gpt', vocab: 100, seq: 64, dim: 64, depth: 64, heads: 4 };
    expect(issues({ model: gpt, iterations: MAX_LAYER_STEPS / 64 })).toEqual([]);
    expect(issues({ model: gpt, iterations: MAX_LAYER_STEPS / 64 + 1 }).join()).toMatch(
      /iterations: too much work: iterations x accum x model.depth = 65600/,
    );
    expect(issues({ model: { kind: 'llama', depth: 32 }, iterations: 1025, accum: 2 }).join()).toMatch(/too much work/);
    expect(issues({ model: { kind: 'llama', depth: 32 }, iterations: 1025, accum: 2, mode: 'generate' })).toEqual([]); // iterations unused
  });

  it('mode generate: new_tokens x depth is the work (one forward over every block per token)', () => {
    const llama8b = { kind: 'llama', vocab: 128256, seq: 8192, dim: 4096, depth: 32, heads: 32, kv_heads: 8, ffn: 14336 };
    expect(issues({ model: llama8b, mode: 'generate', prompt: 128, new_tokens: MAX_LAYER_STEPS / 32 })).toEqual([]);
    const over = issues({ model: llama8b, mode: 'generate', prompt: 128, new_tokens: MAX_LAYER_STEPS / 32 + 1 });
    expect(over).toEqual([
      `new_tokens: too much work: new_tokens x model.depth = ${MAX_LAYER_STEPS + 32}, at most ${MAX_LAYER_STEPS}; lower one of them (got ${MAX_LAYER_STEPS / 32 + 1})`,
    ]);
    // The fit over new_tokens stops at the largest generation the limits accept, not at seq - prompt.
    const spec = checkSpec({ model: llama8b, mode: 'generate', prompt: 128, new_tokens: 128 });
    expect(spec.ok && fitLimit(spec.spec, 'new_tokens')).toBe(MAX_LAYER_STEPS / 32);
    const small = checkSpec({ model: { kind: 'gpt', depth: 12 }, mode: 'generate' });
    expect(small.ok && fitLimit(small.spec, 'new_tokens')).toBe(1024 - 128); // seq - prompt, within the work bound
  });

  it('transformer tensors: batch x seq x vocab past 1 PiB is refused', () => {
    const wide = { kind: 'gpt', vocab: 1 << 20, seq: 1 << 16, dim: 64, depth: 1, heads: 1 };
    expect(issues({ model: wide, batch: 1 << 14 }).join()).toMatch(/model: describes a tensor of \d+ bytes, more than/);
    expect(issues({ model: wide, batch: 1 << 10 })).toEqual([]);
    expect(issues({ model: { ...wide, seq: 1 << 10 }, batch: 1, shapes: [{ batch: 1 << 20, seq: 1 << 10 }] }).join()).toMatch(
      /describes a tensor/,
    );
    // A fit over batch or seq stops below the size bound.
    const spec = checkSpec({ model: wide, batch: 1 });
    const maxBatch = spec.ok ? fitLimit(spec.spec, 'batch') : 0;
    expect(issues({ model: wide, batch: maxBatch })).toEqual([]);
    expect(issues({ model: wide, batch: maxBatch + 1 }).join()).toMatch(/describes a tensor/);
  });

  it('refuses a sweep whose runs together are too much work', () => {
    const values = Array.from({ length: 256 }, (_, i) => 1000 + i);
    expect(() => checkSweep({ model: { kind: 'mlp', depth: 6 } }, 'iterations', values)).toThrow(/sweep: too much work/);
    expect(() => checkSweep({}, 'iterations', [1, 2, 3])).not.toThrow();
    const gen = { model: { kind: 'gpt', vocab: 100, seq: 2048, dim: 64, depth: 64, heads: 4 }, mode: 'generate', prompt: 8 };
    expect(() =>
      checkSweep(
        gen,
        'new_tokens',
        Array.from({ length: 20 }, () => 1000),
      ),
    ).toThrow(/sweep: too much work: 1280000 layer passes/);
    expect(() => checkSweep(gen, 'new_tokens', [256, 512, 1024])).not.toThrow();
  });

  it('CLI: `vramlab run` refuses it in milliseconds (was 31 s, 1.7 GB, 817 MB)', async () => {
    const f = path.join(dir, 'big.json');
    writeFileSync(f, JSON.stringify({ iterations: 100_000 }));
    const io = captureIO();
    const t0 = Date.now();
    expect(await main(['run', f], io)).toBe(2);
    expect(io.stderr()).toMatch(/iterations/);
    expect(Date.now() - t0).toBeLessThan(2000);
  });

  it('host (IPC and WebSocket): run.start answers a typed error and the host keeps serving', async () => {
    const host = createHost(native, { home: path.join(dir, 'host') });
    for (const transport of ['ipc', 'websocket'] as const) {
      const res = await host.handle({ id: 1, method: 'run.start', params: { spec: { iterations: 100_000 } } }, transport);
      expect(res.ok).toBe(false);
      expect(!res.ok && res.error.message).toMatch(/iterations/);
    }
    expect((await host.handle({ id: 2, method: 'runs.list' }, 'ipc')).ok).toBe(true);
    host.dispose();
  });

  it('the largest allowed run keeps a bounded timeline with exact peaks', async () => {
    const store = await RunStore.open(path.join(dir, 'store'));
    const manager = new RunManager(native, store);
    const heap0 = process.memoryUsage().heapUsed;
    const run = await manager.start(
      parseSpec({ iterations: MAX_ITERATIONS, model: { kind: 'mlp', in: 64, hidden: 64, out: 8, depth: 6 }, batch: 8 }),
    );
    const meta = await run.done;
    expect(meta.status).toBe('done');
    const rec = await store.get(run.runId);
    const raw = meta.summary!.samples;
    const bound = 2 * LEVEL_SAMPLES * (1 + Math.ceil(Math.log2(raw / LEVEL_SAMPLES)));
    expect(raw).toBeGreaterThan(500_000);
    expect(rec.timeline.length).toBeLessThanOrEqual(bound); // ~54k of ~750k
    expect(Math.max(...rec.timeline.map((s) => s.allocated))).toBe(meta.summary!.peak_allocated);
    expect(Math.max(...rec.timeline.map((s) => s.reserved))).toBe(meta.summary!.peak_reserved);
    for (let i = 1; i < rec.timeline.length; i++) expect(rec.timeline[i].t).toBeGreaterThanOrEqual(rec.timeline[i - 1].t);
    expect(rec.events.length).toBeLessThan(meta.summary!.events);
    // The summary stays small too (was 40,003 readings and 70,002 phase peaks, 7.6 MB meta.json).
    expect(Object.keys(meta.summary!.readings).length).toBeLessThan(100);
    expect(meta.summary!.peaks.length).toBeLessThan(200);
    expect(JSON.stringify(meta).length).toBeLessThan(100_000);
    expect(process.memoryUsage().heapUsed - heap0).toBeLessThan(400e6);
  });
});

describe('decimation keeps every peak exactly', () => {
  it('a million samples: bounded count, the max of every window survives', () => {
    const d = new SampleDecimator(1024);
    let seed = 7;
    const rnd = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    const kept: MemorySample[] = [];
    let maxA = 0;
    let maxR = 0;
    for (let b = 0; b < 1000; b++) {
      const batch: MemorySample[] = [];
      for (let i = 0; i < 1000; i++) {
        const t = b * 1000 + i;
        const s = {
          t,
          allocated: Math.floor(rnd() * 1e9),
          reserved: Math.floor(rnd() * 2e9),
          active: 0,
          requested: 0,
          by: [],
        } as MemorySample;
        maxA = Math.max(maxA, s.allocated);
        maxR = Math.max(maxR, s.reserved);
        batch.push(s);
      }
      kept.push(...d.push(batch));
    }
    kept.push(...d.flush());
    expect(kept.length).toBeLessThanOrEqual(2 * 1024 * (1 + Math.ceil(Math.log2(1e6 / 1024))));
    expect(Math.max(...kept.map((s) => s.allocated))).toBe(maxA);
    expect(Math.max(...kept.map((s) => s.reserved))).toBe(maxR);
    // the stored timeline ends where the run did, though the last sample is no bucket's peak
    expect(kept[kept.length - 1].t).toBe(999_999);
  });

  it("keeps the run's last sample when it is no bucket's peak, once", () => {
    const sample = (t: number, allocated: number) =>
      ({ t, allocated, reserved: allocated, active: 0, requested: 0, by: [] }) as MemorySample;
    const d = new SampleDecimator(2); // buckets of 1, then 2, then 4: the last bucket stays open
    const kept = [...d.push([10, 50, 20, 40, 30, 5, 60, 1].map((a, t) => sample(t, a))), ...d.flush()];
    expect(kept[kept.length - 1]).toEqual(sample(7, 1));
    expect(kept.filter((s) => s.t === 7)).toHaveLength(1);
    expect(Math.max(...kept.map((s) => s.allocated))).toBe(60);
  });
});

describe('sizes that would overflow are refused', () => {
  it('spec: sim:custom sizes of 0, NaN-like or beyond 1 PiB', () => {
    for (const device of ['sim:custom:0', 'sim:custom:.', 'sim:custom:99999999TiB', 'sim:custom:18446744073709551616'])
      expect(issues({ device }).join()).toMatch(/sim:custom size/);
    expect(issues({ device: 'sim:custom:24GiB' })).toEqual([]);
  });
});

describe('the allocator and the host check size arithmetic', () => {
  it('addon: a 2^64-1 byte malloc is an OOM (was: a block handed out); bad capacities are refused', () => {
    const Allocator = native.Allocator as unknown as new (...args: unknown[]) => { malloc(n: bigint): unknown };
    const a = new Allocator('sim:h100-80gb');
    expect(() => a.malloc(2n ** 64n - 1n)).toThrow(/out of memory/i);
    expect(() => a.malloc(2n ** 64n - 512n)).toThrow(/Tried to allocate (?!0 bytes)/);
    for (const capacity of [NaN, -1, Infinity, 1.5])
      expect(() => new Allocator('sim:h100-80gb', '', { capacity })).toThrow(/whole number of bytes/);
  });

  it('host: snapshot what-if capacities below 1 MiB, NaN-like or above 1 PiB are refused', async () => {
    const host = createHost(native, { home: path.join(dir, 'host5') });
    const data = (await import('node:fs')).readFileSync(path.resolve(__dirname, '../fixtures/torch/mlp_adam.pickle'));
    const up = await host.handle(
      { id: 1, method: 'snapshot.upload', params: { uploadId: 'u', index: 0, total: 1, chunk: data.toString('base64'), name: 'm.pickle' } },
      'ipc',
    );
    expect(up.ok).toBe(true);
    const id = (up as { result: { snapshot: { id: string } } }).result.snapshot.id;
    for (const capacity of ['0.5B', '0.0001KiB', '2048TiB']) {
      const res = await host.handle({ id: 2, method: 'snapshot.whatIf', params: { id, allocConf: '', capacity } }, 'websocket');
      expect(res.ok).toBe(false);
      expect(!res.ok && res.error.message).toMatch(/capacity must be from 1 MiB to 1 PiB/);
    }
    host.dispose();
  });
});
