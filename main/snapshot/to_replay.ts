// A snapshot's trace as the op arrays the native replay takes (native/allocator/replay.h):
// alloc at each 'alloc' event with the size the caller requested (PyTorch records
// orig_size), free at each 'free_completed' (when the block really returned to the
// allocator; free_requested only marks a record_stream wait), and one empty_cache per
// burst of segment_free/segment_unmap events that the user's empty_cache() caused.
// Bursts the allocator made itself (cudaMalloc retry after OOM, garbage collection) are
// not replayed: the replayed allocator makes its own under the chosen capacity.
// A recorded 'oom' event is the allocation PyTorch tried and gave up on: it becomes an
// OOM-attempt op, tried again under the replay's settings and cap.
// A trace that began late starts from the exact allocator state at its first event
// (window_start.ts), handed to the native allocator as a seed.
import type { NativeReplaySeed } from '../addon/types';
import { segmentAllocAddresses } from './compact_trace';
import { foldTrace } from './fold';
import type { Frames, Snapshot, TraceEvent } from './model';
import { windowStart, type WindowStart } from './window_start';

export const REPLAY_ALLOC = 0;
export const REPLAY_FREE = 1;
export const REPLAY_EMPTY_CACHE = 2;
export const REPLAY_OOM_ATTEMPT = 3;

/** The allocator state at the trace's start, as the addon's replayAllocator takes it. */
export type ReplaySeed = NativeReplaySeed;

export interface ReplayTrace {
  device: number;
  count: number;
  ops: Uint8Array;
  /** Bytes requested (alloc ops; 0 otherwise). */
  sizes: BigUint64Array;
  /** Allocation id: the alloc op's id again on its free. 0 on empty_cache ops. */
  ids: Uint32Array;
  /** Dense stream index (0 = the default stream); see streamValues. */
  streams: Uint32Array;
  /** Trace event each op came from; -1 for allocations alive before the trace began. */
  eventIndex: Int32Array;
  /** Original stream handle for each dense index. */
  streamValues: number[];
  /** Allocations alive at the trace's start (seeded, or re-created when no seed could be built). */
  initialAllocs: number;
  lateStart: boolean;
  /** The exact state at the trace's start; null when the trace starts empty or the state
   * holds expandable segments (then the live allocations are re-created, approximately). */
  seed: ReplaySeed | null;
  start: WindowStart;
  emptyCacheCalls: number;
  /** segment_free bursts judged allocator-internal (OOM retry, GC): not replayed. */
  internalReleases: number;
  /** free_completed events whose allocation is unknown (damaged trace): skipped. */
  unmatchedFrees: number;
  /** Indices of the trace's own 'oom' events (each replayed as an OOM-attempt op). */
  recordedOoms: number[];
  /**
   * Addresses the recorded cudaMallocs returned, in order (segments alive before a late
   * trace first): the simulated device hands them out again so best-fit ties break alike.
   */
  segmentAddresses: Float64Array;
}

const EMPTY_CACHE_FRAME = /emptyCache|empty_cache/;

/** How a burst of segment frees came about. */
export function classifyRelease(events: readonly TraceEvent[], start: number): { kind: 'empty_cache' | 'internal'; end: number } {
  let end = start;
  while (end < events.length && (events[end].action === 'segment_free' || events[end].action === 'segment_unmap')) end++;
  const framed = events.slice(start, end).filter((e) => e.frames.length > 0);
  if (framed.length) {
    // With stacks recorded, the caller says it: emptyCache in the stack, or the allocator's malloc.
    return { kind: framed.some((e) => hasFrame(e.frames, EMPTY_CACHE_FRAME)) ? 'empty_cache' : 'internal', end };
  }
  // Without stacks: an allocator-internal release frees cache to make room for the very
  // next segment, so a segment_alloc/map follows before any allocation is handed out.
  for (let i = end; i < events.length; i++) {
    const a = events[i].action;
    if (a === 'segment_alloc' || a === 'segment_map') return { kind: 'internal', end };
    if (a === 'alloc' || a === 'free_completed' || a === 'free_requested') break;
  }
  return { kind: 'empty_cache', end };
}

function hasFrame(frames: Frames, re: RegExp): boolean {
  return frames.some((f) => re.test(f.name));
}

export function snapshotToReplay(s: Snapshot, device: number): ReplayTrace {
  const events = s.deviceTraces[device] ?? [];
  const start = windowStart(s, device);
  const exact = !start.segments.some((g) => g.expandable);
  const liveAtStart = start.segments.flatMap((g) => g.blocks.filter((b) => b.state !== 'free').map((b) => ({ ...b, stream: g.stream })));
  // An alloc at a still-live address (a lost free) takes two ops.
  const cap = 2 * events.length + liveAtStart.length + 1;
  const ops = new Uint8Array(cap);
  const sizes = new BigUint64Array(cap);
  const ids = new Uint32Array(cap);
  const streams = new Uint32Array(cap);
  const eventIndex = new Int32Array(cap);
  const streamIdx = new Map<number, number>([[0, 0]]);
  const streamValues = [0];
  const stream = (v: number) => {
    let i = streamIdx.get(v);
    if (i === undefined) {
      i = streamValues.length;
      streamIdx.set(v, i);
      streamValues.push(v);
    }
    return i;
  };

  let n = 0;
  const push = (op: number, size: number, id: number, st: number, ev: number) => {
    ops[n] = op;
    sizes[n] = BigInt(size);
    ids[n] = id;
    streams[n] = st;
    eventIndex[n] = ev;
    n++;
  };

  // Replay ids are the fold's dense allocation ids plus one (0 means "no allocation").
  const seed: ReplaySeed | null = exact && start.segments.length ? buildSeed(start, stream) : null;
  const initialAllocs = liveAtStart.length;
  let emptyCacheCalls = 0;
  let internalReleases = 0;
  let unmatchedFrees = 0;
  let releaseEnd = -1; // a burst of segment frees is one decision; skip to its end
  const recordedOoms: number[] = [];
  foldTrace(
    s,
    device,
    {
      alloc(a, i) {
        // Without a seed, allocations alive at the start are made first, in address order.
        if (i >= 0 || !seed) push(REPLAY_ALLOC, a.size, a.id + 1, stream(a.stream), i);
      },
      free: (a, i, e) => push(REPLAY_FREE, 0, a.id + 1, stream(e.stream), i),
      unmatchedFree: () => void unmatchedFrees++,
      event(i, e) {
        if ((e.action === 'segment_free' || e.action === 'segment_unmap') && i >= releaseEnd) {
          const { kind, end } = classifyRelease(events, i);
          releaseEnd = end;
          if (kind === 'empty_cache') {
            push(REPLAY_EMPTY_CACHE, 0, 0, 0, i);
            emptyCacheCalls++;
          } else {
            internalReleases++;
          }
        } else if (e.action === 'oom') {
          recordedOoms.push(i);
          push(REPLAY_OOM_ATTEMPT, e.size, 0, stream(e.stream), i);
        }
      },
    },
    { start },
  );
  // Seeded segments sit at their addresses already; without a seed they are allocated first.
  const segmentAddresses = Float64Array.from([...(seed ? [] : start.segments.map((g) => g.address)), ...segmentAllocAddresses(events)]);
  return {
    device,
    count: n,
    segmentAddresses,
    ops: ops.subarray(0, n),
    sizes: sizes.subarray(0, n),
    ids: ids.subarray(0, n),
    streams: streams.subarray(0, n),
    eventIndex: eventIndex.subarray(0, n),
    streamValues,
    initialAllocs,
    lateStart: start.lateStart,
    seed,
    start,
    emptyCacheCalls,
    internalReleases,
    unmatchedFrees,
    recordedOoms,
  };
}

function buildSeed(start: WindowStart, stream: (v: number) => number): ReplaySeed {
  const nb = start.segments.reduce((n, g) => n + g.blocks.length, 0);
  const seed: ReplaySeed = {
    segAddress: new Float64Array(start.segments.length),
    segStream: new Float64Array(start.segments.length),
    segSmall: new Uint8Array(start.segments.length),
    segBlocks: new Uint32Array(start.segments.length),
    blockSize: new Float64Array(nb),
    blockRequested: new Float64Array(nb),
    blockId: new Uint32Array(nb),
  };
  // Live blocks are numbered in segment, then address order: the order foldTrace gives
  // the allocations alive at the start their ids.
  let k = 0;
  let id = 0;
  start.segments.forEach((g, i) => {
    seed.segAddress[i] = g.address;
    seed.segStream[i] = stream(g.stream);
    seed.segSmall[i] = g.pool === 'small' ? 1 : 0;
    seed.segBlocks[i] = g.blocks.length;
    for (const b of g.blocks) {
      seed.blockSize[k] = b.size;
      seed.blockRequested[k] = b.requestedSize;
      if (b.state !== 'free') seed.blockId[k] = ++id;
      k++;
    }
  });
  return seed;
}
