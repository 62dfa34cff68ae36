// What a model family is to the contract: its fields, the spec defaults it changes, what it
// supports (checkpointing, fine-tuning, generation), its cross-field rules, presets and
// parameter count. One file per family in families/, registered in index.ts.
import type { ArgsOf, EnumOption, Fields } from './fields';

/** A cross-field problem: where (spec path), why (allowed values) and what was given. */
export interface Issue {
  path: (string | number)[];
  message: string;
  input?: unknown;
}

export interface Preset<A> {
  id: string;
  label: string;
  model: A;
}

export interface FamilyDescription<K extends string = string, F extends Fields = Fields> {
  kind: K;
  label: string;
  summary: string;
  fields: F;
  /** Spec keys whose default differs for this family (transformers: batch 8, cross-entropy). */
  specDefaults: { batch?: number; loss?: 'sum' | 'mse' | 'cross_entropy' };
  /** The losses the family trains on. */
  losses: readonly ('sum' | 'mse' | 'cross_entropy')[];
  /** Its model is a stack of blocks that checkpointing and freezing work on. */
  blocks: boolean;
  /** A token model: input (batch, seq) of token ids; fine-tuning, generation and per-iteration shapes apply. */
  transformer: boolean;
  /** Which of its fields play which part for generic code (work limits, sweeps, fit), as
   *  transformers' attribute_map does: so a family may name its fields as it likes. */
  roles: Roles<F>;
  /** The projections LoRA can wrap (empty: no LoRA), and the ones it wraps by default. */
  loraTargets: readonly EnumOption[];
  loraDefaultTargets: readonly string[];
  presets: readonly Preset<ArgsOf<F>>[];
  /** Rules between the model's own fields, checked after each field's range. */
  check(m: ArgsOf<F>): Issue[];
  /** A short name for run lists ("gpt 768x12 seq 1024"). */
  name(m: ArgsOf<F>): string;
  /** Number of parameters (tied weights counted once), as model.parameters() sums them. */
  parameters(m: ArgsOf<F>): number;
}

type IntField<F extends Fields> = { [K in keyof F & string]: F[K] extends { type: 'int' } ? K : never }[keyof F & string];

export interface Roles<F extends Fields> {
  /** The blocks one pass goes through: layer passes = iterations x accum x depth. */
  depth: IntField<F>;
  /** The sequence length of a token model (absent: one row per sample). */
  seq?: IntField<F>;
  /** The fields that are a tensor row's width (features, vocabulary, MLP width). */
  widths: readonly IntField<F>[];
  /** Widths the fields imply without naming them (gpt's MLP: 4 x dim). */
  derivedWidths?: (m: ArgsOf<F>) => number[];
}

/** Keeps the literal kind and field types of a description. */
export function defineFamily<const K extends string, const F extends Fields>(d: FamilyDescription<K, F>): FamilyDescription<K, F> {
  return d;
}

/** Attention's checks, shared by the transformer families: the fused kernels' head_dim limits. */
export function headChecks(dim: number, heads: number): Issue[] {
  if (dim % heads !== 0) return [{ path: ['model', 'heads'], message: `must divide model.dim (${dim}) evenly`, input: heads }];
  const headDim = dim / heads;
  if (headDim % 8 !== 0 || headDim > 256)
    return [
      {
        path: ['model', 'heads'],
        message: `head_dim = dim / heads must be a multiple of 8 and at most 256 (the fused attention kernels' limits); dim ${dim} / heads ${heads} = ${headDim}`,
        input: heads,
      },
    ];
  return [];
}
