// Issue 15 items 4 and 5: unbounded work and sizes that overflow, refused at the spec
// boundary (main/contract/limits.ts) from every entry point, and a bounded store for the
// largest run that is allowed (main/runner/decimate.ts) with its peaks kept exactly.
// Before: `iterations: 100000` was accepted and ran 31 s at 1.7 GB RSS writing 817 MB.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { checkSpec } from '../../main/contract/spec';
import { MAX_LAYER_STEPS, MAX_ITERATIONS } from '../../main/contract/limits';
import { checkSweep } from '../../main/runner/sweep';
import { RunStore } from '../../main/store/store';
import { RunManager } from '../../main/runner/manager';
import { LEVEL_SAMPLES, SampleDecimator } from '../../main/runner/decimate';
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

describe('item 4: total work is bounded at the spec boundary', () => {
  it('refuses iterations: 100000 and products of in-range fields that run away', () => {
    expect(issues({ iterations: 100_000 }).join()).toMatch(/at most 10000/);
    expect(issues({ iterations: 9000, model: { kind: 'mlp', depth: 64 } }).join()).toMatch(/too much work/);
    expect(issues({ accum: 4096, model: { kind: 'residual', depth: 4096 } }).join()).toMatch(/too much work/);
    expect(issues({ iterations: MAX_ITERATIONS, model: { kind: 'mlp', depth: Math.floor(MAX_LAYER_STEPS / MAX_ITERATIONS) } })).toEqual([]);
  });

  it('refuses a sweep whose runs together are too much work', () => {
    const values = Array.from({ length: 256 }, (_, i) => 1000 + i);
    expect(() => checkSweep({ model: { kind: 'mlp', depth: 6 } }, 'iterations', values)).toThrow(/sweep: too much work/);
    expect(() => checkSweep({}, 'iterations', [1, 2, 3])).not.toThrow();
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
    const run = await manager.start({ iterations: MAX_ITERATIONS, model: { kind: 'mlp', in: 64, hidden: 64, out: 8, depth: 6 }, batch: 8 });
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

describe('item 4: decimation keeps every peak exactly', () => {
  it('a million samples: bounded count, the max of every window survives', () => {
    const d = new SampleDecimator(1024);
    let seed = 7;
    const rnd = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
    const kept: MemorySample[] = [];
    let maxA = 0;
    let maxR = 0;
    for (let b = 0; b < 1000; b++) {
      const batch: MemorySample[] = [];
      for (let i = 0; i < 1000; i++) {
        const t = b * 1000 + i;
        const s = { t, allocated: Math.floor(rnd() * 1e9), reserved: Math.floor(rnd() * 2e9), active: 0, requested: 0, by: [] } as MemorySample;
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
  });
});

describe('item 5: sizes that would overflow are refused', () => {
  it('spec: sim:custom sizes of 0, NaN-like or beyond 1 PiB', () => {
    for (const device of ['sim:custom:0', 'sim:custom:.', 'sim:custom:99999999TiB', 'sim:custom:18446744073709551616'])
      expect(issues({ device }).join()).toMatch(/sim:custom size/);
    expect(issues({ device: 'sim:custom:24GiB' })).toEqual([]);
  });
});

describe('item 5: the allocator and the host check size arithmetic', () => {
  it('addon: a 2^64-1 byte malloc is an OOM (was: a block handed out); bad capacities are refused', () => {
    const Allocator = native.Allocator as new (...args: unknown[]) => { malloc(n: bigint): unknown };
    const a = new Allocator('sim:h100-80gb');
    expect(() => a.malloc(2n ** 64n - 1n)).toThrow(/out of memory/i);
    expect(() => a.malloc(2n ** 64n - 512n)).toThrow(/Tried to allocate (?!0 bytes)/);
    for (const capacity of [NaN, -1, Infinity, 1.5])
      expect(() => new Allocator('sim:h100-80gb', '', { capacity })).toThrow(/whole number of bytes/);
  });

  it('host: snapshot what-if capacities below 1 MiB, NaN-like or above 1 PiB are refused', async () => {
    const host = createHost(native, { home: path.join(dir, 'host5') });
    const data = (await import('node:fs')).readFileSync(path.resolve(__dirname, '../fixtures/torch/mlp_adam.pickle'));
    const up = await host.handle({ id: 1, method: 'snapshot.upload', params: { uploadId: 'u', index: 0, total: 1, chunk: data.toString('base64'), name: 'm.pickle' } }, 'ipc');
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
