// How the data-parallel kinds and FSDP2's MixedPrecisionPolicy are offered in a form: each
// kind's label and meaning, whether the simulator runs it yet (SIMULATED_PARALLEL_KINDS: a
// kind the engine gains is offered by adding it there), and the dtype choices, "" standing
// for null (the parameters' own dtype).
import type { EnumField } from './fields';
import { MP_DTYPE_VALUES, PARALLEL_KINDS, SIMULATED_PARALLEL_KINDS, type ParallelKind } from './parallel';

export const PARALLEL_KIND_INFO: Record<ParallelKind, { label: string; meaning: string }> = {
  ddp: {
    label: 'DDP (DistributedDataParallel)',
    meaning: 'every rank holds the whole model; gradients are all-reduced in buckets',
  },
  fsdp2: {
    label: 'FSDP2 (fully_shard)',
    meaning: 'parameters, gradients and optimizer state sharded over the ranks; each block all-gathered for its forward and backward',
  },
};

export interface ParallelChoice {
  kind: ParallelKind;
  label: string;
  meaning: string;
  /** False while the simulator does not run this kind (offered, disabled). */
  simulated: boolean;
}

export function parallelChoices(): ParallelChoice[] {
  return PARALLEL_KINDS.map((kind) => ({ kind, ...PARALLEL_KIND_INFO[kind], simulated: SIMULATED_PARALLEL_KINDS.includes(kind) }));
}

const mpField = (label: string, meaning: string, none: string): EnumField => ({
  type: 'enum',
  label,
  meaning,
  default: '',
  options: [{ value: '', label: none }, ...MP_DTYPE_VALUES.map((v) => ({ value: v, label: v }))],
});

/** FSDP2's MixedPrecisionPolicy: "" is null (no cast). */
export const MP_POLICY_FIELDS = {
  param_dtype: mpField(
    'Parameter dtype (all-gather)',
    'MixedPrecisionPolicy(param_dtype): the dtype the unsharded parameters are gathered and computed in',
    "the parameters' own (fp32)",
  ),
  reduce_dtype: mpField(
    'Gradient reduce dtype',
    'MixedPrecisionPolicy(reduce_dtype): the dtype gradients are reduce-scattered in',
    'as the parameter dtype',
  ),
} as const;
