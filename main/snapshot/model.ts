// A PyTorch memory snapshot (torch.cuda.memory._snapshot() / _dump_snapshot()), typed.
// Field meanings follow torch/csrc/cuda/memory_snapshot.cpp and the readers in
// torch/cuda/_memory_viz.py and torch/utils/viz/MemoryViz.js. Names are camelCase here;
// the pickle's snake_case keys are restored on export.
import { ALLOCATOR_CONSTANTS } from '../contract/allocator';
import type { PickleValue } from './pickle/values';

export interface Frame {
  name: string;
  filename: string;
  line: number;
}

/** Stack traces are shared between events in real snapshots; keep them shared. */
export type Frames = readonly Frame[];

export type BlockState = 'active_allocated' | 'active_pending_free' | 'inactive';

export interface SnapshotBlock {
  address: number;
  /** Bytes the block spans (the rounded size). */
  size: number;
  /** Bytes the caller asked for (0 for inactive blocks). */
  requestedSize: number;
  state: BlockState;
  frames: Frames;
}

export interface SnapshotSegment {
  device: number;
  address: number;
  totalSize: number;
  allocatedSize: number;
  activeSize: number;
  requestedSize: number;
  stream: number;
  segmentType: 'large' | 'small';
  /** Private pool owner (0, 0 for the default pool). */
  segmentPoolId: [number, number];
  isExpandable: boolean;
  frames: Frames;
  blocks: SnapshotBlock[];
}

export const TRACE_ACTIONS = [
  'alloc',
  'free_requested',
  'free_completed',
  'segment_alloc',
  'segment_free',
  'segment_map',
  'segment_unmap',
  'oom',
  'snapshot',
] as const;

export type TraceAction = (typeof TRACE_ACTIONS)[number];

export interface TraceEvent {
  action: TraceAction;
  /** Block or segment address; 0 for oom and snapshot events. */
  addr: number;
  /**
   * alloc / free_*: the size the caller requested (PyTorch records orig_size, not the
   * rounded block size); segment_*: the segment (or mapped range) size; oom: the request.
   */
  size: number;
  stream: number;
  timeUs: number;
  frames: Frames;
  /** oom only: bytes CUDA reported free on the device. */
  deviceFree?: number;
  compileContext?: string;
  userMetadata?: string;
}

export interface SnapshotAllocatorSettings {
  /** The PYTORCH_CUDA_ALLOC_CONF string as the process last set it ('' when unset). */
  conf: string;
  /** Bytes; null when unlimited (PyTorch writes -1). */
  maxSplitSize: number | null;
  garbageCollectionThreshold: number;
  expandableSegments: boolean;
  /** Divisions per power-of-two interval, 16 entries for 1 MiB, 2 MiB ... 32 GiB. */
  roundupPower2Divisions: number[];
  /** Keys this version of vramlab does not interpret, kept for export. */
  other: Map<string, PickleValue>;
}

export interface Snapshot {
  segments: SnapshotSegment[];
  /** One event list per device index. */
  deviceTraces: TraceEvent[][];
  allocatorSettings: SnapshotAllocatorSettings | null;
  /**
   * Added to every address on export. Non-zero only when the file held addresses above
   * 2^53: they are then stored relative to this base so they stay exact as numbers.
   */
  addressBase: bigint;
  /** Top-level keys kept as they were read (external_annotations, ...). */
  other: Map<string, PickleValue>;
}

/** PyTorch's size of the roundup_power2_divisions table. */
export const ROUNDUP_INTERVALS = ALLOCATOR_CONSTANTS.roundupIntervals;
