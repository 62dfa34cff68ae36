// The spec keys a sweep may vary and fit may search, and where each lives in a spec:
// model fields (any family's, from the catalogue) go inside model, the LoRA rank inside
// finetune, the rest at the top.
import type { SpecInput } from './spec';
import { DEFAULT_MODEL_KIND, FAMILY_TABLE, families, fieldNames, loraAlphaDefault, seqField, type ModelKind } from './catalogue';

type Families = typeof FAMILY_TABLE;
export type ModelFieldName = { [K in ModelKind]: keyof Families[K]['fields'] }[ModelKind] & string;

const TOP = [
  'batch',
  'checkpoint',
  'precision',
  'weights',
  'optimizer',
  'accum',
  'iterations',
  'mode',
  'prompt',
  'new_tokens',
  'cache',
] as const;
const MODEL_FIELDS = fieldNames(families()) as ModelFieldName[];

export type SweepParam = (typeof TOP)[number] | ModelFieldName | 'rank' | 'world';
export const SWEEP_PARAMS = [...TOP, ...MODEL_FIELDS, 'rank', 'world'] as [SweepParam, ...SweepParam[]];

/** Integer parameters memory grows with, so "the largest that fits" is a bisection; and
 *  world (data parallel), which memory per rank shrinks with: "the smallest that fits". */
export const FIT_PARAMS = ['batch', 'seq', 'new_tokens', 'world'] as const;
export type FitParam = (typeof FIT_PARAMS)[number];

const isModelField = (p: string): p is ModelFieldName => (MODEL_FIELDS as string[]).includes(p) || p === 'seq';
/** fit's and sweeps' "seq" is the family's sequence role, whatever the family calls it. */
const modelField = (kind: string, p: string): string => (p === 'seq' ? (seqField(kind) ?? p) : p);

/** The raw input spec with one parameter set. */
export function withParam(input: SpecInput, param: SweepParam | FitParam, value: unknown): SpecInput {
  const copy: Record<string, unknown> = { ...(input as Record<string, unknown>) };
  if (isModelField(param)) {
    const model = { ...((copy.model as Record<string, unknown> | undefined) ?? { kind: DEFAULT_MODEL_KIND }) };
    model[modelField(String(model.kind), param)] = value;
    copy.model = model;
  } else if (param === 'rank') {
    const ft = { ...((copy.finetune as Record<string, unknown> | undefined) ?? {}) };
    // An alpha that followed the old rank (a completed spec's default) follows the new one.
    if (ft.method === 'lora' && ft.alpha !== undefined && ft.alpha === loraAlphaDefault(Number(ft.rank))) delete ft.alpha;
    copy.finetune = { ...(ft.method === 'lora' ? ft : { method: 'lora' }), rank: value };
  } else if (param === 'world') {
    // the number of ranks of the spec's data-parallel setup (FSDP2 when it has none)
    const par = (copy.parallel as Record<string, unknown> | null | undefined) ?? { kind: 'fsdp2' };
    copy.parallel = { ...par, world: value };
  } else copy[param] = value;
  return copy as SpecInput;
}

/** The parameter's value in a validated-or-raw spec (undefined when it has none). */
export function paramValue(input: SpecInput, param: SweepParam | FitParam): unknown {
  const r = input as Record<string, unknown>;
  if (isModelField(param)) {
    const model = r.model as Record<string, unknown> | undefined;
    return model === undefined ? undefined : model[modelField(String(model.kind ?? DEFAULT_MODEL_KIND), param)];
  }
  if (param === 'rank') return (r.finetune as Record<string, unknown> | undefined)?.rank;
  if (param === 'world') return (r.parallel as Record<string, unknown> | null | undefined)?.world;
  return r[param];
}
