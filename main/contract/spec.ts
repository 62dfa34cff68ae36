// The experiment spec: one JSON document describing a run, validated before anything
// starts and completed to the one full shape the engine reads (native/engine/spec/run_spec.h).
// Fields, ranges and defaults come from the catalogue (main/contract/catalogue); this file
// turns them into a schema. Every rejection names the field, the allowed values or range,
// and what was given.
import { z } from 'zod';
import { AllocConfError, parseAllocConf } from './alloc_conf';
import {
  CHECKPOINT_MODES,
  DEFAULT_DEVICE,
  DEFAULT_MODEL_KIND,
  DEFAULT_OPTIMIZER_KIND,
  FAMILY_TABLE,
  FINETUNE_FIELDS,
  FINETUNE_METHODS,
  LIMITS,
  MODE_DEFAULTS,
  MODEL_KINDS,
  OPTIMIZER_KINDS,
  OPTIMIZER_TABLE,
  MP_DTYPE_VALUES,
  PARALLEL_FIELDS,
  PARALLEL_KINDS,
  PARALLEL_KIND_FIELDS,
  SIMULATED_PARALLEL_KINDS,
  SPEC_FIELDS,
  completeParallel,
  SHAPE_DRAW_FIELDS,
  allowedText,
  familyOf,
  modelDims,
  fillFields,
  finetuneMethodsFor,
  loraAlphaDefault,
  loraDefaultTargetsOf,
  loraTargetsOf,
  optimizerOf,
  type Field,
  type Fields,
  type FamilySpecView,
  type FinetuneMethod,
  type Issue,
  type ModelInput,
  type ModelSpec,
  type OptimizerInput,
  type OptimizerSpec,
  type ParallelInput,
  type ParallelSpec,
} from './catalogue';
import { checkSpecLimits } from './limits';
import {
  SHAPE_ORDERS,
  drawMaxSeq,
  histogramTotal,
  isDraw,
  shapeCount,
  shapeSteps,
  type ShapeDraw,
  type ShapeStep,
  type Shapes,
} from './shapes';
import { clipList, preview, quote } from './echo';
import { specSizeProblem } from './spec_bounds';
import { parseSize } from './units';

export { LIMITS, CHECKPOINT_MODES, CACHES, DEFAULT_MODEL_KIND, DEFAULT_OPTIMIZER_KIND, DEFAULT_DEVICE } from './catalogue';
export { PRECISIONS, WEIGHTS, MODES, LOSSES } from './catalogue';
export type { ModelSpec, OptimizerSpec, ModelKind, OptimizerKind } from './catalogue';
export { parseSize } from './units';
export const OPTIMIZERS = OPTIMIZER_KINDS;

type SpecFields = typeof SPEC_FIELDS;
type FieldValue<K extends keyof SpecFields> = SpecFields[K] extends { type: 'enum'; options: readonly { value: infer V }[] }
  ? V
  : SpecFields[K] extends { type: 'bool' }
    ? boolean
    : number;

export type Checkpoint = (typeof CHECKPOINT_MODES)[number] | { every: number };
/** dropout (LoRA dropout) is present for the families that have it (hf), absent otherwise. */
export type FinetuneSpec =
  | { method: 'full' }
  | { method: 'freeze'; blocks: number }
  | { method: 'lora'; rank: number; alpha: number; targets: string[]; dropout?: number };
export type FinetuneInput =
  | { method: 'full' }
  | { method: 'freeze'; blocks?: number }
  | { method: 'lora'; rank?: number; alpha?: number; targets?: string[]; dropout?: number };
export type { ShapeStep, ShapeDraw, Shapes } from './shapes';

/** A validated spec: every field present, in the order the engine's reader lists them. */
export interface Spec {
  model: ModelSpec;
  batch: number;
  iterations: number;
  accum: number;
  checkpoint: Checkpoint;
  precision: FieldValue<'precision'>;
  weights: FieldValue<'weights'>;
  optimizer: OptimizerSpec;
  set_to_none: boolean;
  mode: FieldValue<'mode'>;
  keep_loss_graph: boolean;
  loss: FieldValue<'loss'>;
  finetune: FinetuneSpec;
  shapes: Shapes | null;
  prompt: number;
  new_tokens: number;
  cache: FieldValue<'cache'>;
  empty_cache_every: number;
  alloc_conf: string;
  device: string;
  capacity: number | null;
  history: boolean;
  /** Data parallel over `world` ranks (batch is per rank); null: one GPU. */
  parallel: ParallelSpec | null;
}

/** A draw as written: batch, steps, seed, pad_to and order may be left to their defaults. */
export type ShapeDrawInput = Partial<Omit<ShapeDraw, 'seq'>> & { seq: ShapeDraw['seq'] };

/** A spec as written by a user: every key optional; optimizer may be just its kind. */
export type SpecInput = {
  [K in keyof SpecFields]?: FieldValue<K>;
} & {
  model?: ModelInput;
  checkpoint?: Checkpoint;
  optimizer?: OptimizerSpec['kind'] | OptimizerInput;
  finetune?: FinetuneInput;
  shapes?: ShapeStep[] | ShapeDrawInput | null;
  alloc_conf?: string;
  device?: string;
  capacity?: number | string | null;
  parallel?: ParallelInput | null;
};

// ---- field schemas from the catalogue's descriptions -------------------------------

function zField(f: Field): z.ZodType {
  const error = `must be ${allowedText(f)}`;
  switch (f.type) {
    case 'int':
      return z.number({ error }).int({ error }).min(f.min, { error }).max(f.max, { error });
    case 'number': {
      const n = z.number({ error });
      const lo = f.minExclusive ? n.gt(f.min, { error }) : n.gte(f.min, { error });
      return f.maxExclusive ? lo.lt(f.max, { error }) : lo.lte(f.max, { error });
    }
    case 'bool':
      return z.boolean({ error });
    case 'enum':
      return z.enum(f.options.map((o) => o.value) as [string, ...string[]], { error });
  }
}

const optionalFields = (fields: Fields) => Object.fromEntries(Object.entries(fields).map(([k, f]) => [k, zField(f).optional()]));
const quoted = (xs: readonly string[]) => xs.map((x) => `"${x}"`).join(', ');
const orList = (xs: readonly string[]) => (xs.length < 2 ? quoted(xs) : `${quoted(xs.slice(0, -1))} or "${xs[xs.length - 1]}"`);

// A family's nested keys (hf: config, preset) are checked by its own completion step.
function nestedKeys(kind: string): Record<string, z.ZodType> {
  const keys = familyOf(kind)?.nested?.keys ?? [];
  return Object.fromEntries(keys.map((k) => [k, z.unknown().optional()]));
}

const Model = z.discriminatedUnion(
  'kind',
  MODEL_KINDS.map((k) =>
    z.strictObject({ kind: z.literal(k), ...optionalFields(FAMILY_TABLE[k].fields), ...nestedKeys(k) }),
  ) as unknown as [z.ZodObject, ...z.ZodObject[]],
  { error: `model.kind must be ${orList(MODEL_KINDS)}` },
);

const OptimizerObject = z.discriminatedUnion(
  'kind',
  OPTIMIZER_KINDS.map((k) => z.strictObject({ kind: z.literal(k), ...optionalFields(OPTIMIZER_TABLE[k].fields) })) as unknown as [
    z.ZodObject,
    ...z.ZodObject[],
  ],
  { error: `optimizer.kind must be ${orList(OPTIMIZER_KINDS)}` },
);
const Optimizer = z.union([z.enum(OPTIMIZER_KINDS), OptimizerObject], {
  error: `must be one of ${quoted(OPTIMIZER_KINDS)} or {"kind": ..., "lr": ..., "foreach": ...}`,
});

const Checkpoint = z.union(
  [
    z.enum(CHECKPOINT_MODES),
    z.strictObject({ every: zField({ type: 'int', min: 1, max: LIMITS.depth, default: 1, label: '', meaning: '' }) }),
  ],
  {
    error: `must be ${quoted(CHECKPOINT_MODES)} or {"every": n} with n from 1 to ${LIMITS.depth}`,
  },
);

const F = FINETUNE_FIELDS;
const Finetune = z.discriminatedUnion(
  'method',
  [
    z.strictObject({ method: z.literal('full') }),
    z.strictObject({ method: z.literal('freeze'), blocks: zField(F.blocks).optional() }),
    z.strictObject({
      method: z.literal('lora'),
      rank: zField(F.rank).optional(),
      alpha: zField(F.alpha).optional(),
      targets: z
        .array(z.string({ error: 'must be a list of projection names' }), { error: 'must be a list of projection names' })
        .min(1, { error: 'must name at least one projection' })
        .max(16)
        .optional(),
      dropout: zField(F.dropout).optional(),
    }),
  ],
  { error: `finetune.method must be ${orList(FINETUNE_METHODS.map((m) => m.value))}` },
);

const D = SHAPE_DRAW_FIELDS;
const SHAPE_LIST_ERROR =
  'must be null, a list of {"batch": b, "seq": t}, or a draw {"seq": {"min", "max"} | {"histogram": [[length, weight], ...]}, "batch", "steps", "seed", "pad_to", "order"}';
const ShapeList = z
  .array(
    z.strictObject({
      batch: zField(SPEC_FIELDS.batch),
      seq: zField({ type: 'int', min: 1, max: LIMITS.seq, default: 1, label: '', meaning: '' }),
    }),
    { error: SHAPE_LIST_ERROR },
  )
  .min(1, { error: 'must list at least one {"batch", "seq"}' })
  .max(LIMITS.shapes, { error: `must list at most ${LIMITS.shapes} steps` });
const HistogramEntry = z.tuple(
  [zField(D.max), z.number({ error: 'weight must be a number' }).min(0, { error: 'weight must not be negative' }).finite()],
  {
    error: 'must be [length, weight]',
  },
);
const SeqDrawSchema = z.union(
  [
    z
      .strictObject({ min: zField(D.min), max: zField(D.max) })
      .refine((r) => (r.min as number) <= (r.max as number), { error: 'min must be at most max', path: ['min'] }),
    z.strictObject({
      histogram: z
        .array(HistogramEntry, { error: 'must be a list of [length, weight]' })
        .min(1, { error: 'must list at least one [length, weight]' })
        .max(LIMITS.shapes, { error: `must list at most ${LIMITS.shapes} lengths` })
        .refine((h) => h.some(([, w]) => w > 0), { error: 'needs at least one positive weight' })
        // Each weight finite can still sum to Infinity; every draw would then pick the first length.
        .refine((h) => Number.isFinite(histogramTotal(h)), {
          error: 'weights must sum to a finite number: scale them down (only their ratios matter)',
        }),
    }),
  ],
  { error: 'seq must be {"min": a, "max": b} or {"histogram": [[length, weight], ...]}' },
);
const ShapeDrawSchema = z.strictObject({
  batch: zField(D.batch).optional(),
  steps: zField(D.steps).optional(),
  seed: zField(D.seed).optional(),
  seq: SeqDrawSchema,
  pad_to: zField(D.pad_to).optional(),
  order: z.enum(SHAPE_ORDERS, { error: `must be ${SHAPE_ORDERS.map((o) => `"${o}"`).join(' or ')}` }).optional(),
});
const ShapesSchema = z.union([ShapeList, ShapeDrawSchema], { error: SHAPE_LIST_ERROR }).nullable();

// PYTORCH_CUDA_ALLOC_CONF: keys and values read by the engine's parser's TypeScript twin.
const AllocConf = z
  .string({ error: 'must be a string like "max_split_size_mb:128,expandable_segments:True"' })
  .max(1024, { error: 'must be at most 1024 characters' })
  .superRefine((s, ctx) => {
    if (s.length > 1024) return; // refused above; its keys are not worth reading
    try {
      parseAllocConf(s);
    } catch (err) {
      if (!(err instanceof AllocConfError)) throw err;
      ctx.addIssue({ code: 'custom', message: err.message });
    }
  });

// "sim:<preset>", "sim:custom:<size>" (a generic GPU), "sim:custom:<size>@<preset>" (that preset's GPU
// at another size, no context) or "cuda:<ordinal>"; the device layer checks the preset exists.
const Device = z
  .string({ error: 'must be a string like "sim:h100-80gb" or "cuda:0"' })
  .regex(/^(sim:[a-z0-9][a-z0-9.-]{0,40}|sim:custom:[0-9.]+\s*[A-Za-z]{0,3}(@[a-z0-9][a-z0-9.-]{0,40})?|cuda:[0-9]{1,2})$/, {
    error: 'must be "sim:<preset>" (e.g. "sim:h100-80gb"), "sim:custom:<size>", "sim:custom:<size>@<preset>" or "cuda:<n>"',
  });

const Capacity = z.union([z.number(), z.string()], { error: 'must be a size like "20GiB" or a number of bytes' }).transform((v, ctx) => {
  const bytes = typeof v === 'number' ? v : parseSize(v);
  if (bytes === null) {
    ctx.addIssue({
      code: 'custom',
      message: `${quote(String(v))} is not a size: use a number with B, KB, MB, GB, TB, KiB, MiB, GiB or TiB`,
    });
    return z.NEVER;
  }
  if (!Number.isFinite(bytes) || bytes < LIMITS.capacityMin || bytes > LIMITS.capacityMax) {
    ctx.addIssue({ code: 'custom', message: 'must be from 1 MiB to 1 PiB' });
    return z.NEVER;
  }
  return Math.floor(bytes);
});

const MpDtype = z.enum(MP_DTYPE_VALUES as unknown as [string, ...string[]], { error: `must be ${orList(MP_DTYPE_VALUES)} or null` });
const Parallel = z.discriminatedUnion(
  'kind',
  [
    z.strictObject({ kind: z.literal('ddp'), ...optionalFields(PARALLEL_FIELDS), ...optionalFields(PARALLEL_KIND_FIELDS.ddp) }),
    z.strictObject({
      kind: z.literal('fsdp2'),
      ...optionalFields(PARALLEL_FIELDS),
      ...optionalFields(PARALLEL_KIND_FIELDS.fsdp2),
      param_dtype: MpDtype.nullable().optional(),
      reduce_dtype: MpDtype.nullable().optional(),
    }),
  ],
  { error: `parallel.kind must be ${orList(PARALLEL_KINDS)}` },
);

const S = SPEC_FIELDS;
const SpecObject = z.strictObject({
  model: Model.optional(),
  batch: zField(S.batch).optional(),
  iterations: zField(S.iterations).optional(),
  accum: zField(S.accum).optional(),
  checkpoint: Checkpoint.optional(),
  precision: zField(S.precision).optional(),
  weights: zField(S.weights).optional(),
  optimizer: Optimizer.optional(),
  set_to_none: zField(S.set_to_none).optional(),
  mode: zField(S.mode).optional(),
  keep_loss_graph: zField(S.keep_loss_graph).optional(),
  loss: zField(S.loss).optional(),
  finetune: Finetune.optional(),
  shapes: ShapesSchema.optional(),
  prompt: zField(S.prompt).optional(),
  new_tokens: zField(S.new_tokens).optional(),
  cache: zField(S.cache).optional(),
  empty_cache_every: zField(S.empty_cache_every).optional(),
  alloc_conf: AllocConf.optional(),
  device: Device.optional(),
  capacity: Capacity.nullable().optional(),
  history: zField(S.history).optional(),
  parallel: Parallel.nullable().optional(),
});

/** The keys a spec may have, in the engine's order. */
export const SPEC_KEYS = Object.keys(SpecObject.shape) as (keyof Spec)[];

type Raw = z.output<typeof SpecObject>;

// A document too large to read (spec_bounds.ts) is refused before the fields are walked.
const Bounded = z.unknown().superRefine((v, ctx) => {
  const p = specSizeProblem(v);
  // params.whole: the input is the whole document, never echoed.
  if (p) ctx.addIssue({ code: 'custom', path: p.path, message: p.message, params: { whole: true } });
});

export const SpecSchema = Bounded.pipe(
  SpecObject.transform((raw, ctx) => {
    const nested = completeNested(raw);
    if (!nested.ok) {
      // An issue that names no input gets none shown (zod would show the whole spec).
      for (const issue of nested.issues)
        ctx.addIssue({ code: 'custom', ...issue, ...(issue.input === undefined ? { params: { noInput: true } } : {}) });
      return z.NEVER;
    }
    const spec = complete(raw, nested.nested);
    checkSpecLimits(spec, ctx); // work and size bounds across fields: limits.ts
    for (const issue of crossChecks(spec, raw)) ctx.addIssue({ code: 'custom', ...issue });
    return spec;
  }),
) as unknown as z.ZodType<Spec, SpecInput>;

/** A family's nested model part (hf: the completed config.json), or why it is refused. */
function completeNested(raw: Raw): { ok: true; nested: Record<string, unknown> } | { ok: false; issues: Issue[] } {
  const fam = familyOf(String(raw.model?.kind ?? DEFAULT_MODEL_KIND))!;
  return fam.nested ? fam.nested.complete((raw.model ?? {}) as Record<string, unknown>) : { ok: true, nested: {} };
}

/** Fills every default: the user's value, else the mode's, else the family's, else the spec's. */
function complete(raw: Raw, nested: Record<string, unknown>): Spec {
  const kind = (raw.model?.kind ?? DEFAULT_MODEL_KIND) as ModelSpec['kind'];
  const fam = familyOf(kind)!;
  const mode = (raw.mode ?? S.mode.default) as Spec['mode'];
  const modeDefaults: Record<string, number> = (MODE_DEFAULTS as Record<string, Record<string, number>>)[mode] ?? {};
  const famDefaults = fam.specDefaults as Record<string, unknown>;
  const pick = <K extends keyof SpecFields>(key: K): FieldValue<K> =>
    ((raw as Record<string, unknown>)[key] ?? modeDefaults[key] ?? famDefaults[key] ?? S[key].default) as FieldValue<K>;
  // The nested part may carry field defaults of its own (an hf preset's seq); the user's fields win.
  const given = { ...nested, ...((raw.model ?? {}) as Record<string, unknown>) };
  const model = { kind, ...nested, ...fillFields(fam.fields, given) } as ModelSpec;
  const shapes = completeShapes(raw.shapes as ShapeStep[] | ShapeDrawInput | null | undefined);
  return {
    model,
    batch: pick('batch'),
    iterations: (raw.iterations as number | undefined) ?? (shapes ? shapeCount(shapes) : pick('iterations')),
    accum: pick('accum'),
    checkpoint: (raw.checkpoint ?? 'none') as Checkpoint,
    precision: pick('precision'),
    weights: pick('weights'),
    optimizer: completeOptimizer(raw.optimizer as Raw['optimizer']),
    set_to_none: pick('set_to_none'),
    mode,
    keep_loss_graph: pick('keep_loss_graph'),
    loss: pick('loss'),
    finetune: completeFinetune(raw.finetune as FinetuneInput | undefined, model),
    shapes,
    prompt: pick('prompt'),
    new_tokens: pick('new_tokens'),
    cache: pick('cache'),
    empty_cache_every: pick('empty_cache_every'),
    alloc_conf: raw.alloc_conf ?? '',
    device: raw.device ?? DEFAULT_DEVICE,
    capacity: raw.capacity ?? null,
    history: pick('history'),
    parallel: completeParallel(raw.parallel as ParallelInput | null | undefined),
  };
}

function completeShapes(s: ShapeStep[] | ShapeDrawInput | null | undefined): Shapes | null {
  if (!s || Array.isArray(s)) return s ?? null;
  return {
    batch: s.batch ?? D.batch.default,
    steps: s.steps ?? D.steps.default,
    seed: s.seed ?? D.seed.default,
    seq: s.seq,
    pad_to: s.pad_to ?? D.pad_to.default,
    order: s.order ?? 'drawn',
  };
}

/** The spec as the engine reads it: a draw of shapes expanded to its per-iteration list. */
export function engineSpec(spec: Spec): Spec {
  if (!isDraw(spec.shapes)) return spec;
  const seq = modelDims(spec.model).seq ?? 1;
  return { ...spec, shapes: shapeSteps(spec.shapes, seq) };
}

function completeOptimizer(o: Raw['optimizer']): OptimizerSpec {
  const given = (typeof o === 'string' ? { kind: o } : (o ?? { kind: DEFAULT_OPTIMIZER_KIND })) as { kind: string };
  const desc = optimizerOf(given.kind)!;
  return { kind: given.kind, ...fillFields(desc.fields, given as Record<string, unknown>) } as OptimizerSpec;
}

function completeFinetune(f: FinetuneInput | undefined, model: ModelSpec): FinetuneSpec {
  const method: FinetuneMethod = f?.method ?? 'full';
  if (method === 'freeze') return { method, blocks: (f as { blocks?: number }).blocks ?? F.blocks.default };
  if (method === 'lora') {
    const l = f as { rank?: number; alpha?: number; targets?: string[]; dropout?: number };
    const rank = l.rank ?? F.rank.default;
    const out = { method, rank, alpha: l.alpha ?? loraAlphaDefault(rank), targets: l.targets ?? [...loraDefaultTargetsOf(model)] };
    // Families without LoRA dropout keep the given value so crossChecks can name it.
    return familyOf(model.kind)!.loraDropout || l.dropout !== undefined ? { ...out, dropout: l.dropout ?? F.dropout.default } : out;
  }
  return { method: 'full' };
}

/** Rules between fields, checked on the completed spec. */
function crossChecks(spec: Spec, raw: Raw): Issue[] {
  const m = spec.model;
  const fam = familyOf(m.kind)!;
  const issues: Issue[] = [...fam.check(m as unknown as Record<string, number>)];
  issues.push(...optimizerOf(spec.optimizer.kind)!.check(spec.optimizer as unknown as Record<string, number>));
  const dims = modelDims(m); // the family's depth and sequence, whatever their field names
  const depth = dims.depth;
  const seq = dims.seq ?? undefined;
  const blockKinds = MODEL_KINDS.filter((k) => FAMILY_TABLE[k].blocks);
  const tokenKinds = MODEL_KINDS.filter((k) => FAMILY_TABLE[k].transformer);

  if (spec.checkpoint !== 'none' && !fam.blocks)
    issues.push({
      path: ['checkpoint'],
      message: `checkpointing wraps a model's blocks: use "none" with model.kind "${m.kind}" (models with blocks: ${blockKinds.join(', ')})`,
      input: spec.checkpoint,
    });
  else if (typeof spec.checkpoint === 'object' && spec.checkpoint.every > depth)
    issues.push({ path: ['checkpoint', 'every'], message: `must be at most model.depth (${depth})`, input: spec.checkpoint.every });

  if (!fam.losses.includes(spec.loss))
    issues.push({ path: ['loss'], message: `must be ${orList(fam.losses)} with model.kind "${m.kind}"`, input: spec.loss });

  const ft = spec.finetune;
  if (ft.method !== 'full' && !fam.transformer)
    issues.push({
      path: ['finetune', 'method'],
      message: `fine-tuning applies to the transformer families (${tokenKinds.join(', ')}): use "full" with model.kind "${m.kind}"`,
      input: ft.method,
    });
  else if (!finetuneMethodsFor(spec.mode, fam).includes(ft.method))
    issues.push({
      path: ['finetune', 'method'],
      message: `mode "${spec.mode}" with model.kind "${m.kind}" takes finetune.method ${orList(finetuneMethodsFor(spec.mode, fam))}${
        ft.method === 'lora' ? ` (LoRA outside training: model.kind ${orList(MODEL_KINDS.filter((k) => familyOf(k)!.loraServing))})` : ''
      }`,
      input: ft.method,
    });
  else if (ft.method === 'freeze' && ft.blocks > depth)
    issues.push({ path: ['finetune', 'blocks'], message: `must be at most model.depth (${depth})`, input: ft.blocks });
  else if (ft.method === 'lora') {
    const allowed = loraTargetsOf(m);
    ft.targets.forEach((t, i) => {
      if (!allowed.includes(t))
        issues.push({
          path: ['finetune', 'targets', i],
          message: `must be one of ${quoted(allowed)} for model.kind "${m.kind}"`,
          input: t,
        });
      else if (ft.targets.indexOf(t) !== i)
        issues.push({ path: ['finetune', 'targets', i], message: 'names a projection twice', input: t });
    });
    if (ft.dropout !== undefined && !fam.loraDropout) {
      const withDropout = MODEL_KINDS.filter((k) => familyOf(k)!.loraDropout);
      issues.push({
        path: ['finetune', 'dropout'],
        message: `LoRA dropout applies to model.kind ${orList(withDropout)}; leave it out with model.kind "${m.kind}"`,
        input: ft.dropout,
      });
    }
  }
  if (fam.checkSpec) issues.push(...fam.checkSpec(spec as unknown as FamilySpecView));

  if (spec.mode === 'generate') {
    if (!fam.transformer)
      issues.push({
        path: ['mode'],
        message: `"generate" needs a transformer family (${tokenKinds.join(', ')}); model.kind is "${m.kind}"`,
        input: 'generate',
      });
    else {
      if (spec.prompt < 1) issues.push({ path: ['prompt'], message: 'must be at least 1 in mode "generate"', input: spec.prompt });
      if (spec.new_tokens < 1)
        issues.push({ path: ['new_tokens'], message: 'must be at least 1 in mode "generate"', input: spec.new_tokens });
      if (seq !== undefined && spec.prompt + spec.new_tokens > seq)
        issues.push({
          path: ['new_tokens'],
          message: `prompt + new_tokens must be at most model.seq (${seq}); prompt ${spec.prompt} + new_tokens ${spec.new_tokens} = ${spec.prompt + spec.new_tokens}`,
          input: spec.new_tokens,
        });
    }
  }

  if (spec.shapes) {
    const count = shapeCount(spec.shapes);
    if (!fam.transformer)
      issues.push({
        path: ['shapes'],
        message: `per-iteration shapes apply to the transformer families (${tokenKinds.join(', ')}); use null with model.kind "${m.kind}"`,
      });
    else if (spec.mode !== 'train')
      issues.push({ path: ['shapes'], message: 'per-iteration shapes apply to mode "train" only', input: spec.mode });
    else {
      if (isDraw(spec.shapes)) {
        const d = spec.shapes;
        if (seq !== undefined && drawMaxSeq(d) > seq)
          issues.push({ path: ['shapes', 'seq'], message: `lengths must be at most model.seq (${seq})`, input: drawMaxSeq(d) });
        if (seq !== undefined && d.pad_to > seq)
          issues.push({ path: ['shapes', 'pad_to'], message: `must be at most model.seq (${seq})`, input: d.pad_to });
      } else
        spec.shapes.forEach((s, i) => {
          if (seq !== undefined && s.seq > seq)
            issues.push({ path: ['shapes', i, 'seq'], message: `must be at most model.seq (${seq})`, input: s.seq });
        });
      if (raw.iterations !== undefined && raw.iterations !== count)
        issues.push({
          path: ['iterations'],
          message: `must equal the number of shapes (${count}): one iteration per shape`,
          input: raw.iterations,
        });
    }
  }
  if (spec.parallel) {
    const p = spec.parallel;
    const at = (k: string) => ['parallel', k];
    if (!SIMULATED_PARALLEL_KINDS.includes(p.kind))
      issues.push({
        path: at('kind'),
        message: `"${p.kind}" is not simulated yet (simulated: ${quoted(SIMULATED_PARALLEL_KINDS)})`,
        input: p.kind,
      });
    if (spec.mode !== 'train') issues.push({ path: ['mode'], message: 'data parallel applies to mode "train"', input: spec.mode });
    if (p.kind === 'fsdp2' && !fam.transformer)
      issues.push({
        path: at('kind'),
        message: `fsdp2 shards a transformer's blocks (${tokenKinds.join(', ')}); model.kind is "${m.kind}"`,
        input: p.kind,
      });
    // hf models are built as users build them (any weights, LoRA via peft) and then wrapped;
    // the lab's own families are built on the meta device in fp32 and trained in full
    if (spec.weights !== 'fp32' && m.kind !== 'hf')
      issues.push({
        path: ['weights'],
        message: 'data parallel trains fp32 weights here (use parallel.param_dtype for bf16 compute; hf models take any weights)',
        input: spec.weights,
      });
    if (spec.finetune.method !== 'full' && m.kind !== 'hf')
      issues.push({
        path: ['finetune', 'method'],
        message: 'data parallel trains the whole model ("full"; hf models take LoRA too)',
        input: spec.finetune.method,
      });
    if (spec.device.startsWith('cuda:'))
      issues.push({ path: ['device'], message: 'data parallel runs on a simulated device (sim:...)', input: spec.device });
    if (spec.shapes) issues.push({ path: ['shapes'], message: 'per-iteration shapes are not combined with data parallel yet' });
    if (spec.history) issues.push({ path: ['history'], message: 'allocator history is recorded for single-GPU runs only', input: true });
  }
  if (spec.empty_cache_every > 0 && spec.mode !== 'train')
    issues.push({ path: ['empty_cache_every'], message: 'applies to mode "train" only (0 otherwise)', input: spec.empty_cache_every });
  return issues;
}

/** Thrown for a spec that fails validation; `issues` holds one line per bad field. */
export class SpecError extends Error {
  constructor(readonly issues: string[]) {
    super(`invalid spec: ${issues.join('; ')}`);
    this.name = 'SpecError';
  }
}

export type SpecResult = { ok: true; spec: Spec } | { ok: false; issues: string[] };

export function checkSpec(input: unknown): SpecResult {
  const res = SpecSchema.safeParse(input === undefined ? {} : input, { reportInput: true });
  if (res.success) return { ok: true, spec: res.data };
  // One value can break two rules with one message (1e300 is neither an integer nor in range): say it once.
  const lines = [...new Set(res.error.issues.flatMap(expandUnion).map(describeIssue))];
  return { ok: false, issues: lines.slice(0, 8) };
}

/** Validates and fills defaults; throws SpecError naming each bad field. */
export function parseSpec(input: unknown): Spec {
  const res = checkSpec(input);
  if (!res.ok) throw new SpecError(res.issues);
  return res.spec;
}

/** An object given for "kind string or {kind, ...}" fails inside the object: report those issues. */
function expandUnion(issue: z.core.$ZodIssue): z.core.$ZodIssue[] {
  if (issue.code !== 'invalid_union' || !issue.input || typeof issue.input !== 'object') return [issue];
  const fits = (errs: z.core.$ZodIssue[]) =>
    errs.length > 0 && errs.every((e) => e.path.length > 0 || e.code === 'unrecognized_keys' || /\.kind must be/.test(e.message));
  // The branch the input meant is the one whose keys it used ({"histogram": ...} is not {"min", "max"}).
  const inner =
    issue.errors.find((errs) => fits(errs) && !errs.some((e) => e.code === 'unrecognized_keys' && e.path.length === 0)) ??
    issue.errors.find(fits);
  if (!inner) return [issue];
  return inner.map((e) => ({ ...e, path: [...issue.path, ...e.path] }) as z.core.$ZodIssue).flatMap(expandUnion);
}

function describeIssue(issue: z.core.$ZodIssue): string {
  const where = issue.path.length ? issue.path.join('.') : 'spec';
  if (issue.code === 'unrecognized_keys')
    return `${where}: unknown key${issue.keys.length > 1 ? 's' : ''} ${clipList(
      issue.keys.slice(0, 8).map((k) => quote(k, 40)),
      8,
      issue.keys.length,
    )}${issue.path.length === 0 ? ` (allowed: ${SPEC_KEYS.join(', ')})` : ''}`;
  // A discriminated union's message names its key ("model.kind must be ..."): add what was given.
  const disc = /^([a-z_]+)\.([a-z_]+) must be/.exec(issue.message);
  if (disc) return `${issue.message}${discriminatorGot(issue, disc[2])}`;
  let got = '';
  const input = 'input' in issue ? issue.input : undefined;
  const scalar = input === null || (input !== undefined && typeof input !== 'object');
  // A message that already quotes a string it was given ("20XB" is not a size) needs no "(got ...)".
  const quotes = typeof input === 'string' && issue.message.includes(quote(input));
  const params = issue.code === 'custom' ? (issue.params as { whole?: boolean; noInput?: boolean } | undefined) : undefined;
  if (params?.whole || params?.noInput) got = '';
  else if ((scalar && issue.code !== 'invalid_union' && !quotes) || (issue.code === 'custom' && input !== undefined && !scalar))
    got = ` (got ${preview(input)})`;
  else if (input === undefined && issue.code === 'invalid_type') got = ' (missing)';
  else if (issue.code === 'too_big' && Array.isArray(input)) got = ` (got ${input.length})`;
  return `${where}: ${issue.message}${got}`;
}

function discriminatorGot(issue: z.core.$ZodIssue, key: string): string {
  const input = (issue as { input?: unknown }).input;
  if (input && typeof input === 'object' && key in input) return ` (got ${preview((input as Record<string, unknown>)[key])})`;
  return ' (missing)';
}

/** A short label for tables and CSV: "none", "block", "sqrt", "every:4". */
export function checkpointLabel(c: Checkpoint): string {
  return typeof c === 'string' ? c : `every:${c.every}`;
}
