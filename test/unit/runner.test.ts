// The runner end to end on the native worker thread, with the engine-free synthetic job
// (native/runner/synthetic_job.cpp): streaming, batching, cancel, OOM and errors, store
// writes, sweeps and fit. Needs the addon (VRAMLAB_ADDON or build/Release).
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadAddon } from '../../main/addon/load';
import type { NativeAddon, NativeJob, SyntheticJob } from '../../main/addon/types';
import { RunStore } from '../../main/store/store';
import { RunManager } from '../../main/runner/manager';
import { ProgressBatcher } from '../../main/runner/batcher';
import { runFit } from '../../main/runner/fit';
import { checkSweep, runSweep } from '../../main/runner/sweep';
import { parseSpec, SpecError } from '../../main/contract/spec';
import type { MemorySample, RunMeta, RunProgress } from '../../main/contract/runs';
import { segmentsAt } from '../../renderer/src/lib/segments';

let native: NativeAddon;
beforeAll(() => {
  native = loadAddon();
  if (typeof native.startRun !== 'function') throw new Error('the loaded addon has no startRun: build it with native/runner in');
});

const temps: string[] = [];
afterEach(() => {
  while (temps.length) rmSync(temps.pop()!, { recursive: true, force: true });
});

async function setup(batching = {}) {
  const home = mkdtempSync(path.join(os.tmpdir(), 'vramlab-runner-'));
  temps.push(home);
  const store = await RunStore.open(home);
  const progress: RunProgress[] = [];
  const done: RunMeta[] = [];
  const errors: { runId: string; message: string }[] = [];
  const manager = new RunManager(
    native,
    store,
    { progress: (p) => progress.push(p), done: (m) => done.push(m), error: (runId, message) => errors.push({ runId, message }) },
    batching,
  );
  return { store, manager, progress, done, errors };
}

const synthetic = (over: SyntheticJob = {}): NativeJob => ({ kind: 'synthetic', synthetic: { steps: 50, step_ms: 0, ...over } });

describe('runner (native worker thread, synthetic job)', () => {
  it('streams every sample into the store and summarizes the run', async () => {
    const { manager, store, done, progress } = await setup();
    const run = await manager.start(parseSpec({ batch: 8 }), { job: synthetic({ steps: 200, step_ms: 0.2 }) });
    const meta = await run.done;
    expect(meta.status).toBe('done');
    expect(done.map((m) => m.id)).toEqual([run.runId]);
    const rec = await store.get(run.runId);
    expect(rec.timeline).toHaveLength(200);
    expect(rec.events.filter((e) => e.type === 'phase')).toHaveLength(200 * 2 + 20 * 2);
    for (let i = 1; i < rec.timeline.length; i++) expect(rec.timeline[i].t).toBeGreaterThanOrEqual(rec.timeline[i - 1].t);
    const s = meta.summary!;
    expect(s.readings.steps).toBe(200);
    expect(s.peak_allocated).toBe(Math.max(...rec.timeline.map((x) => x.allocated)));
    expect(s.readings.peak).toBe(s.peak_allocated - s.baseline);
    expect(s.samples).toBe(200);
    const phases = new Set(s.peaks.map((p) => p.phase));
    expect(phases).toEqual(new Set(['forward', 'backward']));
    // 20 iterations: the first 16 one by one, the last 4 folded into one entry (limits).
    const backward = s.peaks.filter((p) => p.phase === 'backward');
    expect(backward).toHaveLength(17);
    expect(backward[16].iteration).toBeGreaterThanOrEqual(16);
    expect(s.parameters).toBe(0); // the synthetic job builds no model
    // Everything that reached the store also reached listeners (batched).
    const streamed = progress.reduce((n, p) => n + p.samples.length + p.dropped, 0);
    expect(streamed).toBe(200);
  });

  it('keeps the event loop free and sends at most one progress message per frame', async () => {
    const { manager, progress } = await setup();
    let ticks = 0;
    const timer = setInterval(() => ticks++, 1);
    const t0 = Date.now();
    const run = await manager.start(parseSpec({}), { job: synthetic({ steps: 600, step_ms: 1 }) }); // ~1 kHz samples
    const meta = await run.done;
    clearInterval(timer);
    const elapsed = Date.now() - t0;
    expect(meta.status).toBe('done');
    // A blocked loop would not tick at all while the run goes.
    expect(ticks).toBeGreaterThan(elapsed / 20);
    // 600 samples at 1 kHz arrive as a few dozen frames, not 600 messages.
    expect(progress.length).toBeLessThanOrEqual(Math.ceil(elapsed / 16) + 2);
    expect(progress.length).toBeGreaterThan(1);
    expect(progress.reduce((n, p) => n + p.samples.length + p.dropped, 0)).toBe(600);
    expect(progress.every((p) => p.runId === run.runId)).toBe(true);
  });

  it('announces done only after the last progress batch went through a congested consumer, with their count', async () => {
    const home = mkdtempSync(path.join(os.tmpdir(), 'vramlab-runner-'));
    temps.push(home);
    const store = await RunStore.open(home);
    const log: string[] = [];
    const progress: RunProgress[] = [];
    let room = 0;
    const manager = new RunManager(
      native,
      store,
      {
        progress: (p) => {
          progress.push(p);
          room--;
          log.push('progress');
        },
        done: (_m, batches) => log.push(`done ${batches}`),
        error: (_id, message) => log.push(`error ${message}`),
      },
      // A consumer that takes one message every 10 ms: the run ends long before it caught up.
      { intervalMs: 1, maxSamples: 8, maxEvents: 4, ready: () => room > 0 },
    );
    const freeing = setInterval(() => (room = 1), 10);
    const run = await manager.start(parseSpec({}), { job: synthetic({ steps: 300, step_ms: 0 }) });
    await run.done;
    clearInterval(freeing);
    expect(log[log.length - 1]).toBe(`done ${progress.length}`);
    expect(log.filter((l) => l.startsWith('done'))).toHaveLength(1);
    expect(progress.map((p) => p.seq)).toEqual(progress.map((_, i) => i));
    expect(progress.reduce((n, p) => n + p.samples.length + p.dropped, 0)).toBe(300);
  });

  it('cancels a running job promptly and records it as cancelled', async () => {
    const { manager, store, done } = await setup();
    const run = await manager.start(parseSpec({}), { job: synthetic({ steps: 10_000_000, step_ms: 1 }) });
    await new Promise((r) => setTimeout(r, 50));
    const t0 = Date.now();
    expect(manager.cancel(run.runId)).toBe(true);
    const meta = await run.done;
    const ms = Date.now() - t0;
    expect(meta.status).toBe('cancelled');
    expect(ms).toBeLessThan(1000); // native latency is asserted at 100 ms in runner_worker_test.cpp
    expect((await store.meta(run.runId)).status).toBe('cancelled');
    expect(done).toHaveLength(1);
    expect(manager.cancel(run.runId)).toBe(false);
    expect(manager.activeRuns()).toEqual([]);
  });

  it('reports an OOM as a result with a diagnosis', async () => {
    const { manager } = await setup();
    const run = await manager.start(parseSpec({ model: { kind: 'residual' }, batch: 64 }), { job: synthetic({ steps: 40, oom_at: 7 }) });
    const meta = await run.done;
    expect(meta.status).toBe('oom');
    const oom = meta.summary!.oom!;
    expect(oom.message).toMatch(/^CUDA out of memory/);
    expect(oom.requested).toBe(64 * 2 ** 20);
    expect(oom.phase).toBe('backward');
    expect(oom.dominant.category).toBe('workspace'); // the synthetic job's 32 MiB baseline
    expect(oom.by_category.parameters).toBe(8 * 2 ** 20);
    expect(oom.reserved_unallocated).toBe(oom.reserved - oom.allocated);
    // Remedies are simulated through the spec's engine run: a replaced (synthetic) job gets none.
    expect(oom.suggestions).toEqual([]);
  });

  it('turns a C++ failure into an error run and a run.error event', async () => {
    const { manager, errors } = await setup();
    const run = await manager.start(parseSpec({}), { job: synthetic({ throw_at: 3 }) });
    const meta = await run.done;
    expect(meta.status).toBe('error');
    expect(meta.summary!.error).toBe('synthetic failure at step 3');
    expect(errors).toEqual([{ runId: run.runId, message: 'synthetic failure at step 3' }]);
  });

  it('starts nothing for a bad spec or a job the native side refuses', async () => {
    const { manager, store } = await setup();
    expect(() => parseSpec({ batch: 0 })).toThrow(SpecError); // at the boundary: the manager takes validated specs
    await expect(manager.start(parseSpec({}), { job: { kind: 'bogus' } as unknown as NativeJob })).rejects.toThrow(/unknown job kind/);
    await expect(manager.start(parseSpec({}), { job: synthetic({ steps: -4 }) })).rejects.toThrow(/steps out of range/);
    await expect(
      manager.start(parseSpec({}), { job: { kind: 'synthetic', synthetic: { steps: 'x' } } as unknown as NativeJob }),
    ).rejects.toThrow(/job.synthetic.steps must be a (finite )?number/);
    expect(await store.list()).toEqual([]);
  });

  it('runs many jobs at once, each on its own thread', async () => {
    const { manager } = await setup();
    const runs = await Promise.all(
      [1, 2, 3, 4].map((n) => manager.start(parseSpec({ batch: n }), { job: synthetic({ steps: 30 * n, step_ms: 0.5 }) })),
    );
    const metas = await Promise.all(runs.map((r) => r.done));
    expect(metas.map((m) => [m.spec.batch, m.status, m.summary!.readings.steps])).toEqual([
      [1, 'done', 30],
      [2, 'done', 60],
      [3, 'done', 90],
      [4, 'done', 120],
    ]);
  });

  it('fit finds the largest batch that does not OOM, by doubling then bisection', async () => {
    const { manager, store } = await setup();
    const limit = 300; // the synthetic device "fits" batches up to 300
    const result = await runFit(
      manager,
      { batch: 16 },
      {
        parallel: 1,
        jobFor: (spec) => synthetic({ steps: 3, oom_at: spec.batch > limit ? 1 : -1 }),
        // What that device's job allocates: over the card above the limit (the allocated bound).
        allocatedFor: async (spec) => ({ peak_allocated: spec.batch > limit ? Number.MAX_SAFE_INTEGER : 0 }),
      },
    );
    expect(result.batch).toBe(limit);
    expect([result.bisected, result.bound, result.unexplored]).toEqual([limit, limit, []]);
    const card = manager.card('sim:h100-80gb');
    expect(result.capacity).toBe(card.total);
    expect([result.total, result.context]).toEqual([card.total, card.context]);
    const tried = result.probes.map((p) => p.batch);
    expect(tried.slice(0, 6)).toEqual([16, 32, 64, 128, 256, 512]);
    expect(new Set(tried).size).toBe(tried.length);
    expect(tried.length).toBeLessThan(18);
    // Then checked below, in steps of 300/16 down to the last doubling that fit (256): each fits.
    expect(result.checkedBelow).toEqual([281, 262]);
    expect(result.runsOutBelow).toEqual([]);
    for (const p of result.probes) expect(p.ok).toBe(p.batch <= limit);
    const stored = await store.list();
    expect(stored).toHaveLength(tried.length);
    expect(stored.every((m) => m.group?.kind === 'fit' && m.group.id === result.fitId)).toBe(true);
  });

  it('fit reports 0 when even batch 1 does not fit', async () => {
    const { manager } = await setup();
    const result = await runFit(
      manager,
      { batch: 4 },
      {
        parallel: 1,
        jobFor: () => synthetic({ steps: 2, oom_at: 0 }),
        allocatedFor: async () => ({ peak_allocated: Number.MAX_SAFE_INTEGER }),
      },
    );
    expect(result.batch).toBe(0);
    expect(result.probes.map((p) => p.batch)).toEqual([4, 2, 1]);
  });

  it('fit with three probes at once finds the same largest batch, running them together and reporting each', async () => {
    const { manager } = await setup();
    const limit = 300;
    const jobFor = (spec: { batch: number }) => synthetic({ steps: 3, oom_at: spec.batch > limit ? 1 : -1 });
    const allocatedFor = async (spec: { batch: number }) => ({ peak_allocated: spec.batch > limit ? Number.MAX_SAFE_INTEGER : 0 });
    const serial = await runFit(manager, { batch: 16 }, { parallel: 1, jobFor, allocatedFor });
    const seen: Array<[number, number, number]> = [];
    let running = 0;
    let most = 0;
    const wide = await runFit(
      manager,
      { batch: 16 },
      {
        parallel: 3,
        jobFor,
        allocatedFor,
        onRunStarted: (run) => {
          most = Math.max(most, ++running);
          void run.done.then(() => running--);
        },
        onProbe: (p, done, bound) => seen.push([p.value, done, bound]),
      },
    );
    expect(wide.batch).toBe(serial.batch);
    expect(wide.batch).toBe(limit);
    expect(most).toBeGreaterThan(1);
    expect(most).toBeLessThanOrEqual(3);
    for (const p of wide.probes) expect(p.ok).toBe(p.batch <= limit);
    // Rounds of three: 16, 32, 64 | 128, 256, 512 | then three points splitting the interval.
    expect(wide.probes.slice(0, 6).map((p) => p.batch)).toEqual([16, 32, 64, 128, 256, 512]);
    expect(seen.map(([, done]) => done)).toEqual(wide.probes.map((_, i) => i + 1));
    for (const [, done, bound] of seen) expect(bound).toBeGreaterThanOrEqual(done);
  });

  it('sweeps one parameter, a run per value, and validates every value first', async () => {
    const { manager, store } = await setup();
    expect(() => checkSweep({}, 'batch', [8, 0, 16])).toThrow(/value 2 \(0\): batch/);
    expect(() => checkSweep({}, 'colour', [1])).toThrow(/not one of/);
    expect(await store.list()).toEqual([]);
    const res = await runSweep(manager, checkSweep({ model: { kind: 'residual' } }, 'checkpoint', ['none', 'block', { every: 4 }]), {
      jobFor: (spec) => synthetic({ steps: 5, oom_at: spec.checkpoint === 'none' ? 2 : -1 }),
    });
    expect(res.runs.map((r) => [r.value, r.status])).toEqual([
      ['none', 'oom'],
      ['block', 'done'],
      [{ every: 4 }, 'done'],
    ]);
    const metas = await store.list();
    expect(metas.map((m) => m.spec.checkpoint).sort()).toEqual(['block', 'none', { every: 4 }].sort());
  });

  it("a sweep with runs at once lists them in the values' order, each reported as it ends", async () => {
    const { manager } = await setup();
    const values = [64, 8, 32, 16];
    const ended: number[] = [];
    // Larger batches take longer here, so runs end out of order.
    const res = await runSweep(manager, checkSweep({}, 'batch', values), {
      parallel: 3,
      jobFor: (spec) => synthetic({ steps: spec.batch, step_ms: 0.5 }),
      onRow: (row, _i, done, total) => {
        ended.push(row.value as number);
        expect(total).toBe(4);
        expect(done).toBe(ended.length);
      },
    });
    expect(res.runs.map((r) => [r.value, r.status])).toEqual(values.map((v) => [v, 'done']));
    expect([...ended].sort((a, b) => a - b)).toEqual([8, 16, 32, 64]);
  });
});

describe('progress batcher', () => {
  const s = (t: number, allocated = t): MemorySample => ({
    t,
    allocated,
    reserved: allocated,
    active: allocated,
    requested: allocated,
    by: [],
  });

  it('coalesces a burst into one message per frame', async () => {
    const sent: RunProgress[] = [];
    const b = new ProgressBatcher('r', (p) => sent.push(p), { intervalMs: 16 });
    for (let i = 0; i < 1000; i++) b.push([s(i)], []);
    expect(sent).toHaveLength(0); // nothing synchronous
    await new Promise((r) => setTimeout(r, 40));
    expect(sent).toHaveLength(1);
    expect(sent[0].samples.length + sent[0].dropped).toBe(1000);
    expect(sent[0].samples.length).toBeLessThanOrEqual(512);
  });

  it('holds messages while the consumer is congested, merging samples but keeping peaks and markers', async () => {
    const sent: RunProgress[] = [];
    let ready = false;
    const b = new ProgressBatcher('r', (p) => sent.push(p), { intervalMs: 5, maxSamples: 64, ready: () => ready });
    for (let i = 0; i < 5000; i++)
      b.push(
        [s(i, i === 3333 ? 10 ** 9 : i)],
        i % 100 === 0 ? [{ type: 'phase', t: i, edge: 'begin', name: 'forward', iteration: i / 100, micro_batch: 0, module: '' }] : [],
      );
    await new Promise((r) => setTimeout(r, 30));
    expect(sent).toHaveLength(0);
    ready = true;
    await new Promise((r) => setTimeout(r, 30));
    b.close();
    const samples = sent.flatMap((p) => p.samples);
    expect(samples.length).toBeLessThanOrEqual(64 * 5);
    expect(Math.max(...samples.map((x) => x.allocated))).toBe(10 ** 9);
    expect(samples[samples.length - 1].t).toBe(4999); // the run's end is never merged away
    expect(sent.reduce((n, p) => n + p.events.length, 0)).toBe(50);
    expect(samples.length + sent.reduce((n, p) => n + p.dropped, 0)).toBe(5000);
    for (let i = 1; i < samples.length; i++) expect(samples[i].t).toBeGreaterThan(samples[i - 1].t);
  });

  it('sends the end of a run under backpressure, numbered, and resolves close() only when all of it went', async () => {
    const sent: RunProgress[] = [];
    let ready = true;
    // A consumer that takes two messages per frame, like a socket whose buffer fills.
    let room = 2;
    const b = new ProgressBatcher(
      'r',
      (p) => {
        sent.push(p);
        if (--room <= 0) ready = false;
      },
      { intervalMs: 5, maxEvents: 10, ready: () => ready },
    );
    const events = Array.from({ length: 95 }, (_, i) => ({
      type: 'phase' as const,
      t: i,
      edge: 'begin' as const,
      name: 'module',
      iteration: 0,
      micro_batch: 0,
      module: `m${i}`,
    }));
    b.push([s(50), s(94.5)], events);
    const timer = setInterval(() => {
      room = 2;
      ready = true;
    }, 5);
    let closed = false;
    const done = b.close().then(() => (closed = true));
    expect(sent.length).toBe(2); // no more than the consumer had room for
    expect(closed).toBe(false);
    await done;
    clearInterval(timer);
    expect(sent.map((p) => p.seq)).toEqual(sent.map((_, i) => i));
    expect(b.sent).toBe(sent.length);
    expect(sent.flatMap((p) => p.events).map((e) => e.t)).toEqual(events.map((e) => e.t));
    expect(sent.flatMap((p) => p.samples).map((x) => x.t)).toEqual([50, 94.5]);
  });

  it('keeps the newest sample when merging, so a falling run still ends where it ended', async () => {
    const sent: RunProgress[] = [];
    let ready = false;
    const b = new ProgressBatcher('r', (p) => sent.push(p), { intervalMs: 5, maxSamples: 8, ready: () => ready });
    b.push(
      Array.from({ length: 100 }, (_, i) => s(i, 1000 - i)),
      [],
    );
    ready = true;
    await b.close();
    const samples = sent.flatMap((p) => p.samples);
    expect(samples[samples.length - 1].t).toBe(99);
    expect(samples[0].allocated).toBe(1000);
  });

  it('spreads many events over frames without losing any, keeping time order', () => {
    const sent: RunProgress[] = [];
    const b = new ProgressBatcher('r', (p) => sent.push(p), { maxEvents: 10 });
    const events = Array.from({ length: 35 }, (_, i) => ({
      type: 'phase' as const,
      t: i,
      edge: 'begin' as const,
      name: 'module',
      iteration: 0,
      micro_batch: 0,
      module: `m${i}`,
    }));
    b.push([s(5), s(15), s(34.5)], events);
    b.close();
    expect(sent.map((p) => p.events.length)).toEqual([10, 10, 10, 5]);
    expect(sent.map((p) => p.samples.map((x) => x.t))).toEqual([[5], [15], [], [34.5]]);
  });
});

describe('runner with the engine protocol job', () => {
  it('cancels a long protocol run within one op', async () => {
    const { manager, store } = await setup();
    const run = await manager.start(parseSpec({ model: { kind: 'residual', dim: 64, depth: 4 }, batch: 8, iterations: 10_000 }));
    await new Promise((r) => setTimeout(r, 100));
    const t0 = Date.now();
    manager.cancel(run.runId);
    const meta = await run.done;
    expect(meta.status).toBe('cancelled');
    expect(Date.now() - t0).toBeLessThan(1000);
    const rec = await store.get(run.runId);
    expect(rec.timeline.length).toBeGreaterThan(10);
    expect(rec.events.some((e) => e.type === 'phase' && e.name === 'optimizer_step')).toBe(true);
  });
});

describe('allocator history', () => {
  it('streams allocator events (history: true) that rebuild the final state, with categories named', async () => {
    const { manager, store } = await setup();
    const run = await manager.start(parseSpec({ history: true, optimizer: 'sgd', batch: 64 }));
    const meta = await run.done;
    expect(meta.status).toBe('done');
    const rec = await store.get(run.runId);
    const allocs = rec.events.filter((e) => e.type === 'alloc');
    expect(allocs.length).toBeGreaterThan(20);
    const live = new Map<number, number>();
    for (const e of allocs) {
      if (e.action === 'alloc') live.set(e.addr, e.size);
      if (e.action === 'free') expect(live.delete(e.addr)).toBe(true);
    }
    const last = rec.timeline[rec.timeline.length - 1];
    expect([...live.values()].reduce((a, b) => a + b, 0)).toBe(last.requested);
    const cats = new Set(allocs.filter((e) => e.action === 'alloc').map((e) => e.category));
    // History names the category an allocation was made under: backward makes every gradient
    // as an activation gradient (AccumulateGrad keeps some as .grad later, which the timeline's
    // split follows; the trace's alloc event is already written).
    for (const c of ['parameters', 'activation_gradients', 'activations', 'inputs', 'workspace']) expect(cats).toContain(c);
    // Each allocation names its op (the engine's context tag) and the allocator's block.
    const forwardOps = new Set<string>();
    let inForward = false;
    for (const e of rec.events) {
      if (e.type === 'phase' && e.name === 'forward') inForward = e.edge === 'begin';
      if (e.type !== 'alloc' || e.action !== 'alloc') continue;
      expect(e.op).toBeTruthy();
      expect(e.blockSize).toBeGreaterThanOrEqual(e.size);
      expect(e.blockSize! % 512).toBe(0);
      if (inForward) forwardOps.add(e.op!);
    }
    expect(forwardOps).toContain('addmm');
    // Replayed at block sizes, the trace is the allocator: bytes allocated and reserved agree.
    const map = segmentsAt(allocs, Infinity);
    expect(map.allocated).toBe(last.allocated);
    expect(map.reserved).toBe(last.reserved);
    // Without history, no allocator events.
    const plain = await manager.start(parseSpec({ optimizer: 'sgd', batch: 64 }));
    await plain.done;
    expect((await store.get(plain.runId)).events.every((e) => e.type === 'phase')).toBe(true);
  });
});

describe('host methods (run.start ... fit.start)', () => {
  it('runs, lists, exports, renames, compares and deletes through Host.handle', async () => {
    const { createHost } = await import('../../main/host/create');
    const home = mkdtempSync(path.join(os.tmpdir(), 'vramlab-host-'));
    temps.push(home);
    const host = createHost(native, { home });
    const events: { event: string; data: any }[] = [];
    host.events.on('event', (m) => events.push(m));
    const call = async (method: string, params?: unknown) => {
      const res = await host.handle({ id: 1, method, params }, 'ipc');
      if (!res.ok) throw new Error(`${method}: ${res.error.code}: ${res.error.message}`);
      return res.result as any;
    };
    const waitDone = (runId: string) =>
      new Promise<any>((resolve) => {
        const check = () => {
          const d = events.find((e) => (e.event === 'run.done' || e.event === 'run.error') && e.data.runId === runId);
          if (d) resolve(d);
          else setTimeout(check, 5);
        };
        check();
      });

    const { runId } = await call('run.start', { spec: { optimizer: 'sgd' }, name: 'first' });
    const done = await waitDone(runId);
    expect(done.event).toBe('run.done');
    expect(done.data.meta.summary.readings.params).toBe(25264640);
    const progress = events.filter((e) => e.event === 'run.progress' && e.data.runId === runId);
    expect(progress.length).toBeGreaterThan(0);
    expect(progress.flatMap((p) => p.data.samples).length).toBeGreaterThan(10);

    const second = (await call('run.start', { spec: { optimizer: 'adam' } })).runId;
    await waitDone(second);
    const list = await call('runs.list');
    expect(list.map((m: any) => m.id).sort()).toEqual([runId, second].sort());
    const rec = await call('runs.get', { id: runId });
    expect(rec.timeline.length).toBe(rec.meta.summary.samples);

    const csv = await call('runs.exportCsv', { id: runId });
    expect(csv.mime).toBe('text/csv');
    expect(csv.content.split('\r\n')[0]).toMatch(/^time_ms,phase,iteration,micro_batch,allocated_bytes/);
    const summary = await call('runs.exportCsv', { ids: [runId, second] });
    expect(summary.content.split('\r\n').filter(Boolean)).toHaveLength(3);
    const json = JSON.parse((await call('runs.exportJson', { id: runId })).content);
    expect(json.meta.id).toBe(runId);
    const cmp = await call('runs.compare', { ids: [runId, second] });
    expect(cmp[1].readings.it0_peak_step - cmp[0].readings.it0_peak_step).toBeGreaterThan(0); // Adam's state

    expect((await call('runs.rename', { id: runId, name: 'renamed' })).name).toBe('renamed');
    expect(await call('runs.delete', { id: second })).toEqual({ deleted: true });
    expect((await call('runs.list')).map((m: any) => m.id)).toEqual([runId]);
    expect(await call('run.cancel', { runId })).toEqual({ cancelled: false });

    const sweep = await call('sweep.start', { spec: { model: { kind: 'residual', dim: 128, depth: 4 } }, param: 'batch', values: [4, 8] });
    expect(sweep.runs.map((r: any) => [r.value, r.status])).toEqual([
      [4, 'done'],
      [8, 'done'],
    ]);
    expect(sweep.runs[1].peak_allocated).toBeGreaterThan(sweep.runs[0].peak_allocated);
    const fit = await call('fit.start', { spec: { batch: 64, capacity: '256MiB', device: 'sim:l4-24gb' }, maxBatch: 4096 });
    expect(fit.batch).toBeGreaterThan(0);
    expect(fit.capacity).toBe(256 * 2 ** 20);
    expect(fit.probes.find((p: any) => p.batch === fit.batch).ok).toBe(true);
    expect(fit.probes.find((p: any) => p.batch === fit.batch + 1)?.ok ?? false).toBe(false);
  }, 60_000);
});

describe('runner robustness', () => {
  it('survives listeners that throw: the run still finishes and is stored', async () => {
    const home = mkdtempSync(path.join(os.tmpdir(), 'vramlab-throw-'));
    temps.push(home);
    const store = await RunStore.open(home);
    const boom = () => {
      throw new Error('listener bug');
    };
    const manager = new RunManager(native, store, { progress: boom, done: boom, error: boom });
    const warned = new Promise((resolve) => process.once('warning', resolve));
    const run = await manager.start(parseSpec({}), { job: synthetic({ steps: 20, step_ms: 1 }), onBatch: () => undefined });
    const meta = await run.done;
    expect(meta.status).toBe('done');
    expect(await warned).toBeInstanceOf(Error);
    expect((await store.get(run.runId)).timeline).toHaveLength(20);
  });
});
