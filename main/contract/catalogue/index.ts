// The catalogue: every model family and optimizer the lab knows, each described once (its
// own file), registered here by one line. The contract's spec schema, the panel's fields,
// the CSV columns and the CLI help are derived from these tables.
import type { FamilyDescription, ModelSizes } from './family';
import type { ArgsOf, Fields } from './fields';
import type { OptimizerDescription } from './optimizer';
import type { HfConfig } from './hf/architectures';
import { mlp } from './families/mlp';
import { residual } from './families/residual';
import { gpt } from './families/gpt';
import { llama } from './families/llama';
import { hf } from './families/hf';
import { none } from './optimizers/none';
import { sgd } from './optimizers/sgd';
import { adam } from './optimizers/adam';
import { adamw } from './optimizers/adamw';

export const FAMILY_TABLE = { mlp, residual, gpt, llama, hf } as const;
export const OPTIMIZER_TABLE = { none, sgd, adam, adamw } as const;

type Families = typeof FAMILY_TABLE;
type Optimizers = typeof OPTIMIZER_TABLE;
export type ModelKind = keyof Families;
export type OptimizerKind = keyof Optimizers;

/** What a family's model holds beyond its flat fields (hf: the completed config.json). */
interface NestedParts {
  hf: { config: HfConfig };
}
interface NestedInputs {
  hf: { config?: Record<string, unknown>; preset?: string };
}
type Nested<K, T> = K extends keyof T ? T[K] : unknown;

/** A model as the validated spec carries it: its kind and every one of its fields. */
export type ModelSpec = { [K in ModelKind]: { kind: K } & ArgsOf<Families[K]['fields']> & Nested<K, NestedParts> }[ModelKind];
/** A model as a user may write it: the kind, any of its fields. */
export type ModelInput = {
  [K in ModelKind]: { kind: K } & Partial<ArgsOf<Families[K]['fields']>> & Nested<K, NestedInputs>;
}[ModelKind];
export type OptimizerSpec = { [K in OptimizerKind]: { kind: K } & ArgsOf<Optimizers[K]['fields']> }[OptimizerKind];
export type OptimizerInput = { [K in OptimizerKind]: { kind: K } & Partial<ArgsOf<Optimizers[K]['fields']>> }[OptimizerKind];

export const MODEL_KINDS = Object.keys(FAMILY_TABLE) as [ModelKind, ...ModelKind[]];
export const OPTIMIZER_KINDS = Object.keys(OPTIMIZER_TABLE) as [OptimizerKind, ...OptimizerKind[]];

/** Untyped views of the tables, for code that walks every entry. */
export const families = (): FamilyDescription[] => Object.values(FAMILY_TABLE) as unknown as FamilyDescription[];
export const optimizers = (): OptimizerDescription[] => Object.values(OPTIMIZER_TABLE) as unknown as OptimizerDescription[];

export function familyOf(kind: string): FamilyDescription | undefined {
  return (FAMILY_TABLE as unknown as Record<string, FamilyDescription>)[kind];
}
export function optimizerOf(kind: string): OptimizerDescription | undefined {
  return (OPTIMIZER_TABLE as unknown as Record<string, OptimizerDescription>)[kind];
}

/** Every field name of the given descriptions, first-seen order (CSV columns, sweep parameters). */
/** A model's sizes as generic code reads them, through its family's roles. */
export interface ModelDims {
  depth: number;
  /** null: not a token model. */
  seq: number | null;
  widths: number[];
}

export function modelDims(model: { kind: string }): ModelDims {
  const f = familyOf(model.kind);
  if (!f) throw new Error(`unknown model kind "${model.kind}"`);
  const m = model as unknown as Record<string, number>;
  const r = f.roles;
  return {
    depth: typeof r.depth === 'function' ? r.depth(m as never) : m[r.depth],
    seq: r.seq === undefined ? null : m[r.seq],
    widths: [...r.widths.map((k) => m[k]), ...(r.derivedWidths?.(m as never) ?? [])],
  };
}

/** The model field that is a family's sequence length, if it has one. */
export const seqField = (kind: string): string | undefined => familyOf(kind)?.roles.seq;

export function fieldNames(list: readonly { fields: Fields }[]): string[] {
  const out: string[] = [];
  for (const d of list) for (const k of Object.keys(d.fields)) if (!out.includes(k)) out.push(k);
  return out;
}

/** A short name for the model, for run lists. */
export function modelName(model: ModelSpec): string {
  return familyOf(model.kind)!.name(model as unknown as Record<string, number>);
}

/** The generic sizes of a model (depth, width, ...), whatever its family keeps them in. */
export function modelSizes(model: { kind: string }): ModelSizes {
  const fam = familyOf(model.kind);
  return (fam?.sizes ? fam.sizes(model as unknown as Record<string, number>) : model) as ModelSizes;
}

/** The projections LoRA may wrap in this model, and the ones it wraps by default. */
export function loraTargetsOf(model: ModelSpec): readonly string[] {
  const fam = familyOf(model.kind)!;
  return fam.loraTargetsOf ? fam.loraTargetsOf(model as unknown as Record<string, number>) : fam.loraTargets.map((t) => t.value);
}
export function loraDefaultTargetsOf(model: ModelSpec): readonly string[] {
  const fam = familyOf(model.kind)!;
  return fam.loraDefaultTargetsOf ? fam.loraDefaultTargetsOf(model as unknown as Record<string, number>) : fam.loraDefaultTargets;
}

/** The model's parameter count (tied weights once), before fine-tuning adds adapters. */
export function parameterCount(model: ModelSpec): number {
  return familyOf(model.kind)!.parameters(model as unknown as Record<string, number>);
}

export type { FamilyDescription, Issue, Preset, ModelSizes, NestedModel, FamilySpecView } from './family';
export { HF_PRESETS, type HfPreset } from './hf/presets';
export { HF_ARCHITECTURES, type HfConfig, type HfValue } from './hf/architectures';
export { completeHfConfig, hfSizes } from './hf/config';
export { hfLoraParameters } from './hf/parameters';
export type { OptimizerDescription } from './optimizer';
export * from './fields';
export * from './limits';
export * from './spec_fields';
export * from './finetune';
export * from './parallel';
export * from './applies';
