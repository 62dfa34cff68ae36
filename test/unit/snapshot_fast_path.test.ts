// The reader's fast path for trace events (main/snapshot/pickle/trace_fast.ts) decodes
// PyTorch's event dicts straight into the typed arrays. Every figure a view shows must be
// the same as through the general path (dicts decoded, then converted), and what the
// general path refuses it must still refuse.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadSnapshotBuffer, loadSnapshotFile } from '../../main/snapshot/import';
import type { LoadProgress } from '../../main/snapshot/stream_load';
import { writePickle } from '../../main/snapshot/pickle/writer';
import type { PickleValue } from '../../main/snapshot/pickle/values';
import type { Frames, Snapshot } from '../../main/snapshot/model';
import { hasNativeReplay, replayer } from '../../main/snapshot/replay';
import { traceStats } from '../../main/snapshot/stats';
import { snapshotToReplay } from '../../main/snapshot/to_replay';
import { windowStart } from '../../main/snapshot/window_start';

const ROOT = path.resolve(__dirname, '../..');
const ADDON = path.join(ROOT, 'build/Release/vramlab.node');
const FIX = path.join(ROOT, 'test/fixtures/torch');
const dir = mkdtempSync(path.join(tmpdir(), 'vramlab-fast-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Opens a file both ways; the last progress report of the default (fast) read. */
function both(file: string): { fast: Snapshot; general: Snapshot; last: LoadProgress } {
  let last: LoadProgress = { bytes: 0, total: 0, events: 0, fast: 0 };
  const fast = loadSnapshotFile(file, { onProgress: (p) => (last = p) });
  const general = loadSnapshotFile(file, { fastEvents: false });
  return { fast, general, last };
}

/** The trace with each stack as its index among the distinct stacks (compared once, deeply). */
function canon(s: Snapshot) {
  const stacks: Frames[] = [];
  const index = new Map<Frames, number>();
  const events = [...s.deviceTraces[0]].map((e) => {
    let k = index.get(e.frames);
    if (k === undefined) {
      k = stacks.length;
      stacks.push(e.frames);
      index.set(e.frames, k);
    }
    return { ...e, frames: k };
  });
  return { events, stacks };
}

function expectSameViews(a: Snapshot, b: Snapshot): void {
  expect(a.deviceTraces.map((t) => t.length)).toEqual(b.deviceTraces.map((t) => t.length));
  // The same events, and stacks interned alike (events with one stack share one Frames).
  const ca = canon(a);
  const cb = canon(b);
  expect(ca.events).toEqual(cb.events);
  expect(ca.stacks).toEqual(cb.stacks);
  expect(a.segments).toEqual(b.segments);
  expect(windowStart(a, 0)).toEqual(windowStart(b, 0));
  expect(traceStats(a, 0, { maxPoints: 400 })).toEqual(traceStats(b, 0, { maxPoints: 400 }));
  const ra = snapshotToReplay(a, 0);
  const rb = snapshotToReplay(b, 0);
  expect(ra.count).toBe(rb.count);
  expect(ra.ops).toEqual(rb.ops);
  expect(ra.sizes).toEqual(rb.sizes);
  expect(ra.ids).toEqual(rb.ids);
  expect(ra.eventIndex).toEqual(rb.eventIndex);
  expect(ra.seed).toEqual(rb.seed);
  expect([ra.emptyCacheCalls, ra.internalReleases, ra.unmatchedFrees]).toEqual([
    rb.emptyCacheCalls,
    rb.internalReleases,
    rb.unmatchedFrees,
  ]);
}

describe('trace events through the fast path', () => {
  it.skipIf(!existsSync(ADDON) || !hasNativeReplay())(
    'a generated 4,000-event snapshot: the same trace, statistics, timeline, start state and replay as the general path',
    () => {
      const file = path.join(dir, 'gen.pickle');
      const g = spawnSync(process.execPath, [path.join(ROOT, 'bench/snapshot/gen_snapshot.mjs'), '--events', '4000', '--out', file], {
        encoding: 'utf8',
        env: { ...process.env, VRAMLAB_ADDON: ADDON },
      });
      expect(g.status, g.stderr).toBe(0);
      const { fast, general, last } = both(file);
      // Nearly every event took the fast path (the first batch of 1000 goes the general way).
      expect(last.fast).toBeGreaterThan(0.7 * last.events);
      expectSameViews(fast, general);
      // The generated events carry PyTorch 2.11's compile_context and user_metadata.
      expect(fast.deviceTraces[0][5000]).toMatchObject({ compileContext: 'N/A', userMetadata: '' });
      const a = replayer(fast, 0).run();
      const b = replayer(general, 0).run();
      expect(a).toEqual(b);
      expect(a.peakReserved).toBe(traceStats(fast, 0).peakReserved.bytes);
    },
    120_000, // a few seconds on an idle machine; generous for a loaded one
  );

  for (const name of ['gpt_late_start', 'residual_oom_capped']) {
    it(`${name} (recorded by PyTorch): the same views through both paths, most events fast`, () => {
      const { fast, general, last } = both(path.join(FIX, `${name}.pickle`));
      expect(last.bytes).toBe(last.total);
      expect(last.fast).toBeGreaterThan(0.4 * last.events);
      expectSameViews(fast, general);
    });
  }

  const dict = (o: Record<string, PickleValue>) => new Map<string, PickleValue>(Object.entries(o));
  const stack = [dict({ name: 'f', filename: 'a.py', line: 3 }), dict({ name: 'g', filename: 'b.py', line: 9 })];
  const events = (n: number) =>
    Array.from({ length: n }, (_, i) =>
      dict({
        action: i % 2 ? 'free_completed' : 'alloc',
        addr: 4096 * (1 + (i >> 1)),
        size: 512,
        stream: 0,
        time_us: i,
        frames: [...stack],
      }),
    );

  it('stack lists alike but for a middle frame, or longer by one, each keep their own stack', () => {
    // The fast path knows a repeated list by its bytes (length, first and last words, then
    // all of them): lists equal at both ends must still be told apart.
    const frames = Array.from({ length: 40 }, (_, i) => dict({ name: `f${i}`, filename: 'm.py', line: i }));
    const x = dict({ name: 'x', filename: 'x.py', line: 1 });
    const y = dict({ name: 'y', filename: 'y.py', line: 2 });
    const variants = [frames, frames.map((f, i) => (i === 20 ? x : f)), frames.map((f, i) => (i === 20 ? y : f)), [...frames, x]];
    const trace = Array.from({ length: 4000 }, (_, i) =>
      dict({ action: 'alloc', addr: 4096 * (i + 1), size: 512, stream: 0, time_us: i, frames: [...variants[i % 4]] }),
    );
    const data = writePickle(dict({ segments: [], device_traces: [trace] }));
    let last: LoadProgress = { bytes: 0, total: 0, events: 0, fast: 0 };
    const fast = loadSnapshotBuffer(data, { onProgress: (p) => (last = p) });
    expect(last.fast).toBeGreaterThan(2000);
    expectSameViews(fast, loadSnapshotBuffer(data, { fastEvents: false }));
    const at = (i: number) => fast.deviceTraces[0][i].frames;
    expect([3000, 3001, 3002, 3003].map((i) => [at(i).length, at(i)[20].name])).toEqual([
      [40, 'f20'],
      [40, 'x'],
      [40, 'y'],
      [41, 'f20'],
    ]);
  });

  it('an event the fast path consumed cannot be referenced again (a "billion laughs" of events)', () => {
    const trace = events(3000);
    const root = dict({ segments: [], device_traces: [trace], later: [trace[2500], trace[2500]] });
    const data = writePickle(root);
    expect(() => loadSnapshotBuffer(data)).toThrow(/already consumed \(a trace event used twice\)/);
  });

  it('a malformed event late in a long trace is refused with its path, as the general path refuses it', () => {
    const trace = events(3000);
    trace[2700].set('size', -5);
    const data = writePickle(dict({ segments: [], device_traces: [trace] }));
    const msg = (o: { fastEvents?: boolean }) => {
      try {
        loadSnapshotBuffer(data, o);
      } catch (e) {
        return (e as Error).message;
      }
      return 'no error';
    };
    expect(msg({})).toMatch(/device_traces\[…\]\[2700\]\.size: expected a size \(>= 0\), got -5/);
    expect(msg({})).toBe(msg({ fastEvents: false }));
  });

  it('the heap budget still bounds a long trace read fast', () => {
    const data = writePickle(dict({ segments: [], device_traces: [events(20000)] }));
    expect(loadSnapshotBuffer(data).deviceTraces[0].length).toBe(20000);
    expect(() => loadSnapshotBuffer(data, { limits: { maxHeapBytes: 200_000 } })).toThrow(/JavaScript heap/);
    expect(() => loadSnapshotBuffer(data, { limits: { maxContainers: 15_000 } })).toThrow(/more than 15000 containers/);
  });
});
