// Data parallel: the spec's `parallel` key. DDP replicates the model on every rank
// (DistributedDataParallel: gradient buckets); FSDP2 shards it (fully_shard on every
// block, then the root). `batch` is per rank. Each kind's options, with PyTorch's defaults.
import type { Fields } from './fields';

export const PARALLEL_KINDS = ['ddp', 'fsdp2'] as const;
export type ParallelKind = (typeof PARALLEL_KINDS)[number];

/** The most ranks a spec may name (the simulation runs once per distinct rank). */
export const MAX_WORLD = 4096;

const MP_DTYPES = [
  { value: 'bf16', label: 'bf16' },
  { value: 'fp16', label: 'fp16' },
  { value: 'fp32', label: 'fp32' },
] as const;

export const PARALLEL_FIELDS = {
  world: {
    type: 'int',
    min: 1,
    max: MAX_WORLD,
    default: 2,
    label: 'GPUs (world size)',
    meaning: 'ranks in the process group',
    unit: 'GPUs',
  },
} as const satisfies Fields;

export const PARALLEL_KIND_FIELDS = {
  ddp: {
    bucket_cap_mb: {
      type: 'number',
      min: 0,
      max: 1 << 20,
      minExclusive: true,
      default: 25,
      label: 'Bucket size',
      meaning: 'DistributedDataParallel(bucket_cap_mb): gradients are all-reduced in buckets of about this size',
      unit: 'MiB',
    },
    gradient_as_bucket_view: {
      type: 'bool',
      default: false,
      label: 'Gradients as bucket views',
      meaning: 'DistributedDataParallel(gradient_as_bucket_view): .grad points into the buckets instead of owning a copy',
    },
  },
  fsdp2: {
    reshard_after_forward: {
      type: 'bool',
      default: true,
      label: 'Reshard after forward',
      meaning: 'fully_shard(reshard_after_forward): free the unsharded parameters after each forward (re-gather in backward)',
    },
  },
} as const satisfies Record<ParallelKind, Fields>;

/** MixedPrecisionPolicy dtypes: null leaves the parameters' own dtype. */
export const MP_DTYPE_VALUES = MP_DTYPES.map((o) => o.value);
export type MpDtype = (typeof MP_DTYPE_VALUES)[number];

export type ParallelSpec =
  | { kind: 'ddp'; world: number; bucket_cap_mb: number; gradient_as_bucket_view: boolean }
  | { kind: 'fsdp2'; world: number; reshard_after_forward: boolean; param_dtype: MpDtype | null; reduce_dtype: MpDtype | null };

export type ParallelInput =
  | { kind: 'ddp'; world?: number; bucket_cap_mb?: number; gradient_as_bucket_view?: boolean }
  | { kind: 'fsdp2'; world?: number; reshard_after_forward?: boolean; param_dtype?: MpDtype | null; reduce_dtype?: MpDtype | null };

/** The kinds the simulated device runs. */
export const SIMULATED_PARALLEL_KINDS: readonly ParallelKind[] = ['ddp', 'fsdp2'];

export function completeParallel(p: ParallelInput | null | undefined): ParallelSpec | null {
  if (!p) return null;
  const world = p.world ?? PARALLEL_FIELDS.world.default;
  if (p.kind === 'ddp') {
    const f = PARALLEL_KIND_FIELDS.ddp;
    return {
      kind: 'ddp',
      world,
      bucket_cap_mb: p.bucket_cap_mb ?? f.bucket_cap_mb.default,
      gradient_as_bucket_view: p.gradient_as_bucket_view ?? f.gradient_as_bucket_view.default,
    };
  }
  return {
    kind: 'fsdp2',
    world,
    reshard_after_forward: p.reshard_after_forward ?? PARALLEL_KIND_FIELDS.fsdp2.reshard_after_forward.default,
    param_dtype: p.param_dtype ?? null,
    reduce_dtype: p.reduce_dtype ?? null,
  };
}

/** "fsdp2 x8", "ddp x2": a short label for names and tables. */
export function parallelLabel(p: ParallelSpec | null): string {
  return p ? `${p.kind} x${p.world}` : 'single GPU';
}
