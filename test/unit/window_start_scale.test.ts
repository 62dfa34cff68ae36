// The state at a trace's start (window_start.ts) is rebuilt by undoing the trace backwards.
// Crafted late-start traces once made that walk quadratic (a filter over every block per
// segment_map, findIndex/splice per segment event): 40k segment_maps took 73 s, 200k
// segment_alloc + 200k segment_free 248 s, 1M segment_frees of earlier segments over 120 s.
// Each now finishes well inside the test timeout (the last at 300k events: quadratic, it
// would move 4.5e10 array slots). A seeded fuzz of
// random late-start traces holds the walk to a forward count of the same trace.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Snapshot, SnapshotSegment, TraceEvent } from '../../main/snapshot/model';
import { startTotals, windowStart, windowStartSliced } from '../../main/snapshot/window_start';

const MB = 1 << 20;
const BASE = 0x7f00_0000_0000;
const ev = (action: TraceEvent['action'], addr: number, size: number): TraceEvent => ({
  action,
  addr,
  size,
  stream: 0,
  timeUs: 0,
  frames: [],
});

function snapshot(segments: SnapshotSegment[], trace: TraceEvent[]): Snapshot {
  return { segments, deviceTraces: [trace], allocatorSettings: null, addressBase: 0n, other: new Map() };
}

function segment(address: number, totalSize: number, blocks: SnapshotSegment['blocks'], isExpandable = false): SnapshotSegment {
  return {
    device: 0,
    address,
    totalSize,
    allocatedSize: 0,
    activeSize: 0,
    requestedSize: 0,
    stream: 0,
    segmentType: 'large',
    segmentPoolId: [0, 0],
    isExpandable,
    frames: [],
    blocks,
  };
}

describe('crafted late-start traces', () => {
  it('the sliced walk (serve) lets the event loop turn and ends in the same state', async () => {
    // 40,000 segment_free of segments older than the trace: every undo adds a segment.
    const n = 40_000;
    const trace: TraceEvent[] = [];
    for (let k = 0; k < n; k++) trace.push(ev('segment_free', BASE + k * 2 * MB, 2 * MB));
    const s = snapshot([], trace);
    let turns = 0;
    const tick = setInterval(() => turns++, 0);
    const sliced = await windowStartSliced(s, 0, 1);
    clearInterval(tick);
    expect(turns).toBeGreaterThan(0); // timers ran while it walked: other clients are served
    expect(sliced).toEqual(windowStart(s, 0));
    expect(startTotals(sliced)).toMatchObject({ reserved: n * 2 * MB, allocations: 0 });
  });

  it('40,000 segment_maps on one expandable segment, each holding an allocation (was 73 s)', () => {
    const n = 40_000;
    const trace: TraceEvent[] = [];
    const blocks: SnapshotSegment['blocks'] = [];
    // Mapped before the trace: the first 2 MiB, with a live block.
    blocks.push({ address: BASE, size: 2 * MB, requestedSize: 2 * MB, state: 'active_allocated', frames: [] });
    for (let k = 1; k <= n; k++) {
      trace.push(ev('segment_map', BASE + k * 2 * MB, 2 * MB), ev('alloc', BASE + k * 2 * MB, 2 * MB));
      blocks.push({ address: BASE + k * 2 * MB, size: 2 * MB, requestedSize: 2 * MB, state: 'active_allocated', frames: [] });
    }
    const w = windowStart(snapshot([segment(BASE, (n + 1) * 2 * MB, blocks, true)], trace), 0);
    expect(w.problems).toEqual([]);
    expect(w.segments).toHaveLength(1);
    expect(startTotals(w)).toMatchObject({ reserved: 2 * MB, allocated: 2 * MB, allocations: 1 });
  });

  it('200,000 segment_allocs, then their 200,000 segment_frees (was 248 s)', () => {
    const n = 200_000;
    const trace: TraceEvent[] = [];
    for (let k = 0; k < n; k++) trace.push(ev('segment_alloc', BASE + k * 2 * MB, 2 * MB));
    for (let k = 0; k < n; k++) trace.push(ev('segment_free', BASE + k * 2 * MB, 2 * MB));
    const w = windowStart(snapshot([], trace), 0);
    expect(w.problems).toEqual([]);
    expect(w.lateStart).toBe(false);
    expect(w.segments).toEqual([]);
  });

  it('300,000 segment_frees of segments that were there before the trace (1M was over 120 s)', () => {
    const n = 300_000;
    const trace: TraceEvent[] = [];
    for (let k = 0; k < n; k++) trace.push(ev('segment_free', BASE + k * 2 * MB, 2 * MB));
    const w = windowStart(snapshot([], trace), 0);
    expect(w.problems).toEqual([]);
    expect(w.segments).toHaveLength(n);
    expect(w.segments[0].address).toBe(BASE);
    expect(w.segments[n - 1].address).toBe(BASE + (n - 1) * 2 * MB);
    expect(startTotals(w).reserved).toBe(n * 2 * MB);
  });
});

/**
 * A random consistent trace, simulated forward: segments (some expandable, grown and shrunk
 * by map/unmap) and first-fit allocations in them. Returns the final segments and the
 * trace; cutting its first K events must rebuild the state it had after K events.
 */
function randomTrace(ops: { kind: number; pick: number; size: number }[]) {
  type Blk = { address: number; size: number; live: boolean };
  type Seg = { address: number; size: number; expandable: boolean; blocks: Blk[] };
  const segs: Seg[] = [];
  const trace: TraceEvent[] = [];
  const reservedAfter: number[] = [];
  let next = BASE;
  let reserved = 0;
  const emit = (e: TraceEvent) => {
    trace.push(e);
    if (e.action === 'segment_alloc' || e.action === 'segment_map') reserved += e.size;
    if (e.action === 'segment_free' || e.action === 'segment_unmap') reserved -= e.size;
    reservedAfter.push(reserved);
  };
  const merge = (g: Seg) => {
    for (let i = 0; i + 1 < g.blocks.length;) {
      const a = g.blocks[i];
      const b = g.blocks[i + 1];
      if (!a.live && !b.live) {
        a.size += b.size;
        g.blocks.splice(i + 1, 1);
      } else i++;
    }
  };
  for (const op of ops) {
    const size = (1 + (op.size % 4)) * 2 * MB;
    if (op.kind === 0 || segs.length === 0) {
      const g: Seg = { address: next, size, expandable: op.pick % 2 === 0, blocks: [{ address: next, size, live: false }] };
      next += 64 * MB;
      segs.push(g);
      emit(ev(g.expandable ? 'segment_map' : 'segment_alloc', g.address, size));
      continue;
    }
    const g = segs[op.pick % segs.length];
    if (op.kind === 1) {
      // Allocate a whole free block (no split: the walk's rounding rules are tested elsewhere).
      const b = g.blocks.find((x) => !x.live);
      if (b) {
        b.live = true;
        emit(ev('alloc', b.address, b.size));
      }
    } else if (op.kind === 2) {
      const b = g.blocks.find((x) => x.live);
      if (b) {
        b.live = false;
        emit(ev('free_requested', b.address, b.size));
        emit(ev('free_completed', b.address, b.size));
        merge(g);
      }
    } else if (op.kind === 3 && g.expandable && g.size + size <= 64 * MB) {
      g.blocks.push({ address: g.address + g.size, size, live: false });
      emit(ev('segment_map', g.address + g.size, size));
      g.size += size;
      merge(g);
    } else if (op.kind === 4) {
      const last = g.blocks[g.blocks.length - 1];
      if (g.blocks.every((b) => !b.live)) {
        emit(ev(g.expandable ? 'segment_unmap' : 'segment_free', g.address, g.size));
        segs.splice(segs.indexOf(g), 1);
      } else if (g.expandable && !last.live && last.size < g.size) {
        emit(ev('segment_unmap', last.address, last.size));
        g.size -= last.size;
        g.blocks.pop();
      }
    }
  }
  const segments = segs.map((g) =>
    segment(
      g.address,
      g.size,
      g.blocks.map((b) => ({
        address: b.address,
        size: b.size,
        requestedSize: b.live ? b.size : 0,
        state: b.live ? 'active_allocated' : 'inactive',
        frames: [],
      })),
      g.expandable,
    ),
  );
  return { segments, trace, reservedAfter };
}

describe('fuzz: late-start traces', () => {
  it('500 random traces cut at random points: the rebuilt start holds what the trace had reserved there', () => {
    const op = fc.record({ kind: fc.integer({ min: 0, max: 4 }), pick: fc.nat(1000), size: fc.nat(1000) });
    fc.assert(
      fc.property(fc.array(op, { minLength: 1, maxLength: 120 }), fc.double({ min: 0, max: 1, noNaN: true }), (ops, at) => {
        const { segments, trace, reservedAfter } = randomTrace(ops);
        const k = Math.floor(at * trace.length);
        const w = windowStart(snapshot(segments, trace.slice(k)), 0);
        expect(w.problems).toEqual([]);
        expect(startTotals(w).reserved).toBe(k === 0 ? 0 : reservedAfter[k - 1]);
        // Blocks tile each rebuilt segment.
        for (const g of w.segments) {
          expect(g.blocks.reduce((n, b) => n + b.size, 0)).toBe(g.size);
          expect(g.blocks[0].address).toBe(g.address);
        }
      }),
      { seed: 23, numRuns: 500 },
    );
  });
});
