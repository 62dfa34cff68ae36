// The one walk over a snapshot's trace that every view builds on (trace statistics, the
// timeline, "where the memory was", the replay input): it starts from the exact state at
// the trace's start (window_start.ts), pairs every free with its allocation, keeps the
// allocated (requested bytes) and reserved totals, and calls the visitor's hooks. Each
// allocation gets a dense id, those alive at the start first, so callers can index arrays
// by it instead of keeping their own maps.
import { eventReader } from './compact_trace';
import { initialStateOf, type InitialState } from './import';
import type { Frames, Snapshot, TraceEvent } from './model';
import { windowStart, type WindowStart } from './window_start';

export interface Allocation {
  id: number;
  address: number;
  /** Bytes the caller requested. */
  size: number;
  stream: number;
  /** Trace event that made it; -1: alive before the trace began. */
  allocIndex: number;
  frames: Frames;
  freeRequested: boolean;
}

export interface FoldTotals {
  /** Sum of requested bytes of live allocations (MemoryViz's "active" memory). */
  allocated: number;
  /** Sum of live segment bytes: exactly PyTorch's memory_reserved(). */
  reserved: number;
}

export interface TraceVisitor {
  /** An allocation made by event i (or, with i = -1, alive at the start). */
  alloc?(a: Allocation, i: number, e: TraceEvent | null): void;
  /** Allocation a returned to the allocator at event i (free_completed, or a lost free). */
  free?(a: Allocation, i: number, e: TraceEvent): void;
  /** A free_completed whose allocation the trace never saw (a damaged trace). */
  unmatchedFree?(i: number, e: TraceEvent): void;
  /** After event i is applied. Return false to stop the walk. */
  event?(i: number, e: TraceEvent, totals: Readonly<FoldTotals>): boolean | void;
}

export interface FoldResult extends FoldTotals {
  start: WindowStart;
  initial: InitialState;
  /** The totals before the first event. */
  initialTotals: FoldTotals;
  /** Allocations alive when the walk ended, by address. */
  live: Map<number, Allocation>;
  /** Ids handed out (allocations seen, those alive at the start included). */
  allocations: number;
}

export interface FoldOptions {
  /** Reuse a start state already computed for this snapshot and device. */
  start?: WindowStart;
  /** Stop after this event index (inclusive). */
  until?: number;
}

export function foldTrace(s: Snapshot, device: number, visitor: TraceVisitor = {}, options: FoldOptions = {}): FoldResult {
  const start = options.start ?? windowStart(s, device);
  const initial = initialStateOf(start);
  const events = s.deviceTraces[device] ?? [];
  const live = new Map<number, Allocation>();
  let nextId = 0;
  const totals: FoldTotals = { allocated: 0, reserved: 0 };
  for (const g of initial.segments) totals.reserved += g.size;
  for (const b of initial.blocks) {
    const a: Allocation = {
      id: nextId++,
      address: b.address,
      size: b.requestedSize,
      stream: b.stream,
      allocIndex: -1,
      frames: b.frames,
      freeRequested: b.freeRequested,
    };
    live.set(a.address, a);
    totals.allocated += a.size;
    visitor.alloc?.(a, -1, null);
  }
  const initialTotals = { ...totals };
  const last = Math.min(events.length - 1, options.until ?? Infinity);
  const at = eventReader(events);
  for (let i = 0; i <= last; i++) {
    const e = at(i);
    switch (e.action) {
      case 'alloc': {
        const lost = live.get(e.addr);
        if (lost) {
          // A damaged trace lost this address's free: close the old allocation first.
          totals.allocated -= lost.size;
          visitor.free?.(lost, i, e);
        }
        const a: Allocation = {
          id: nextId++,
          address: e.addr,
          size: e.size,
          stream: e.stream,
          allocIndex: i,
          frames: e.frames,
          freeRequested: false,
        };
        live.set(e.addr, a);
        totals.allocated += e.size;
        visitor.alloc?.(a, i, e);
        break;
      }
      case 'free_requested': {
        const a = live.get(e.addr);
        if (a) a.freeRequested = true;
        break;
      }
      case 'free_completed': {
        const a = live.get(e.addr);
        if (!a) {
          visitor.unmatchedFree?.(i, e);
          break;
        }
        live.delete(e.addr);
        totals.allocated -= a.size;
        visitor.free?.(a, i, e);
        break;
      }
      case 'segment_alloc':
      case 'segment_map':
        totals.reserved += e.size;
        break;
      case 'segment_free':
      case 'segment_unmap':
        totals.reserved -= e.size;
        break;
      default:
        break;
    }
    if (visitor.event?.(i, e, totals) === false) break;
  }
  return { ...totals, start, initial, initialTotals, live, allocations: nextId };
}

/** Live allocations just after event `index` (-1: at the trace's start). */
export function liveAt(s: Snapshot, device: number, index: number, start?: WindowStart): Allocation[] {
  const r = foldTrace(s, device, {}, { until: index, ...(start ? { start } : {}) });
  return [...r.live.values()];
}
