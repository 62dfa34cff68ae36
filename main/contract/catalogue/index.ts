// The catalogue: every model family and optimizer the lab knows, each described once (its
// own file), registered here by one line. The contract's spec schema, the panel's fields,
// the CSV columns and the CLI help are derived from these tables.
import type { FamilyDescription } from './family';
import type { ArgsOf, Fields } from './fields';
import type { OptimizerDescription } from './optimizer';
import { mlp } from './families/mlp';
import { residual } from './families/residual';
import { gpt } from './families/gpt';
import { llama } from './families/llama';
import { none } from './optimizers/none';
import { sgd } from './optimizers/sgd';
import { adam } from './optimizers/adam';
import { adamw } from './optimizers/adamw';

export const FAMILY_TABLE = { mlp, residual, gpt, llama } as const;
export const OPTIMIZER_TABLE = { none, sgd, adam, adamw } as const;

type Families = typeof FAMILY_TABLE;
type Optimizers = typeof OPTIMIZER_TABLE;
export type ModelKind = keyof Families;
export type OptimizerKind = keyof Optimizers;

/** A model as the validated spec carries it: its kind and every one of its fields. */
export type ModelSpec = { [K in ModelKind]: { kind: K } & ArgsOf<Families[K]['fields']> }[ModelKind];
/** A model as a user may write it: the kind, any of its fields. */
export type ModelInput = { [K in ModelKind]: { kind: K } & Partial<ArgsOf<Families[K]['fields']>> }[ModelKind];
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
export function fieldNames(list: readonly { fields: Fields }[]): string[] {
  const out: string[] = [];
  for (const d of list) for (const k of Object.keys(d.fields)) if (!out.includes(k)) out.push(k);
  return out;
}

/** A short name for the model, for run lists. */
export function modelName(model: ModelSpec): string {
  return familyOf(model.kind)!.name(model as unknown as Record<string, number>);
}

/** The model's parameter count (tied weights once), before fine-tuning adds adapters. */
export function parameterCount(model: ModelSpec): number {
  return familyOf(model.kind)!.parameters(model as unknown as Record<string, number>);
}

export type { FamilyDescription, Issue, Preset } from './family';
export type { OptimizerDescription } from './optimizer';
export * from './fields';
export * from './limits';
export * from './spec_fields';
export * from './finetune';
export * from './parallel';
