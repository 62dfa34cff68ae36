// What a run produces, as the store keeps it and the wire carries it: memory samples,
// phase markers, allocator events, the summary (readings, peaks, parameters, OOM diagnosis).
import type { Spec } from './spec';
import type { Verdict } from './verdict';

/** Memory categories, in the order of MemorySample.by (cached-but-free is reserved - allocated).
 * Transformer activations are split by the layer that made them; kv_cache is generation's.
 * gradients are the parameters' .grad; activation_gradients what backward makes on the way
 * there (the logits' gradient, each layer output's). New ones go last: stored runs index by position. */
export const CATEGORIES = [
  'parameters',
  'gradients',
  'optimizer_state',
  'activations',
  'temporaries',
  'inputs',
  'workspace',
  'other',
  'attention',
  'mlp',
  'norms',
  'logits',
  'kv_cache',
  'activation_gradients',
] as const;
export type Category = (typeof CATEGORIES)[number];

/** One reading of the allocator's counters; bytes. `t` is ms since the run started. */
export interface MemorySample {
  t: number;
  allocated: number;
  reserved: number;
  active: number;
  requested: number;
  /** Bytes per category, indexed like CATEGORIES. */
  by: number[];
}

export interface PhaseMarker {
  t: number;
  edge: 'begin' | 'end';
  /** "iteration", "microbatch", "forward", "backward", "optimizer_step", "zero_grad", "module", ... */
  name: string;
  iteration: number; // -1 when not inside an iteration
  micro_batch: number; // -1 when not inside a micro-batch
  module: string; // module path for "module" phases, else ""
}

/** One allocator trace entry (only when the spec's history is on). */
export interface AllocatorEvent {
  t: number;
  action: string; // the native trace names: "alloc", "free", "segment_alloc", "segment_free", "segment_map", "segment_unmap", "oom", "empty_cache"
  addr: number;
  size: number; // requested bytes (alloc/free/oom), segment or range bytes otherwise
  /** The allocator's block for alloc/free: the request rounded, plus any remainder too small to split. Absent in older runs. */
  blockSize?: number;
  category: Category | '';
  module: string;
  /** The engine op that made the allocation ("addmm"); absent when unknown. */
  op?: string;
}

export type RunEvent = ({ type: 'phase' } & PhaseMarker) | ({ type: 'alloc' } & AllocatorEvent);

export type RunStatus = 'running' | 'done' | 'oom' | 'cancelled' | 'error' | 'interrupted';

export interface PhasePeak {
  phase: string; // "forward", "backward", "optimizer_step", ...
  iteration: number;
  allocated: number; // peak bytes inside the phase (absolute)
  reserved: number;
}

export interface OomReport {
  /** PyTorch's message, as torch.OutOfMemoryError prints it. */
  message: string;
  requested: number;
  phase: string;
  iteration: number;
  module: string;
  allocated: number;
  reserved: number;
  reserved_unallocated: number;
  capacity: number;
  by_category: Record<Category, number>;
  dominant: { category: Category; bytes: number; share: number };
  /** Changes the simulator ran and found to fit, cheapest first (remedyLine); empty for runs
   *  inside a sweep or fit, and for runs stored before these were checked, unchecked advice. */
  suggestions: string[];
}

/** What a run's store holds of its allocator history (store/decimate.ts). */
export interface HistoryKept {
  /** Allocator events the run recorded, and how many of them were stored. */
  recorded: number;
  kept: number;
  /** The per-run cap cut the history (thinning by iteration alone leaves this false). */
  truncated: boolean;
}

/** One line saying the stored history is not the whole run (CLI, panel, snapshot export); null when it is. */
export function historyNote(h: HistoryKept | undefined): string | null {
  if (!h || h.kept >= h.recorded) return null;
  const n = (x: number) => x.toLocaleString('en-US');
  return `allocator history: ${n(h.kept)} of ${n(h.recorded)} events kept (${h.truncated ? 'truncated at the per-run cap' : 'thinned by iteration'})`;
}

/** One distinct rank of a data-parallel run (the first rank of its rank_class): its peak
 *  reserved (the unbounded run's after an OOM) and its own verdict on the card. */
export interface RankVerdict {
  rank: number;
  peak_reserved: number;
  verdict: Verdict;
}

export interface RunSummary {
  status: RunStatus;
  /** Protocol readings, bytes relative to the baseline (allocated before the model is built). */
  readings: Record<string, number>;
  baseline: number;
  peak_allocated: number; // absolute bytes
  peak_reserved: number;
  peaks: PhasePeak[];
  duration_ms: number;
  sim_time_ms: number | null;
  /** model.parameters() summed, and those that train (fine-tuning freezes the rest). */
  parameters: number;
  trainable_parameters: number;
  /** The attention backend the run modelled (transformers: "flash", "efficient"), else null. */
  sdpa_backend: string | null;
  /** The card's CUDA context and library handles, bytes outside PyTorch's allocator
   *  (DeviceInfo.context): nvidia-smi shows peak_reserved + context. Absent in runs stored before. */
  context?: number;
  /** Data parallel (spec.parallel): each rank's readings; rank 0's are also `readings`. */
  ranks?: Record<string, number>[];
  /** ranks simulated: rank_class[r] is the rank whose simulation rank r shares. */
  rank_class?: number[];
  /** Readings PyTorch itself does not fix (DDP after its bucket rebuild: when NCCL's watchdog
   *  releases the first buckets is timing): [low, high] per key; every other reading is exact. */
  ranges?: Record<string, [number, number]>;
  /** NCCL's communicator buffers per rank, outside the allocator beside the context. */
  nccl?: number;
  /** Data parallel: each distinct rank's verdict (with `verdict`; absent where it is). */
  rank_verdicts?: RankVerdict[];
  oom: OomReport | null;
  /** Fits or not on the whole card; after an OOM what the spec needs (run on an unbounded
   *  device) and the shortfall. Absent in runs stored before, and in fit's probes. */
  verdict?: Verdict;
  error: string | null;
  samples: number;
  events: number;
  /** Present when the run recorded allocator history (spec.history); absent in runs stored before. */
  history?: HistoryKept;
}

export interface RunGroup {
  kind: 'sweep' | 'fit' | 'fixes';
  id: string;
  index: number;
  param: string;
  value: unknown;
}

export interface RunMeta {
  id: string;
  name: string;
  created: string; // ISO time
  updated: string;
  status: RunStatus;
  device: string;
  spec: Spec;
  group: RunGroup | null;
  /** Owner process, so a store opened later can tell a live run from an interrupted one. */
  pid: number;
  hostname: string;
  summary: RunSummary | null;
}

export interface RunRecord {
  meta: RunMeta;
  timeline: MemorySample[];
  events: RunEvent[];
  /** Set when the stored run was larger than a reply may be: the counts on disk (peaks kept). */
  decimated?: { samples: number; events: number };
}

/** `run.progress` payload: one batch per run per animation frame. */
export interface RunProgress {
  runId: string;
  samples: MemorySample[];
  events: RunEvent[];
  /** Samples merged away by backpressure since the last batch (peaks are kept). */
  dropped: number;
  latest: MemorySample | null;
  phase: string;
  iteration: number;
  /** 0, 1, 2... per run: a gap means a batch was lost on the way. */
  seq: number;
}

export interface RunDone {
  runId: string;
  meta: RunMeta;
  /** How many run.progress batches the run sent: fewer received means the live view is short. */
  batches?: number;
}

export interface RunErrorEvent {
  runId: string;
  message: string;
}

/** A run's exact outcome computed before running it (run.predict). */
export interface Prediction {
  status: 'done' | 'oom' | 'cancelled' | 'error';
  /** The simulated device it ran on ("sim:h100-80gb"; a CUDA card's own size for cuda:N). */
  device: string;
  /** Allocated before the model is built (the cuBLAS workspaces). */
  baseline: number;
  /** Peak allocated / reserved, absolute as in a run's summary (up to the OOM, for an OOM). */
  peak_allocated: number;
  peak_reserved: number;
  /** The spec's capacity cap, else the card's total. */
  capacity: number;
  /** The card's total and its CUDA context and library handles (DeviceInfo): the run fits
   *  when peak_reserved + context stays within total (and peak_reserved within capacity). */
  total: number;
  context: number;
  /** NCCL's buffers per rank (data parallel), on the card beside the context; absent on one GPU. */
  nccl?: number;
  readings: Record<string, number>;
  /** Readings PyTorch itself does not fix (DDP after its bucket rebuild): [low, high] per key;
   *  absent where every reading is exact. */
  ranges?: Record<string, [number, number]>;
  parameters: number;
  trainable_parameters: number;
  /** PyTorch's OOM message, or the engine's error. */
  message: string | null;
  /** Wall time of the simulation, ms. */
  duration_ms: number;
  /** Fits or not, on the whole card; for an OOM what the spec needs (run on an unbounded
   *  device) and the shortfall. Null when cancelled or the engine refused the spec. */
  verdict: Verdict | null;
}

export interface SweepRun {
  value: unknown;
  runId: string;
  status: RunStatus;
  peak_allocated: number;
  peak_reserved: number;
  oom: boolean;
  /** NCCL's buffers per rank (data parallel; 0 on one GPU). */
  nccl?: number;
}

/** A sweep, fit or fixes under way: `done` of `total` runs finished (a fit's total is at most
 *  that many, shrinking as the search narrows), and the row of the one that just finished. */
export type WorkProgress = { workId: string; done: number; total: number } & (
  { kind: 'sweep'; index: number; row: SweepRun } | { kind: 'fixes'; index: number; row: FixRow } | { kind: 'fit'; row: FitProbe }
);

export interface SweepResult {
  sweepId: string;
  param: string;
  runs: SweepRun[];
  /** The card's total and CUDA context (DeviceInfo): each run holds peak_reserved + context (+ nccl). */
  total: number;
  context: number;
}

/** One fix for varying lengths, as run: where reserved memory went and whether it OOMed. */
export interface FixRow {
  fix: string;
  label: string;
  runId: string;
  status: RunStatus;
  steps: number;
  /** Tokens the steps carry, and how many of them are padding the fix added. */
  tokens: number;
  padding: number;
  /** Absolute bytes, as the card sees them (the run summary's peaks). */
  peak_allocated: number;
  peak_reserved: number;
  /** memory_reserved() at the end over the reserved base (the protocol's reserved_end). */
  reserved_end: number | null;
  device_allocs: number | null;
  /** The iteration that ran out of memory (0-based), else null. */
  oom_iteration: number | null;
}

export interface FixesResult {
  fixesId: string;
  /** The spec's cap, else the card's total; the card's total and context (contract/card.ts). */
  capacity: number;
  total: number;
  context: number;
  rows: FixRow[];
}

export interface FitProbe {
  /** The searched parameter's value in this probe. */
  value: number;
  /** The probe's batch (the value itself when fitting the batch). */
  batch: number;
  ok: boolean;
  runId: string;
  peak_allocated: number;
  peak_reserved: number;
  /** NCCL's buffers per rank of this probe's run (data parallel; 0 on one GPU): on the card beside the context. */
  nccl?: number;
}

/** One value's allocated peak against what the allocator may reserve for it (fit's bound). */
export interface FitBoundPoint {
  value: number;
  /** Peak allocated bytes (an unbounded run: the same allocations as under any cap). */
  allocated: number;
  /** What the allocator may reserve: the cap, or the card less its context and NCCL's buffers. */
  limit: number;
}

export interface FitResult {
  fitId: string;
  /** The parameter searched: batch, seq (model.seq) or new_tokens (generation length). */
  param: string;
  /** The largest value probed that ran without OOM (0 when none did); world: the smallest that fits. */
  value: number;
  /** What doubling and bisection alone answered (they assume "fits" is monotone); absent for world. */
  bisected?: number;
  /** The allocated bound: the largest value whose allocated peak is within the limit, so that
   *  nothing above it can fit under any fragmentation; null for world. */
  bound?: number | null;
  /** The value just above the bound, whose allocated peak is over the limit (null: the bound is
   *  the largest value tried, max). */
  boundOver?: FitBoundPoint | null;
  /** False when the bound was measured on a generic simulated device shifted to the card's
   *  peak at a value that fit (no larger card allocates as this one): an estimate. */
  boundExact?: boolean;
  /** The unbounded runs made for the bound. */
  boundPoints?: FitBoundPoint[];
  /** Values above the answer up to the bound that were never probed (the probe budget ran out),
   *  as inclusive ranges; empty: every value there was probed and runs out. */
  unexplored?: Array<[number, number]>;
  /** The finest step at which every value above the answer up to the bound was probed (1: each
   *  value); null when not even the first pass finished. */
  stride?: number | null;
  /** Values below the answer probed after the search, since under a cap "fits" need not be
   *  monotone (fragmentation): steps of 1/16 of the answer down to the last fit doubling
   *  reached. Empty for world and when nothing fits. */
  checkedBelow: number[];
  /** Every value probed below the answer that ran out of memory: the answer fits, but not
   *  every value below it. */
  runsOutBelow: number[];
  /** The batch of that run: the answer when fitting the batch (0 when batch 1 does not fit). */
  batch: number;
  /** The spec's capacity cap, else the card's total. */
  capacity: number;
  /** The card's total and CUDA context (DeviceInfo): what fits leaves reserved + context within total. */
  total: number;
  context: number;
  probes: FitProbe[];
}

export interface CompareRow {
  id: string;
  name: string;
  status: RunStatus;
  spec: Record<string, string | number | boolean | null>;
  readings: Record<string, number>;
  peak_allocated: number;
  peak_reserved: number;
}
