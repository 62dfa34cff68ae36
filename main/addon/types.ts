// What the native addon (build/Release/vramlab.node) exports, typed once. The TypeScript
// side never touches the addon except through this interface. Each export is listed with
// the binding that defines it (native/addon/*_binding.cpp).
import type { DeviceInfo } from '../contract/devices';
import type { SnapshotSegment } from '../contract/playground';
import type { MemorySample, RunEvent } from '../contract/runs';
import type { Spec } from '../contract/spec';

export interface NativeAddon {
  /** Every simulated preset, then each CUDA GPU found (none without a GPU). devices_binding.cpp */
  listDevices(): DeviceInfo[];
  /** Build facts: version, whether the CUDA backend was compiled in. */
  buildInfo(): { version: string; cuda: boolean; cudaRuntime: number };
  /** The engine's memory categories in index order, spelled as CATEGORIES (engine_binding.cpp). */
  memoryCategories: string[];
  /** The engine's registries: model families and optimizers (engine_binding.cpp). */
  modelFamilies: string[];
  optimizerKinds: string[];
  /** The words the engine parses each word-valued spec field from (spec_words.h), by field. */
  specWords: Record<'precision' | 'weights' | 'mode' | 'loss' | 'cache', string[]>;
  /** The allocator's size classes (allocator_binding.cpp, allocator/constants.h). */
  allocatorConstants: Record<string, number>;
  /** Job kinds this build runs: "experiment" and "synthetic" (the engine-free test job). */
  runnerJobs: string[];
  /** Runs a job on a native worker thread (runner_binding.cpp). Throws, starting nothing, for
   * a job it cannot run. onWake is called (cheaply, at most once per drain) when events or
   * the outcome wait; pull them with handle.drain() from a later turn. */
  startRun(job: NativeJob, onWake: () => void): NativeRunHandle;
  /** One experiment run to the end on the calling thread (engine_binding.cpp). Throws for a
   * spec the engine refuses, and with an OutOfMemoryError for an OOM. */
  runExperiment(spec: Spec, options?: NativeRunOptions): NativeExperimentResult;
  /** One rank of a launched data-parallel job, run to its end in this (dedicated) process:
   * the group id through `dir`, NCCL on cuda:<rank> (a counting group on a sim: device), the
   * result in dir/rank<rank>.json; returns the exit status (dist_binding.cpp). */
  runRank(spec: Spec, rank: number, dir: string): number;
  /** What-if replay of a recorded alloc/free sequence (allocator_binding.cpp). */
  replayAllocator(
    ops: Uint8Array,
    sizes: BigUint64Array | Float64Array,
    ids: Uint32Array,
    streams: Uint32Array,
    options: NativeReplayOptions,
  ): NativeReplayResult;
  /** The caching allocator on its own, over one device (allocator_binding.cpp). */
  Allocator: new (device: string, settings?: string) => NativeAllocator;
  /** The tensor playground's engine session (engine_binding.cpp); Session is the same class. */
  EngineSession: new (options: NativeSessionOptions) => NativeSession;
  Session: new (options: NativeSessionOptions) => NativeSession;
}

// ---- runner ----

/** How a run is carried out beyond what it measures (native/engine/spec/run_spec.h RunOptions). */
export interface NativeRunOptions {
  backend?: 'sim' | 'cpu' | 'cuda';
  warmup?: 'linear' | 'matmul';
  grad_scaler?: boolean;
  /** A memory sample every N allocations (0: none). */
  sample_every?: number;
  seed?: number;
}

/** The engine-free test job: a fake run that steps, samples, and can OOM or throw on cue. */
export interface SyntheticJob {
  steps?: number;
  step_ms?: number;
  oom_at?: number;
  throw_at?: number;
  capacity?: number;
}

/** A job for startRun: the validated spec as it is, or the synthetic test job. */
/** spec: its shapes as the explicit list (engineSpec in contract/spec.ts). */
export type NativeJob = { kind: 'experiment'; spec: Spec; options?: NativeRunOptions } | { kind: 'synthetic'; synthetic: SyntheticJob };

/** Alloc events arrive with a numeric category index (-1: unknown); the runner names it. */
export type NativeRunEvent =
  Extract<RunEvent, { type: 'phase' }> | (Omit<Extract<RunEvent, { type: 'alloc' }>, 'category'> & { category: number });

export interface NativeEventBatch {
  samples: MemorySample[];
  events: NativeRunEvent[];
  dropped: number;
  /** Set exactly once, on the drain that takes the job's last events. */
  outcome: NativeOutcome | null;
}

export interface NativeOom {
  message: string;
  requested: number;
  allocated: number;
  reserved: number;
  capacity: number;
  by: number[];
  phase: string;
  module: string;
  iteration: number;
}

export interface NativeOutcome {
  status: 'done' | 'oom' | 'cancelled' | 'error';
  error: string | null;
  duration_ms: number;
  readings: [string, number][];
  baseline: number;
  peak_allocated: number;
  peak_reserved: number;
  sim_time_ms: number | null;
  num_parameters: number;
  trainable_parameters: number;
  /** The scaled-dot-product attention backend the run modelled (transformers), else null. */
  sdpa_backend: string | null;
  /** The device's bytes outside the allocator (DeviceInfo.context). */
  context: number;
  /** Data parallel: each rank's readings (rank 0's are `readings`); [] on one GPU. */
  ranks?: [string, number][][];
  /** rank_class[r]: the rank whose simulation rank r shares (ranks PyTorch treats alike). */
  rank_class?: number[];
  /** [key, low, high] for readings PyTorch does not fix (DDP after its bucket rebuild). */
  ranges?: [string, number, number][];
  /** NCCL's device memory per rank, outside the allocator (0 on one GPU). */
  nccl?: number;
  oom: NativeOom | null;
}

export interface NativeRunHandle {
  cancel(): void;
  drain(): NativeEventBatch;
}

export interface NativeExperimentResult {
  readings: Record<string, number>;
  order: string[];
  base: number;
  numParameters: number;
  trainableParameters: number;
  sdpaBackend: string;
  modeledTimeMs: number;
  memorySummary: string;
  /** Readings PyTorch does not fix (DDP after its bucket rebuild): [low, high]. */
  ranges: Record<string, [number, number]>;
}

// ---- allocator ----

export interface NativeAllocator {
  malloc(size: number): number;
  free(address: number): void;
  emptyCache(): void;
  stats(): Record<string, number>;
  memoryAllocated(): number;
  memoryReserved(): number;
  snapshot(): { segments: SnapshotSegment[] };
  summary(): string;
  setFraction(fraction: number): void;
  setCapacity(bytes: number): void;
  resetPeak(): void;
  setHistory(on: boolean): void;
  history(): NativeHistoryEvent[];
  virtualTimeNs(): number;
  device(): NativeSessionDevice;
}

/** Options of the addon's replayAllocator (native/addon/allocator_binding.cpp). */
export interface NativeReplayOptions {
  settings?: string;
  capacity?: number;
  device?: string;
  history?: boolean;
  historyMax?: number;
  /** Addresses the recorded run's cudaMallocs returned, in order (tie-breaking hints). */
  segmentAddresses?: Float64Array;
  /** The allocator state the trace began in (native/allocator/seed.cpp). */
  seed?: NativeReplaySeed;
  /** Return the final segments too. */
  snapshot?: boolean;
}

/** The allocator state at a trace's start, as replayAllocator takes it (native/allocator/seed.cpp). */
export interface NativeReplaySeed {
  segAddress: Float64Array;
  segStream: Float64Array;
  segSmall: Uint8Array;
  segBlocks: Uint32Array;
  blockSize: Float64Array;
  blockRequested: Float64Array;
  /** Replay id of each allocated block (its free op names it); 0 for free blocks. */
  blockId: Uint32Array;
}

/** One event of an allocator's history (native/allocator/history.h). */
export interface NativeHistoryEvent {
  action: string; // alloc, free, segment_alloc, segment_free, segment_map, segment_unmap, oom, empty_cache
  address: number;
  size: number;
  blockSize?: number;
  stream?: number;
  timeNs?: number;
  context?: string;
}

/** The final allocator state a replay returns with `snapshot: true`. */
export interface NativeSegment {
  address: number;
  totalSize: number;
  stream: number;
  pool: 'large' | 'small';
  isExpandable: boolean;
  blocks: { address: number; size: number; requestedSize: number; state: string }[];
}

export interface NativeReplayResult {
  peakAllocated: number;
  peakReserved: number;
  /** Reserved minus allocated right after reserved first peaked. */
  unallocatedAtPeak?: number;
  numDeviceAlloc: number;
  numDeviceFree: number;
  numOoms: number;
  numAllocRetries?: number;
  firstOom: { index: number; message: string } | null;
  oomAttempts?: { index: number; failed: boolean; message: string }[];
  history?: NativeHistoryEvent[];
  snapshot?: { segments: NativeSegment[] };
}

export type ReplayFn = (
  ops: Uint8Array,
  sizes: BigUint64Array | Float64Array,
  ids: Uint32Array,
  streams: Uint32Array,
  options: NativeReplayOptions,
) => NativeReplayResult;

// ---- playground session ----

export type NativeDType = 'float32' | 'float16' | 'bfloat16' | 'float64';

export interface NativeTensorInfo {
  shape: number[];
  dtype: string;
  /** numel * element size: the bytes this tensor's elements span. */
  bytes: number;
  /** The bytes of the storage underneath (views share it). */
  storageBytes: number;
  /** The allocator block holding the storage (rounded to 512 B, or the whole segment). */
  blockBytes: number;
  address: number;
  /** Same key: same storage. */
  storageKey: number;
  isView: boolean;
  contiguous: boolean;
}

export interface NativeSessionDevice {
  id: string;
  kind: string;
  name: string;
  total: number;
  backend: string;
  capacity: number | null;
}

export interface NativeSessionOptions {
  device: string;
  capacity?: number | null;
  allocConf?: string;
}

export interface NativeSession {
  randn(shape: number[], dtype?: NativeDType): number;
  zeros(shape: number[], dtype?: NativeDType): number;
  ones(shape: number[], dtype?: NativeDType): number;
  empty(shape: number[], dtype?: NativeDType): number;
  view(id: number, shape: number[]): number;
  reshape(id: number, shape: number[]): number;
  clone(id: number): number;
  contiguous(id: number): number;
  to(id: number, dtype: NativeDType): number;
  t(id: number): number;
  matmul(a: number, b: number): number;
  del(id: number): void;
  info(id: number): NativeTensorInfo;
  emptyCache(): void;
  memoryAllocated(): number;
  memoryReserved(): number;
  maxMemoryAllocated(): number;
  maxMemoryReserved(): number;
  resetPeak(): void;
  memorySummary(abbreviated?: boolean): string;
  snapshot(): { segments: SnapshotSegment[] };
  device(): NativeSessionDevice;
  /** Frees every tensor and the allocator's segments now; later calls throw. */
  close(): void;
}
