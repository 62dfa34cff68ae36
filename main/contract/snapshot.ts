// PyTorch memory snapshots over the wire: upload a `_dump_snapshot()` pickle in
// chunks (one message is capped at 1 MiB on both transports), then ask the host for views
// of it (timeline, allocator state at an event, largest allocations) and for what-if
// replays of its trace through the native caching allocator.
import { z } from 'zod';

/** Raw bytes per upload chunk: a multiple of 3, so each chunk's base64 has no padding inside. */
export const SNAPSHOT_CHUNK_BYTES = 384 * 1024;
/** Longest base64 text of one chunk (512 KiB). */
export const SNAPSHOT_CHUNK_CHARS = (SNAPSHOT_CHUNK_BYTES / 3) * 4;
/** Largest pickle the host accepts: 1 GiB. */
export const SNAPSHOT_MAX_FILE_BYTES = 1 << 30;
export const SNAPSHOT_MAX_CHUNKS = Math.ceil(SNAPSHOT_MAX_FILE_BYTES / SNAPSHOT_CHUNK_BYTES);

const token = z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, 'expected 1-64 letters, digits, "_" or "-"');
const device = z.number().int().min(0).max(1023).optional();
const allocConf = z.string().max(1024);
/** Bytes, or a size as people write it ("24GiB", "24GB"); null: the simulated device's whole memory. */
const capacity = z
  .union([
    z
      .number()
      .int()
      .positive()
      .max(2 ** 50),
    z.string().min(1).max(32),
  ])
  .nullable();
const base64 = z
  .string()
  .max(SNAPSHOT_CHUNK_CHARS)
  .regex(/^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/, 'chunk is not base64');

const snapshotRef = { id: token, device };

export const snapshotMethods = {
  /** One chunk of a pickle; the reply to the last one carries the opened snapshot's summary. */
  'snapshot.upload': {
    params: z
      .strictObject({
        uploadId: token,
        index: z.number().int().min(0),
        total: z.number().int().min(1).max(SNAPSHOT_MAX_CHUNKS),
        chunk: base64,
        name: z.string().max(256).optional(),
      })
      .refine((p) => p.index < p.total, { message: 'index must be below total', path: ['index'] }),
  },
  /** Snapshots the host holds now (most recently used first). */
  'snapshot.list': { params: z.undefined().or(z.strictObject({})) },
  'snapshot.close': { params: z.strictObject({ id: token }) },
  /** Active memory over the trace, stacked by allocation, at most maxPoints points. */
  'snapshot.timeline': {
    params: z.strictObject({
      ...snapshotRef,
      maxPoints: z.number().int().min(8).max(4000).optional(),
      maxAllocations: z.number().int().min(1).max(500).optional(),
    }),
  },
  /** Segments and blocks right after trace event `eventIndex` (-1: before the first). */
  'snapshot.stateAt': { params: z.strictObject({ ...snapshotRef, eventIndex: z.number().int().min(-1) }) },
  'snapshot.largest': { params: z.strictObject({ ...snapshotRef, top: z.number().int().min(1).max(200).optional() }) },
  /** The trace replayed under its own settings and under `allocConf`, both at `capacity`. */
  'snapshot.whatIf': { params: z.strictObject({ ...snapshotRef, allocConf, capacity: capacity.optional() }) },
  /** The smallest capacity under which the trace runs without an OOM, under `allocConf` (a bisection by replay). */
  'snapshot.minCapacity': { params: z.strictObject({ ...snapshotRef, allocConf }) },
  /** Every settings string at every capacity. */
  'snapshot.grid': {
    params: z.strictObject({
      ...snapshotRef,
      settings: z.array(allocConf).min(1).max(8),
      capacities: z.array(capacity).min(1).max(8),
    }),
  },
} as const;

/**
 * A Python frame's file: a `.py` file, or code run from a string or a prompt (`<string>`,
 * `<stdin>`, `<ipython-input-3-...>`), frozen stdlib modules aside. Native frames (C++, CUDA
 * kernels) have other names, "??" or none, whatever their line.
 */
export function isPythonFile(filename: string): boolean {
  return filename.endsWith('.py') || (/^<.+>$/.test(filename) && !filename.startsWith('<frozen '));
}

/** PyTorch's own Python (any `torch/` directory: site-packages or a source tree) and frozen stdlib modules. */
export function isTorchInternalFile(filename: string): boolean {
  return /(^|[/\\])torch[/\\]|^<frozen /.test(filename);
}

/** What a frame as the host sends it ("file:line:name") is: the user's Python, torch's own Python, or native code. */
export function frameKind(frame: string): 'user' | 'torch' | 'native' {
  const m = /^(.*?):(\d+):/.exec(frame);
  if (!m || !isPythonFile(m[1])) return 'native';
  return isTorchInternalFile(m[1]) ? 'torch' : 'user';
}

export interface SnapPeak {
  bytes: number;
  /** Trace event index where it was first reached (-1: before the first event). */
  eventIndex: number;
}

export interface SnapAllocatorSettings {
  /** PYTORCH_CUDA_ALLOC_CONF as the process set it ('' when unset). */
  conf: string;
  /** The settings that shape memory, as a conf string (what a replay uses by default). */
  effectiveConf: string;
  maxSplitSize: number | null;
  garbageCollectionThreshold: number;
  expandableSegments: boolean;
  roundupPower2Divisions: number[];
}

/** Live allocations at one moment, grouped by the user code that made them (main/snapshot/where.ts). */
export interface SnapWhere {
  total: number;
  allocations: number;
  sites: { site: string; path: string[]; op: string | null; bytes: number; count: number }[];
}

export interface SnapRecordedOom {
  eventIndex: number;
  size: number;
  deviceFree: number;
  frames: string[];
  /** Requested-live and reserved bytes when it failed. */
  allocated: number;
  reserved: number;
  /** True when CUDA had more free memory than requested: a cap refused it, not the card. */
  capped: boolean;
  /** Caps under which the replay fails at this very event (null: not found, or not searched). */
  reproducingCaps: { low: number; high: number; suggested: number } | null;
  where: SnapWhere | null;
}

/** The allocator state before the trace's first event (a late or truncated trace). */
export interface SnapStart {
  segments: number;
  allocations: number;
  /** Block bytes allocated (what memory_allocated() counted). */
  allocatedBlocks: number;
  /** Events the backward walk could not undo consistently. */
  problems: string[];
}

export interface SnapSummary {
  id: string;
  name: string;
  /** Bytes of the pickle. */
  bytes: number;
  /** Devices with a trace or segments; `device` is the one the other numbers describe. */
  devices: number[];
  device: number;
  /** Segments at the end of the snapshot on `device`. */
  segments: number;
  traceLength: number;
  /** First event's time, µs (null without a trace). */
  startUs: number | null;
  /** Last event time minus first, µs (null without a trace). */
  durationUs: number | null;
  /** Memory was in use before the first event (history enabled late, or the ring buffer wrapped). */
  lateStart: boolean;
  start: SnapStart;
  /** The trace holds a round number of events (1000s): likely a full ring buffer (max_entries). */
  ringBufferLikely: boolean;
  counts: Record<string, number>;
  initial: { allocated: number; reserved: number };
  final: { allocated: number; reserved: number };
  peakAllocated: SnapPeak;
  peakReserved: SnapPeak;
  /** Reserved but not allocated when reserved peaked. */
  unallocatedAtPeakReserved: number;
  allocatorSettings: SnapAllocatorSettings | null;
  ooms: SnapRecordedOom[];
  /** Live allocations at peak allocated, ranked by code site. */
  whereAtPeak: SnapWhere;
  /** Whether this build can replay (what-if and grid). */
  replay: boolean;
}

export type SnapUploadResult =
  { done: false; uploadId: string; received: number; total: number } | { done: true; uploadId: string; snapshot: SnapSummary };

export interface SnapTimelineAllocation {
  size: number;
  /** Trace event that allocated it (-1: before the trace began). */
  allocIndex: number;
  freeIndex: number | null;
  /** First point index where it is drawn; offsets[k] is its base at point first + k. */
  first: number;
  offsets: number[];
  /** Index into `stacks`. */
  stack: number;
}

export interface SnapTimeline {
  id: string;
  device: number;
  events: number;
  /** Each point is the state right after event eventIndex[p] (-1: before the first). */
  points: { eventIndex: number[]; timeUs: number[]; allocated: number[]; reserved: number[] };
  /** Bytes of the allocations not drawn one by one, per point: the bottom band. */
  other: number[];
  /** The largest allocations, drawn stacked in allocation order above `other`. */
  allocations: SnapTimelineAllocation[];
  /** Top stack frames, shared by index. */
  stacks: string[][];
}

export interface SnapBlockState {
  address: number;
  /** Bytes the block spans (rounded as the allocator rounds). */
  size: number;
  /** Bytes the caller asked for (0 for free blocks). */
  requested: number;
  state: 'allocated' | 'pending_free' | 'free';
  allocIndex: number | null;
  stack: number | null;
}

export interface SnapSegmentState {
  address: number;
  size: number;
  stream: number;
  pool: 'small' | 'large';
  allocated: number;
  blocks: SnapBlockState[];
}

export interface SnapEventInfo {
  index: number;
  action: string;
  address: number;
  size: number;
  timeUs: number;
  frames: string[];
}

export interface SnapStateAt {
  id: string;
  device: number;
  eventIndex: number;
  events: number;
  event: SnapEventInfo | null;
  reserved: number;
  /** Bytes requested by live allocations. */
  allocated: number;
  /** Free bytes inside segments that also hold allocations. */
  inactiveSplit: number;
  /** Bytes of segments with nothing allocated. */
  cachedFree: number;
  largestFree: number;
  segments: SnapSegmentState[];
  stacks: string[][];
}

export interface SnapLargestAllocation {
  size: number;
  allocIndex: number;
  freeIndex: number | null;
  frames: string[];
}

export interface SnapLargest {
  id: string;
  device: number;
  allocations: SnapLargestAllocation[];
}

export interface SnapOom {
  /** Trace event of the allocation that failed (-1: one from before the trace). */
  eventIndex: number;
  size: number;
  message: string;
  frames: string[];
}

export interface SnapOutcome {
  allocConf: string;
  capacity: number | null;
  peakAllocated: number;
  peakReserved: number;
  numDeviceAlloc: number;
  numDeviceFree: number;
  numOoms: number;
  numAllocRetries: number;
  /** Reserved but unallocated bytes when reserved peaked. */
  fragmentation: number | null;
  oom: SnapOom | null;
  /** Each recorded OOM tried again: failed (reproduced) or would have fit. */
  recordedOoms: { eventIndex: number; failed: boolean }[];
}

export interface SnapWhatIf {
  id: string;
  device: number;
  capacity: number | null;
  /** What the trace itself recorded. */
  recorded: {
    peakAllocated: number;
    peakReserved: number;
    numDeviceAlloc: number;
    numDeviceFree: number;
    fragmentation: number;
    ooms: number;
  };
  /** The snapshot's own settings, replayed at `capacity`. */
  original: SnapOutcome;
  whatIf: SnapOutcome;
}

export interface SnapGrid {
  id: string;
  device: number;
  settings: string[];
  capacities: (number | null)[];
  /** cells[i][j]: settings[i] at capacities[j]. */
  cells: SnapOutcome[][];
}

export interface SnapMinCapacity {
  id: string;
  device: number;
  allocConf: string;
  /** The smallest cap found that fits (one 2 MiB step lower runs out of memory); null: none does, or not searched. */
  capacity: number | null;
  /** Peak reserved on the whole device, the search's upper end (null: not searched). */
  peakReserved: number | null;
  /** Native replays the search took. */
  replays: number;
  /** Why capacity is null. */
  note?: string;
}

export interface SnapshotResults {
  'snapshot.upload': SnapUploadResult;
  'snapshot.list': SnapSummary[];
  'snapshot.close': { closed: boolean };
  'snapshot.timeline': SnapTimeline;
  'snapshot.stateAt': SnapStateAt;
  'snapshot.largest': SnapLargest;
  'snapshot.whatIf': SnapWhatIf;
  'snapshot.grid': SnapGrid;
  'snapshot.minCapacity': SnapMinCapacity;
}
