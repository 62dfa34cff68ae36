// What a snapshot's trace says on its own, before any replay: memory over time, peaks,
// the largest allocations and the recorded OOMs. "allocated" here is the sum of the sizes
// callers requested for live allocations (what MemoryViz's Active Memory Timeline plots);
// PyTorch's memory_allocated() counts rounded block sizes and so reads a little higher.
// "reserved" is the sum of live segments, exactly what PyTorch's memory_reserved() reports.
import { topFrames } from './frames';
import { rebuildInitialState } from './import';
import { TRACE_ACTIONS, type Frames, type Snapshot, type TraceAction } from './model';

export interface Peak {
  bytes: number;
  /** Trace event index at which the peak was first reached (-1: before the first event). */
  eventIndex: number;
}

export interface LargeAllocation {
  size: number;
  allocIndex: number; // -1: allocated before the trace began
  freeIndex: number | null; // null: still alive at the end
  frames: string[];
}

export interface RecordedOom {
  eventIndex: number;
  size: number;
  deviceFree: number;
  frames: string[];
}

export interface TimelineSeries {
  /** First trace event index of each point's bucket. */
  eventIndex: number[];
  /** Highest value within each bucket (so no peak is lost to downsampling). */
  allocated: number[];
  reserved: number[];
  timeUs: number[];
}

export interface TraceStats {
  device: number;
  events: number;
  counts: Record<TraceAction, number>;
  lateStart: boolean;
  initial: { allocated: number; reserved: number };
  final: { allocated: number; reserved: number };
  peakAllocated: Peak;
  peakReserved: Peak;
  /** Reserved minus allocated when reserved peaked (just after the allocation that caused it). */
  unallocatedAtPeakReserved: number;
  largest: LargeAllocation[];
  ooms: RecordedOom[];
  timeline: TimelineSeries;
}

export interface StatsOptions {
  /** How many of the largest allocations to list (default 10). */
  top?: number;
  /** Most points in the timeline series (default 2000). */
  maxPoints?: number;
}

export function traceStats(s: Snapshot, device: number, options: StatsOptions = {}): TraceStats {
  const top = options.top ?? 10;
  const maxPoints = Math.max(1, options.maxPoints ?? 2000);
  const events = s.deviceTraces[device] ?? [];
  const init = rebuildInitialState(s, device);

  const counts = Object.fromEntries(TRACE_ACTIONS.map((a) => [a, 0])) as Record<TraceAction, number>;
  let allocated = init.blocks.reduce((n, b) => n + b.requestedSize, 0);
  let reserved = init.segments.reduce((n, g) => n + g.size, 0);
  const initial = { allocated, reserved };
  const peakAllocated: Peak = { bytes: allocated, eventIndex: -1 };
  const peakReserved: Peak = { bytes: reserved, eventIndex: -1 };
  let unallocatedAtPeakReserved = reserved - allocated;

  type Live = { size: number; allocIndex: number; frames: Frames };
  const live = new Map<number, Live>();
  for (const b of init.blocks) live.set(b.address, { size: b.requestedSize, allocIndex: -1, frames: b.frames });
  const done: LargeAllocation[] = [];
  const consider = (a: Live, freeIndex: number | null) => {
    // Keep only a bounded candidate list; trimmed to `top` at the end.
    if (done.length >= top * 4) {
      done.sort((x, y) => y.size - x.size);
      done.length = top;
    }
    done.push({ size: a.size, allocIndex: a.allocIndex, freeIndex, frames: topFrames(a.frames) });
  };

  const ooms: RecordedOom[] = [];
  const bucket = Math.max(1, Math.ceil(events.length / maxPoints));
  const timeline: TimelineSeries = { eventIndex: [], allocated: [], reserved: [], timeUs: [] };

  // The gap at peak is taken right after the allocation that drove reserved to its peak.
  let pending = false;
  for (let i = 0; i < events.length; i++) {
    const e = events[i];
    counts[e.action]++;
    if (e.action !== 'alloc' && e.action !== 'segment_alloc' && e.action !== 'segment_map') pending = false;
    switch (e.action) {
      case 'alloc':
        allocated += e.size;
        live.set(e.addr, { size: e.size, allocIndex: i, frames: e.frames });
        if (pending) unallocatedAtPeakReserved = reserved - allocated;
        pending = false;
        break;
      case 'free_completed': {
        const a = live.get(e.addr);
        allocated -= a ? a.size : e.size;
        if (a) {
          consider(a, i);
          live.delete(e.addr);
        }
        break;
      }
      case 'segment_alloc':
      case 'segment_map':
        reserved += e.size;
        break;
      case 'segment_free':
      case 'segment_unmap':
        reserved -= e.size;
        break;
      case 'oom':
        ooms.push({ eventIndex: i, size: e.size, deviceFree: e.deviceFree ?? 0, frames: topFrames(e.frames) });
        break;
      default:
        break;
    }
    if (allocated > peakAllocated.bytes) {
      peakAllocated.bytes = allocated;
      peakAllocated.eventIndex = i;
    }
    if (reserved > peakReserved.bytes) {
      peakReserved.bytes = reserved;
      peakReserved.eventIndex = i;
      unallocatedAtPeakReserved = reserved - allocated;
      pending = true;
    }
    const p = Math.floor(i / bucket);
    if (p === timeline.eventIndex.length) {
      timeline.eventIndex.push(i);
      timeline.allocated.push(allocated);
      timeline.reserved.push(reserved);
      timeline.timeUs.push(e.timeUs);
    } else {
      timeline.allocated[p] = Math.max(timeline.allocated[p], allocated);
      timeline.reserved[p] = Math.max(timeline.reserved[p], reserved);
    }
  }
  for (const a of live.values()) consider(a, null);
  done.sort((x, y) => y.size - x.size || x.allocIndex - y.allocIndex);

  return {
    device,
    events: events.length,
    counts,
    lateStart: init.lateStart,
    initial,
    final: { allocated, reserved },
    peakAllocated,
    peakReserved,
    unallocatedAtPeakReserved,
    largest: done.slice(0, top),
    ooms,
    timeline,
  };
}
