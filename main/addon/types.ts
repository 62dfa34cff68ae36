// Types of what the native addon exports. Each area of the engine adds its part here;
// the TypeScript side never touches the addon except through these.
import type { DeviceInfo } from '../contract/devices';
import type { MemorySample, RunEvent } from '../contract/runs';

export interface NativeAddon {
  /** Every simulated preset, then each CUDA GPU found (none without a GPU). */
  listDevices(): DeviceInfo[];
  /** Build facts: version, whether the CUDA backend was compiled in. */
  buildInfo(): { version: string; cuda: boolean; cudaRuntime: number };
  /** Job kinds this build runs ("synthetic", the engine-free test job; "protocol"). */
  runnerJobs?: string[];
  /** Runs a job on a native worker thread (native/addon/runner_binding.cpp). Throws, starting
   * nothing, for a job it cannot run. onWake is called (cheaply, at most once per drain)
   * when events or the outcome wait; pull them with handle.drain() from a later turn. */
  startRun?(job: NativeJob, onWake: () => void): NativeRunHandle;
  [extra: string]: unknown;
}

// ---- runner (main/runner owns these) ----
/** The spec flattened for native/runner/job_spec.h; kind "synthetic" is the engine-free test job. */
export interface NativeJob {
  kind: 'protocol' | 'synthetic';
  model?: 'mlp' | 'residual';
  in?: number;
  hidden?: number;
  out?: number;
  dim?: number;
  depth?: number;
  batch?: number;
  iterations?: number;
  accum?: number;
  checkpoint?: 'none' | 'block' | 'sqrt' | 'every';
  checkpoint_every?: number;
  precision?: string;
  optimizer?: string;
  lr?: number;
  momentum?: number;
  weight_decay?: number;
  foreach?: boolean;
  set_to_none?: boolean;
  mode?: string;
  keep_loss_graph?: boolean;
  loss?: string;
  alloc_conf?: string;
  device?: string;
  capacity?: number;
  history?: boolean;
  sample_every?: number;
  steps?: number;
  step_ms?: number;
  oom_at?: number;
  throw_at?: number;
}

/** Alloc events arrive with a numeric category index (-1: unknown); the runner names it. */
export type NativeRunEvent =
  | Extract<RunEvent, { type: 'phase' }>
  | (Omit<Extract<RunEvent, { type: 'alloc' }>, 'category'> & { category: number });

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
  oom: NativeOom | null;
}

export interface NativeRunHandle {
  cancel(): void;
  drain(): NativeEventBatch;
}
