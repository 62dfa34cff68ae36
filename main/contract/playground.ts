// The tensor playground over the wire: a live engine session on one device that runs short
// commands (`x = randn(1000, 1000)`, `del x`, `empty_cache()`, `memory_summary()`) and
// answers with the allocator's state after each. Used by the playground screen.
import { z } from 'zod';

export const playgroundMethods = {
  /** Opens a session; settings as in an experiment spec. */
  'playground.open': {
    params: z
      .strictObject({
        device: z.string().max(64).optional(),
        capacity: z
          .union([z.number(), z.string().max(32)])
          .nullable()
          .optional(),
        alloc_conf: z.string().max(1024).optional(),
      })
      .optional(),
  },
  /** Runs one command line in the session. */
  'playground.exec': { params: z.strictObject({ sessionId: z.string().min(1).max(64), command: z.string().max(2000) }) },
  'playground.close': { params: z.strictObject({ sessionId: z.string().min(1).max(64) }) },
} as const;

/** The allocator's snapshot as the native Allocator's snapshot() returns it. */
export interface SnapshotBlock {
  address: number;
  size: number;
  requestedSize: number;
  state: 'active_allocated' | 'inactive' | string;
  context: string;
}
export interface SnapshotSegment {
  address: number;
  totalSize: number;
  allocatedSize: number;
  activeSize: number;
  requestedSize: number;
  stream: number;
  pool: 'small' | 'large';
  isExpandable: boolean;
  context: string;
  blocks: SnapshotBlock[];
}

export interface PlaygroundTensor {
  name: string;
  shape: number[];
  dtype: string;
  bytes: number; // the storage's bytes
  view: boolean; // shares another tensor's storage
}

export interface PlaygroundState {
  sessionId: string;
  device: string;
  /** What the command printed (memory_summary(), a tensor's repr, an error), '' when nothing. */
  output: string;
  /** True when the command failed (bad syntax, OOM); output holds the message. */
  error: boolean;
  allocated: number;
  reserved: number;
  maxAllocated: number;
  tensors: PlaygroundTensor[];
  segments: SnapshotSegment[];
}

export interface PlaygroundResults {
  'playground.open': PlaygroundState;
  'playground.exec': PlaygroundState;
  'playground.close': { closed: boolean };
}
