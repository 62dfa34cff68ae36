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
  /** What a family with a nested model adds to name the preset in a spec (hf: {preset: id}). */
  nested?: Record<string, unknown>;
}

export interface FamilyDescription<K extends string = string, F extends Fields = Fields> {
  kind: K;
  label: string;
  summary: string;
  fields: F;
  /** Spec keys whose default differs for this family (transformers: batch 8, cross-entropy). */
  specDefaults: { batch?: number; loss?: 'sum' | 'mse' | 'cross_entropy' };
  /** A loss the model computes itself (hf: ForCausalLMLoss), shown instead of a choice. */
  ownLoss?: string;
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
  /** A family whose model holds more than flat fields (hf: a config.json, or a preset naming one). */
  nested?: NestedModel;
  /** The sizes the generic rules read (work limits, depth checks) when they are not the fields themselves. */
  sizes?(m: ArgsOf<F>): ModelSizes;
  /** LoRA targets that depend on the model (hf: the architecture's module names). */
  loraTargetsOf?(m: ArgsOf<F>): readonly string[];
  loraDefaultTargetsOf?(m: ArgsOf<F>): readonly string[];
  /** Whether finetune.dropout (LoRA dropout) applies. */
  loraDropout?: boolean;
  /** LoRA adapters also in inference and generation (serving a fine-tune unmerged); applies.ts. */
  loraServing?: boolean;
  /** The modes, checkpoint modes and KV caches the family supports, when fewer than all (hf). */
  modes?: readonly string[];
  checkpointModes?: readonly string[];
  caches?: readonly string[];
  /** The model's main facts for display (hf: architecture, layers, heads, vocabulary ...). */
  details?(m: ArgsOf<F>): { key: string; label: string; value: string }[];
  /** Rules between the family and the spec's own keys (hf: checkpoint, mode, cache). */
  checkSpec?(spec: FamilySpecView): Issue[];
}

/** The generic sizes of a model: what work limits and depth checks read. */
export interface ModelSizes {
  depth: number;
  dim?: number;
  ffn?: number;
  vocab?: number;
  seq?: number;
  heads?: number;
}

export interface NestedModel {
  /** Keys beyond `fields` the model object may hold. */
  keys: readonly string[];
  /** One line for help texts: what the keys hold. */
  help: string;
  /** The completed model's nested part from what was given (fields already filled), or why not. */
  complete(given: Readonly<Record<string, unknown>>): { ok: true; nested: Record<string, unknown> } | { ok: false; issues: Issue[] };
}

/** The spec keys a family's checkSpec reads. */
export interface FamilySpecView {
  checkpoint: unknown;
  mode: string;
  cache: string;
  loss: string;
  prompt: number;
  new_tokens: number;
  model: Record<string, unknown>;
}

type IntField<F extends Fields> = { [K in keyof F & string]: F[K] extends { type: 'int' } ? K : never }[keyof F & string];

export interface Roles<F extends Fields> {
  /** The blocks one pass goes through: layer passes = iterations x accum x depth. A family
   *  that keeps its sizes in a nested object (hf: the config) reads it with a function. */
  depth: IntField<F> | ((m: ArgsOf<F>) => number);
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
