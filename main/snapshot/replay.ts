// What-if replay: a snapshot's alloc/free sequence through vramlab's native caching
// allocator under chosen settings and capacity, with the outcome in PyTorch's terms.
import { loadAddon } from '../addon/load';
import type { NativeAddon, NativeHistoryEvent, NativeReplayResult, ReplayFn } from '../addon/types';
import { allocConfFromSettings } from './alloc_conf';
import { topFrames } from './frames';
import type { ExportSegment } from './export';
import type { Snapshot } from './model';
import { snapshotToReplay, type ReplayTrace } from './to_replay';
import { startTotals } from './window_start';

export interface ReplayOptions {
  /** PYTORCH_CUDA_ALLOC_CONF; undefined: the snapshot's own settings. */
  allocConf?: string;
  /** Device memory cap in bytes; null/undefined: the simulated device's full memory. */
  capacity?: number | null;
  /** Simulated device preset the allocator runs on (default: the binding's default). */
  deviceId?: string;
}

export interface FirstOom {
  /** Index of the failed op in the replay arrays. */
  opIndex: number;
  /** Index of the snapshot trace event it replays (-1: an allocation from before the trace). */
  eventIndex: number;
  /** Bytes that allocation requested. */
  size: number;
  /** PyTorch's OutOfMemoryError text, as the replayed allocator produced it. */
  message: string;
  /** The allocation's stack, most relevant frames first. */
  frames: string[];
}

/** A recorded 'oom' event tried again in the replay. */
export interface OomAttemptOutcome {
  eventIndex: number;
  /** Bytes the recorded allocation requested. */
  size: number;
  /** True: it failed again (the OOM is reproduced); false: it would have fit. */
  failed: boolean;
  /** The replayed allocator's OutOfMemoryError text when it failed ('' otherwise). */
  message: string;
}

export interface ReplayOutcome {
  allocConf: string;
  capacity: number | null;
  peakAllocated: number;
  peakReserved: number;
  numDeviceAlloc: number;
  numDeviceFree: number;
  numOoms: number;
  numAllocRetries: number;
  /** Reserved but unallocated bytes when reserved peaked (null if the binding gave no history). */
  unallocatedAtPeak: number | null;
  firstOom: FirstOom | null;
  /** One entry per recorded 'oom' event, in trace order. */
  oomAttempts: OomAttemptOutcome[];
}

/** The addon's replay function, or a clear error naming what is missing. */
export function nativeReplay(addon: NativeAddon = loadAddon()): ReplayFn {
  const fn = addon.replayAllocator;
  if (typeof fn !== 'function') {
    throw new Error("this build of vramlab's native addon has no replayAllocator(); rebuild it (npm run build:native)");
  }
  return fn.bind(addon) as ReplayFn;
}

export function hasNativeReplay(addon?: NativeAddon): boolean {
  try {
    return typeof (addon ?? loadAddon()).replayAllocator === 'function';
  } catch {
    return false;
  }
}

export interface Replayer {
  trace: ReplayTrace;
  /** The snapshot's own settings as a PYTORCH_CUDA_ALLOC_CONF string. */
  ownConf: string;
  run(options?: ReplayOptions): ReplayOutcome;
  /** The same replay, returning the allocator's raw history and final segments as well. */
  runWithHistory(options?: ReplayOptions): { outcome: ReplayOutcome; history: NativeHistoryEvent[]; segments: ExportSegment[] };
}

/** Prepare a snapshot once, then replay it under as many settings as wanted. */
export function replayer(s: Snapshot, device: number, replay: ReplayFn = nativeReplay()): Replayer {
  const trace = snapshotToReplay(s, device);
  const ownConf = allocConfFromSettings(s.allocatorSettings);
  const events = s.deviceTraces[device] ?? [];
  // A seeded replay's history starts from the state at the trace's start.
  const { allocated: startAllocated, reserved: startReserved } = trace.seed ? startTotals(trace.start) : { allocated: 0, reserved: 0 };
  const self: Replayer = {
    trace,
    ownConf,
    run: (options = {}) => replayOnce(options, false).outcome,
    runWithHistory: (options = {}) => replayOnce(options, true),
  };
  // The history (an object per allocator event) is only built for an export.
  function replayOnce(options: ReplayOptions, withHistory: boolean) {
    {
      const allocConf = options.allocConf ?? ownConf;
      const capacity = options.capacity ?? null;
      const r = replay(trace.ops, trace.sizes, trace.ids, trace.streams, {
        settings: allocConf,
        ...(capacity !== null ? { capacity } : {}),
        ...(options.deviceId ? { device: options.deviceId } : {}),
        history: withHistory,
        historyMax: Math.max(1 << 20, trace.count * 4),
        snapshot: withHistory,
        segmentAddresses: trace.segmentAddresses,
        ...(trace.seed ? { seed: trace.seed } : {}),
      });
      let firstOom: FirstOom | null = null;
      if (r.firstOom) {
        const op = r.firstOom.index;
        const ev = trace.eventIndex[op];
        firstOom = {
          opIndex: op,
          eventIndex: ev,
          size: Number(trace.sizes[op]),
          message: r.firstOom.message,
          frames: ev >= 0 ? topFrames(events[ev].frames) : [],
        };
      }
      const outcome: ReplayOutcome = {
        allocConf,
        capacity,
        peakAllocated: r.peakAllocated,
        peakReserved: r.peakReserved,
        numDeviceAlloc: r.numDeviceAlloc,
        numDeviceFree: r.numDeviceFree,
        numOoms: r.numOoms,
        numAllocRetries: r.numAllocRetries ?? 0,
        unallocatedAtPeak: r.unallocatedAtPeak ?? (r.history ? unallocatedAtPeak(r.history, startAllocated, startReserved) : null),
        firstOom,
        oomAttempts: (r.oomAttempts ?? []).map((a) => ({
          eventIndex: trace.eventIndex[a.index],
          size: Number(trace.sizes[a.index]),
          failed: a.failed,
          message: a.message,
        })),
      };
      const segments: ExportSegment[] = (r.snapshot?.segments ?? []).map((g) => ({
        address: g.address,
        totalSize: g.totalSize,
        stream: trace.streamValues[g.stream] ?? 0,
        isLarge: g.pool === 'large',
        isExpandable: g.isExpandable,
        blocks: g.blocks.map((b) => ({
          address: b.address,
          size: b.size,
          requestedSize: b.requestedSize,
          allocated: b.state !== 'inactive',
        })),
      }));
      return { outcome, history: r.history ?? [], segments };
    }
  }
  return self;
}

/**
 * Walks the replayed allocator's own history to the moment reserved memory peaked, taken
 * right after the allocation that drove it there (the segment event comes first).
 */
function unallocatedAtPeak(history: NonNullable<NativeReplayResult['history']>, startAllocated: number, startReserved: number): number {
  let allocated = startAllocated;
  let reserved = startReserved;
  let peak = reserved;
  let gap = reserved - allocated;
  let pending = false;
  for (const e of history) {
    const blk = e.blockSize ?? e.size;
    switch (e.action) {
      case 'alloc':
        allocated += blk;
        if (pending) gap = reserved - allocated;
        pending = false;
        break;
      case 'free':
      case 'free_completed':
        allocated -= blk;
        pending = false;
        break;
      case 'segment_alloc':
      case 'segment_map':
        reserved += e.size;
        break;
      case 'segment_free':
      case 'segment_unmap':
        reserved -= e.size;
        pending = false;
        break;
      default:
        break;
    }
    if (reserved > peak) {
      peak = reserved;
      gap = reserved - allocated;
      pending = true;
    }
  }
  return gap;
}
