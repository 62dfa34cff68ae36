// What a snapshot's trace says on its own, before any replay: memory over time, peaks,
// the largest allocations and the recorded OOMs. "allocated" here is the sum of the sizes
// callers requested for live allocations (what MemoryViz's Active Memory Timeline plots);
// PyTorch's memory_allocated() counts rounded block sizes and so reads a little higher.
// "reserved" is the sum of live segments, exactly what PyTorch's memory_reserved() reports.
import { foldTrace, liveAt, type Allocation } from './fold';
import { topFrames } from './frames';
import { initialStateOf } from './import';
import { TRACE_ACTIONS, type Frames, type Snapshot, type TraceAction } from './model';
import { whereMemoryWas, type WhereMemoryWas } from './where';
import { startTotals, windowStart } from './window_start';

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
  /** Bytes the failed allocation requested. */
  size: number;
  /** Bytes CUDA reported free on the device then. */
  deviceFree: number;
  frames: string[];
  /** Requested bytes live and bytes reserved when it failed (from the trace). */
  allocated: number;
  reserved: number;
  /** Live allocations ranked by code site (first recorded OOM only). */
  where: WhereMemoryWas | null;
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
  /** The allocator state at the trace's start (window_start.ts). */
  start: { segments: number; allocations: number; allocatedBlocks: number; problems: string[] };
  initial: { allocated: number; reserved: number };
  final: { allocated: number; reserved: number };
  peakAllocated: Peak;
  peakReserved: Peak;
  /** Reserved minus allocated when reserved peaked (just after the allocation that caused it). */
  unallocatedAtPeakReserved: number;
  largest: LargeAllocation[];
  ooms: RecordedOom[];
  /** Live allocations at peak allocated, ranked by code site. */
  whereAtPeak: WhereMemoryWas;
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
  const start = windowStart(s, device);

  const counts = Object.fromEntries(TRACE_ACTIONS.map((a) => [a, 0])) as Record<TraceAction, number>;
  const init = initialStateOf(start);
  const r0 = { allocated: init.blocks.reduce((n, b) => n + b.requestedSize, 0), reserved: init.segments.reduce((n, g) => n + g.size, 0) };
  let peakAllocated: Peak = { bytes: r0.allocated, eventIndex: -1 };
  let peakReserved: Peak = { bytes: r0.reserved, eventIndex: -1 };
  let unallocatedAtPeakReserved = r0.reserved - r0.allocated;

  // A bounded candidate list (trimmed to `top` as it goes); stacks are formatted at the end.
  const done: (Omit<LargeAllocation, 'frames'> & { raw: Frames })[] = [];
  let smallest = -1; // below this size an allocation cannot make the list once it is full
  const consider = (a: Allocation, freeIndex: number | null) => {
    if (a.size < smallest) return;
    if (done.length >= top * 4) {
      done.sort((x, y) => y.size - x.size || x.allocIndex - y.allocIndex);
      done.length = top;
      smallest = done[top - 1].size;
      if (a.size < smallest) return;
    }
    done.push({ size: a.size, allocIndex: a.allocIndex, freeIndex, raw: a.frames });
  };

  const ooms: RecordedOom[] = [];
  const bucket = Math.max(1, Math.ceil(events.length / maxPoints));
  const timeline: TimelineSeries = { eventIndex: [], allocated: [], reserved: [], timeUs: [] };

  // The gap at peak is taken right after the allocation that drove reserved to its peak.
  let pending = false;
  const r = foldTrace(
    s,
    device,
    {
      free: (a, i) => consider(a, i),
      event(i, e, t) {
        counts[e.action]++;
        if (e.action === 'alloc' && pending) unallocatedAtPeakReserved = t.reserved - t.allocated;
        if (e.action !== 'segment_alloc' && e.action !== 'segment_map') pending = false;
        if (e.action === 'oom') {
          ooms.push({
            eventIndex: i,
            size: e.size,
            deviceFree: e.deviceFree ?? 0,
            frames: topFrames(e.frames),
            allocated: t.allocated,
            reserved: t.reserved,
            where: null,
          });
        }
        if (t.allocated > peakAllocated.bytes) peakAllocated = { bytes: t.allocated, eventIndex: i };
        if (t.reserved > peakReserved.bytes) {
          peakReserved = { bytes: t.reserved, eventIndex: i };
          unallocatedAtPeakReserved = t.reserved - t.allocated;
          pending = true;
        }
        const p = Math.floor(i / bucket);
        if (p === timeline.eventIndex.length) {
          timeline.eventIndex.push(i);
          timeline.allocated.push(t.allocated);
          timeline.reserved.push(t.reserved);
          timeline.timeUs.push(e.timeUs);
        } else {
          timeline.allocated[p] = Math.max(timeline.allocated[p], t.allocated);
          timeline.reserved[p] = Math.max(timeline.reserved[p], t.reserved);
        }
      },
    },
    { start },
  );
  for (const a of r.live.values()) consider(a, null);
  done.sort((x, y) => y.size - x.size || x.allocIndex - y.allocIndex);
  const largest: LargeAllocation[] = done.slice(0, top).map(({ raw, ...a }) => ({ ...a, frames: topFrames(raw) }));

  // Where the memory was: a second walk to the peak, one to the first recorded OOM.
  const whereAtPeak = whereMemoryWas(liveAt(s, device, peakAllocated.eventIndex, start), top);
  if (ooms.length) ooms[0].where = whereMemoryWas(liveAt(s, device, ooms[0].eventIndex, start), top);

  const totals = startTotals(start);
  return {
    device,
    events: events.length,
    counts,
    lateStart: start.lateStart,
    start: { segments: totals.segments, allocations: totals.allocations, allocatedBlocks: totals.allocated, problems: start.problems },
    initial: r0,
    final: { allocated: r.allocated, reserved: r.reserved },
    peakAllocated,
    peakReserved,
    unallocatedAtPeakReserved,
    largest,
    ooms,
    whereAtPeak,
    timeline,
  };
}
