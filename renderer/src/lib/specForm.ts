// The experiment form's state (what the user typed, as text) and its translation into a
// SpecInput, with a reason per field. Which fields exist, their ranges, defaults and option
// lists all come from the catalogue (main/contract/catalogue): nothing here names a model
// family or an optimizer. The contract's checkSpec has the final word; this module adds the
// checks that only make sense on typed text and maps issues back to fields.
import {
  DEFAULT_MODEL_KIND,
  DEFAULT_OPTIMIZER_KIND,
  FINETUNE_FIELDS,
  MODE_DEFAULTS,
  SHAPE_DRAW_FIELDS,
  SPEC_FIELDS,
  families,
  familyOf,
  fieldNames,
  fillFields,
  finetuneMethodsFor,
  loraAlphaDefault,
  loraDefaultTargetsOf,
  modeReads,
  optimizerOf,
  type Field,
  type FinetuneMethod,
  type ModelSpec,
} from '$contract/catalogue';
import { PARALLEL_FIELDS, PARALLEL_KIND_FIELDS, type ParallelKind } from '$contract/catalogue/parallel';
import { MP_POLICY_FIELDS } from '$contract/catalogue/parallel_choices';
import { AllocConfError, allocConfItems, parseAllocConf } from '$contract/alloc_conf';
import { checkSpec, parseSize, type SpecInput } from '$contract/spec';

/** Spec fields the form edits directly, by their spec names. */
export const FORM_SPEC_FIELDS = [
  'batch',
  'iterations',
  'accum',
  'precision',
  'weights',
  'mode',
  'loss',
  'prompt',
  'new_tokens',
  'cache',
  'empty_cache_every',
] as const;
/** The draw of sequence lengths (transformers, training): form name -> the draw's field. */
export const DRAW_FIELDS = { draw_min: 'min', draw_max: 'max', draw_steps: 'steps', draw_seed: 'seed', draw_pad_to: 'pad_to' } as const;
type DrawField = keyof typeof DRAW_FIELDS;
type SpecField = (typeof FORM_SPEC_FIELDS)[number];
/** Every model field of every family: their texts live side by side in the form. */
export const MODEL_FIELD_NAMES = fieldNames(families());

export type FormState = {
  modelKind: string;
  /** A family whose model is a file (hf): the preset chosen, or the config loaded (and its file name). */
  modelPreset: string;
  modelConfig: Record<string, unknown> | null;
  modelConfigName: string;
  checkpoint: 'none' | 'block' | 'every' | 'sqrt';
  every: string;
  optimizer: string;
  /** The chosen optimizer's arguments: text for numbers, booleans for flags. */
  optimizerArgs: Record<string, string | boolean>;
  finetune: FinetuneMethod;
  blocks: string;
  rank: string;
  /** Empty: alpha follows the rank (2 x rank). */
  alpha: string;
  /** LoRA dropout (peft's lora_dropout), for the families that have it (hf). */
  dropout: string;
  targets: string[];
  /** Sequence lengths drawn per step instead of model.seq every step. */
  vary: boolean;
  draw_order: 'drawn' | 'longest_first';
  maxSplitMb: string;
  expandable: boolean;
  gcThreshold: string;
  roundupDivisions: string;
  device: string;
  capacity: string;
  history: boolean;
  /** Data parallel: 'none' (one GPU) or a kind; its fields live under parallel_<name>. */
  parallelKind: 'none' | ParallelKind;
} & Record<SpecField, string> &
  Record<DrawField, string> &
  Record<string, unknown>;

export type FieldName = string;
export type FieldErrors = Partial<Record<FieldName, string>>;

const text = (f: Field, v: unknown) => (f.type === 'bool' ? v : String(v));

/** The model fields of a family at their defaults (or a preset's values). */
export function modelTexts(kind: string, values: Record<string, unknown> = {}): Record<string, string> {
  const fam = familyOf(kind)!;
  const filled = fillFields(fam.fields, values);
  return Object.fromEntries(Object.entries(filled).map(([k, v]) => [k, String(v)]));
}

/** The optimizer's arguments at their defaults, as form values. */
export function optimizerTexts(kind: string, values: Record<string, unknown> = {}): Record<string, string | boolean> {
  const o = optimizerOf(kind)!;
  const filled = fillFields(o.fields, values);
  return Object.fromEntries(Object.entries(o.fields).map(([k, f]) => [k, text(f, filled[k]) as string | boolean]));
}

/** Every data-parallel field of every kind (world, bucket_cap_mb, reshard_after_forward, the
 *  MixedPrecisionPolicy dtypes) by name: form key parallel_<name>. */
function parallelFieldsOf(kind: ParallelKind): Record<string, Field> {
  return { ...PARALLEL_FIELDS, ...PARALLEL_KIND_FIELDS[kind], ...(kind === 'fsdp2' ? MP_POLICY_FIELDS : {}) };
}
const ALL_PARALLEL_FIELDS: Record<string, Field> = Object.assign({}, parallelFieldsOf('ddp'), parallelFieldsOf('fsdp2'));
export const parallelKey = (name: string) => `parallel_${name}`;

/** The form's data-parallel fields at their defaults. */
function parallelDefaults(): Record<string, string | boolean> {
  return Object.fromEntries(Object.entries(ALL_PARALLEL_FIELDS).map(([k, f]) => [parallelKey(k), text(f, f.default) as string | boolean]));
}

/** Chooses data parallel (or one GPU). Allocator history is recorded for single-GPU runs
 *  only, so a parallel choice turns it off. */
export function chooseParallel(f: FormState, kind: 'none' | ParallelKind): void {
  f.parallelKind = kind;
  if (kind !== 'none') f.history = false;
}

/** The spec field's default for a family and mode (transformers train on batch 8, ...). */
function specDefault(key: SpecField, kind: string): string {
  const fam = familyOf(kind)!.specDefaults as Record<string, unknown>;
  return String(fam[key] ?? SPEC_FIELDS[key].default);
}

export function defaultForm(): FormState {
  const kind = DEFAULT_MODEL_KIND;
  const form: FormState = {
    modelKind: kind,
    modelPreset: '',
    modelConfig: null,
    modelConfigName: '',
    ...Object.fromEntries(families().flatMap((fam) => Object.entries(modelTexts(fam.kind)))),
    ...modelTexts(kind),
    ...(Object.fromEntries(FORM_SPEC_FIELDS.map((k) => [k, specDefault(k, kind)])) as Record<SpecField, string>),
    // Shown once the mode is "generate": that mode's defaults.
    prompt: String(MODE_DEFAULTS.generate.prompt),
    new_tokens: String(MODE_DEFAULTS.generate.new_tokens),
    checkpoint: 'none',
    every: '2',
    optimizer: DEFAULT_OPTIMIZER_KIND,
    optimizerArgs: optimizerTexts(DEFAULT_OPTIMIZER_KIND),
    finetune: 'full',
    blocks: String(FINETUNE_FIELDS.blocks.default),
    rank: String(FINETUNE_FIELDS.rank.default),
    alpha: '',
    dropout: String(FINETUNE_FIELDS.dropout.default),
    targets: [],
    vary: false,
    ...(Object.fromEntries(Object.entries(DRAW_FIELDS).map(([k, d]) => [k, String(SHAPE_DRAW_FIELDS[d].default)])) as Record<
      DrawField,
      string
    >),
    draw_order: 'drawn',
    maxSplitMb: '',
    expandable: false,
    gcThreshold: '',
    roundupDivisions: '',
    device: 'sim:h100-80gb',
    capacity: '',
    history: true,
    parallelKind: 'none',
    ...parallelDefaults(),
  };
  return form;
}

/** Switches the family: its fields at their defaults (or the preset's), the spec defaults
 * it changes (batch, loss) reset, and what it does not support turned off. */
export function chooseFamily(f: FormState, kind: string, preset?: Record<string, unknown>): void {
  const fam = familyOf(kind);
  if (!fam) return;
  const before = familyOf(f.modelKind)?.specDefaults ?? {};
  f.modelKind = kind;
  Object.assign(f, modelTexts(kind, preset));
  for (const key of new Set([...Object.keys(before), ...Object.keys(fam.specDefaults)]) as Set<SpecField>) f[key] = specDefault(key, kind);
  if (!fam.losses.includes(f.loss as never)) f.loss = fam.losses[0];
  if (!fam.blocks || (fam.checkpointModes && !fam.checkpointModes.includes(f.checkpoint))) f.checkpoint = 'none';
  if (fam.modes && !fam.modes.includes(f.mode)) f.mode = 'train';
  if (fam.caches && !fam.caches.includes(f.cache)) f.cache = fam.caches[0];
  if (!fam.transformer) {
    f.finetune = 'full';
    f.vary = false;
    if (f.mode === 'generate') f.mode = 'train';
  }
  f.targets = [...fam.loraDefaultTargets];
  if (fam.nested) {
    // A model described by a file starts from the family's first preset.
    f.modelConfig = null;
    f.modelConfigName = '';
    f.modelPreset = fam.presets[0]?.id ?? '';
    retarget(f);
  }
}

/** The nested part of the form's model (a config loaded, or a preset), as the spec writes it. */
function nestedInput(f: FormState): Record<string, unknown> {
  if (f.modelConfig) return { config: f.modelConfig };
  return f.modelPreset ? { preset: f.modelPreset } : {};
}

/** The form's model completed by its family (hf: the config.json completed), or the reason it is refused. */
export function completedModel(f: FormState): { model: ModelSpec } | { error: string } {
  const fam = familyOf(f.modelKind)!;
  const fields = fillFields(fam.fields, {});
  const nested = fam.nested?.complete(nestedInput(f)) ?? { ok: true as const, nested: {} };
  if (!nested.ok) return { error: nested.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ') };
  return { model: { kind: fam.kind, ...fields, ...nested.nested } as unknown as ModelSpec };
}

/** LoRA's targets follow the model (hf: each architecture's own module names). */
function retarget(f: FormState): void {
  const m = completedModel(f);
  if ('model' in m) f.targets = [...loraDefaultTargetsOf(m.model)];
}

/** Picks a preset of a family whose model is a file (hf): its config and its seq. */
export function chooseModelPreset(f: FormState, id: string): void {
  const fam = familyOf(f.modelKind)!;
  const p = fam.presets.find((x) => x.id === id);
  if (!p) return;
  Object.assign(f, modelTexts(fam.kind, p.model as Record<string, unknown>));
  f.modelPreset = id;
  f.modelConfig = null;
  f.modelConfigName = '';
  retarget(f);
}

/** Loads a config.json's text; returns why not when it is no JSON object. */
export function loadModelConfig(f: FormState, name: string, textContent: string): string | null {
  let config: unknown;
  try {
    config = JSON.parse(textContent);
  } catch (e) {
    return `${name} is not JSON: ${(e as Error).message}`;
  }
  if (!config || typeof config !== 'object' || Array.isArray(config)) return `${name} is not a config.json object`;
  f.modelConfig = config as Record<string, unknown>;
  f.modelConfigName = name;
  f.modelPreset = '';
  retarget(f);
  return null;
}

export function chooseOptimizer(f: FormState, kind: string): void {
  f.optimizer = kind;
  f.optimizerArgs = optimizerTexts(kind);
}

const INT = /^\s*[0-9]+\s*$/;
const NUM = /^\s*[0-9]*\.?[0-9]+(e-?[0-9]+)?\s*$/i;

/** Why the allocator would refuse a PYTORCH_CUDA_ALLOC_CONF string, or null. */
function allocConfError(conf: string): string | null {
  try {
    parseAllocConf(conf);
    return null;
  } catch (err) {
    if (err instanceof AllocConfError) return err.message;
    throw err;
  }
}

/** The allocator's PYTORCH_CUDA_ALLOC_CONF string for the form's settings. */
export function allocConf(f: FormState): string {
  const parts: string[] = [];
  if (f.maxSplitMb.trim()) parts.push(`max_split_size_mb:${f.maxSplitMb.trim()}`);
  if (f.expandable) parts.push('expandable_segments:True');
  if (f.gcThreshold.trim()) parts.push(`garbage_collection_threshold:${f.gcThreshold.trim()}`);
  if (f.roundupDivisions.trim()) parts.push(`roundup_power2_divisions:${f.roundupDivisions.trim()}`);
  return parts.join(',');
}

export interface FormResult {
  spec: SpecInput | null; // null when any field is invalid
  errors: FieldErrors;
}

/** The form field a spec path (as checkSpec names it) was set from. */
function fieldFor(path: string): FieldName | undefined {
  const [head, sub] = path.split('.');
  if (head === 'model') return sub === 'kind' ? 'modelKind' : sub === 'config' || sub === 'preset' ? 'modelConfig' : sub;
  if (head === 'optimizer') return sub ? `optimizer_${sub}` : 'optimizer';
  if (head === 'finetune') return sub === 'targets' ? 'targets' : sub === 'method' || !sub ? 'finetune' : sub;
  if (head === 'checkpoint') return 'every';
  if (head === 'alloc_conf') return 'maxSplitMb';
  if (head === 'parallel') return !sub || sub === 'kind' ? 'parallelKind' : parallelKey(sub);
  if (head === 'shapes') {
    const name = Object.entries(DRAW_FIELDS).find(([, d]) => d === sub)?.[0];
    return name ?? (sub === 'order' ? 'draw_order' : sub === 'seq' ? 'draw_max' : 'draw_steps');
  }
  if ((FORM_SPEC_FIELDS as readonly string[]).includes(head) || head === 'device' || head === 'capacity') return head;
  return undefined;
}

export function formToSpec(f: FormState): FormResult {
  const errors: FieldErrors = {};
  const parse = (key: FieldName, field: Field, value: unknown): unknown => {
    if (field.type === 'bool') return Boolean(value);
    if (field.type === 'enum') return value;
    const t = String(value ?? '');
    const ok = field.type === 'int' ? INT.test(t) : NUM.test(t);
    if (!ok) {
      errors[key] = t.trim() === '' ? 'required' : `"${t}" is not a ${field.type === 'int' ? 'whole number' : 'number'}`;
      return undefined;
    }
    return Number(t);
  };
  const fam = familyOf(f.modelKind)!;
  const model: Record<string, unknown> = { kind: fam.kind };
  for (const [k, field] of Object.entries(fam.fields)) model[k] = parse(k, field, f[k]);
  if (fam.nested) Object.assign(model, nestedInput(f));
  // Only what the mode reads is read off the form and sent (catalogue/applies.ts): a hidden
  // field's text neither blocks the spec nor leaks into it.
  const mode = String(f.mode);
  const reads = (key: string) => modeReads(mode, key);
  const opt = optimizerOf(f.optimizer)!;
  const optimizer: Record<string, unknown> = { kind: opt.kind };
  if (reads('optimizer'))
    for (const [k, field] of Object.entries(opt.fields)) optimizer[k] = parse(`optimizer_${k}`, field, f.optimizerArgs[k] ?? field.default);
  const top = Object.fromEntries(FORM_SPEC_FIELDS.filter(reads).map((k) => [k, parse(k, SPEC_FIELDS[k], f[k])]));

  if (f.maxSplitMb.trim()) {
    if (!INT.test(f.maxSplitMb)) errors.maxSplitMb = `"${f.maxSplitMb}" is not a whole number of MiB`;
    else if (Number(f.maxSplitMb) < 20) errors.maxSplitMb = `too small: must be >= 20 MiB (a large segment), got ${Number(f.maxSplitMb)}`;
  }
  if (f.gcThreshold.trim()) {
    const v = Number(f.gcThreshold);
    if (!NUM.test(f.gcThreshold) || !(v > 0 && v < 1))
      errors.gcThreshold = `must be a fraction strictly between 0 and 1, got "${f.gcThreshold}"`;
  }
  if (f.roundupDivisions.trim()) {
    // One value for every size, or a per-size list as PyTorch writes it: "[256:1,>:4]".
    const err = allocConfError(`roundup_power2_divisions:${f.roundupDivisions.trim()}`);
    if (err) errors.roundupDivisions = err;
  }
  let capacity: number | null = null;
  if (f.capacity.trim()) {
    const bytes = parseSize(f.capacity);
    if (bytes === null) errors.capacity = `"${f.capacity}" is not a size: use a number with MiB, GiB, MB, GB…`;
    else capacity = bytes;
  }

  const spec: Record<string, unknown> = { model, batch: top.batch };
  if (reads('iterations')) spec.iterations = top.iterations;
  if (reads('accum')) spec.accum = top.accum;
  if (reads('checkpoint'))
    spec.checkpoint =
      f.checkpoint === 'every'
        ? { every: parse('every', { type: 'int', min: 1, max: 1, default: 1, label: '', meaning: '' }, f.every) ?? 1 }
        : f.checkpoint;
  spec.precision = top.precision;
  spec.weights = top.weights;
  // Just the kind while every argument is at its default, as people write it.
  if (reads('optimizer'))
    spec.optimizer = Object.entries(opt.fields).every(([k, field]) => optimizer[k] === field.default) ? opt.kind : optimizer;
  spec.mode = top.mode;
  if (reads('loss')) spec.loss = top.loss;
  Object.assign(spec, { alloc_conf: allocConf(f), device: f.device, capacity, history: f.history });
  if (f.finetune !== 'full' && finetuneMethodsFor(mode, fam).includes(f.finetune)) {
    if (f.finetune === 'freeze') spec.finetune = { method: 'freeze', blocks: parse('blocks', FINETUNE_FIELDS.blocks, f.blocks) };
    else {
      const lora: Record<string, unknown> = { method: 'lora', rank: parse('rank', FINETUNE_FIELDS.rank, f.rank), targets: f.targets };
      if (f.alpha.trim()) lora.alpha = parse('alpha', FINETUNE_FIELDS.alpha, f.alpha);
      // Only a dropout other than peft's default (0) is written, as people write the spec.
      const dropout = fam.loraDropout ? parse('dropout', FINETUNE_FIELDS.dropout, f.dropout) : undefined;
      if (dropout !== undefined && dropout !== FINETUNE_FIELDS.dropout.default) lora.dropout = dropout;
      spec.finetune = lora;
    }
  }
  if (reads('empty_cache_every')) spec.empty_cache_every = top.empty_cache_every;
  if (fam.transformer && reads('shapes') && f.vary) {
    const d = Object.fromEntries(Object.entries(DRAW_FIELDS).map(([k, name]) => [name, parse(k, SHAPE_DRAW_FIELDS[name], f[k])]));
    spec.shapes = {
      batch: top.batch,
      steps: d.steps,
      seed: d.seed,
      seq: { min: d.min, max: d.max },
      pad_to: d.pad_to,
      order: f.draw_order,
    };
    delete spec.iterations; // one iteration per drawn step
  }
  // Data parallel applies to training only (applies.ts): other modes send none.
  if (reads('parallel') && f.parallelKind !== 'none') {
    const par: Record<string, unknown> = { kind: f.parallelKind };
    for (const [k, field] of Object.entries(parallelFieldsOf(f.parallelKind))) {
      const v = parse(parallelKey(k), field, f[parallelKey(k)]);
      par[k] = field.type === 'enum' && v === '' ? null : v;
    }
    spec.parallel = par;
  }
  for (const k of ['prompt', 'new_tokens', 'cache'] as const) if (reads(k)) spec[k] = top[k];
  // Let the contract judge ranges and cross-field rules; keep the first reason per field.
  const checked = checkSpec(spec);
  if (!checked.ok) {
    for (const issue of checked.issues) {
      const disc = /^([a-z_]+\.[a-z_]+) must be/.exec(issue);
      const path = disc ? disc[1] : issue.slice(0, issue.indexOf(':'));
      const field = fieldFor(path);
      const reason = disc ? issue : issue.slice(issue.indexOf(':') + 1).trim();
      if (field && !errors[field]) errors[field] = reason;
      else if (!field && !errors.device) errors.device = issue;
    }
  }
  return { spec: Object.keys(errors).length ? null : (spec as SpecInput), errors };
}

/** The form for a spec already run (so a run from history or a lesson can be edited and run again). */
export function specToForm(spec: SpecInput): FormState {
  const f = defaultForm();
  const m = (spec.model ?? { kind: DEFAULT_MODEL_KIND }) as Record<string, unknown>;
  chooseFamily(f, String(m.kind), m);
  if (m.config && typeof m.config === 'object') {
    f.modelConfig = m.config as Record<string, unknown>;
    f.modelConfigName = 'config.json';
    f.modelPreset = '';
  } else if (typeof m.preset === 'string') f.modelPreset = m.preset;
  for (const k of FORM_SPEC_FIELDS) if (spec[k] !== undefined) f[k] = String(spec[k]);
  const c = spec.checkpoint;
  if (c && typeof c === 'object') {
    f.checkpoint = 'every';
    f.every = String(c.every);
  } else if (c) f.checkpoint = c;
  const o = spec.optimizer;
  if (o) {
    const kind = typeof o === 'string' ? o : o.kind;
    f.optimizer = kind;
    f.optimizerArgs = optimizerTexts(kind, typeof o === 'string' ? {} : (o as Record<string, unknown>));
  }
  const ft = spec.finetune as
    { method: FinetuneMethod; blocks?: number; rank?: number; alpha?: number; dropout?: number; targets?: string[] } | undefined;
  if (ft) {
    f.finetune = ft.method;
    if (ft.blocks !== undefined) f.blocks = String(ft.blocks);
    if (ft.rank !== undefined) f.rank = String(ft.rank);
    // An alpha equal to 2 x rank is the default: leave it following the rank.
    if (ft.alpha !== undefined && !(ft.rank !== undefined && ft.alpha === loraAlphaDefault(ft.rank))) f.alpha = String(ft.alpha);
    if (ft.dropout !== undefined) f.dropout = String(ft.dropout);
    if (ft.targets) f.targets = [...ft.targets];
  }
  const sh = spec.shapes;
  if (sh && !Array.isArray(sh) && 'min' in sh.seq) {
    f.vary = true;
    f.draw_min = String(sh.seq.min);
    f.draw_max = String(sh.seq.max);
    for (const [k, name] of Object.entries(DRAW_FIELDS) as [DrawField, 'steps' | 'seed' | 'pad_to' | 'min' | 'max'][])
      if (name !== 'min' && name !== 'max' && sh[name] !== undefined) f[k] = String(sh[name]);
    if (sh.order) f.draw_order = sh.order;
    if (sh.batch !== undefined) f.batch = String(sh.batch);
  }
  const par = spec.parallel as Record<string, unknown> | null | undefined;
  if (par) {
    f.parallelKind = par.kind as ParallelKind;
    for (const [k, v] of Object.entries(par))
      if (k !== 'kind' && v !== undefined) f[parallelKey(k)] = typeof v === 'boolean' ? v : v === null ? '' : String(v);
  }
  if (spec.device) f.device = spec.device;
  if (spec.capacity !== undefined && spec.capacity !== null) f.capacity = String(spec.capacity);
  if (spec.history !== undefined) f.history = spec.history;
  for (const { key: k, value: v } of allocConfItems(spec.alloc_conf ?? '')) {
    if (k === 'max_split_size_mb') f.maxSplitMb = v;
    if (k === 'expandable_segments') f.expandable = v.toLowerCase() === 'true';
    if (k === 'garbage_collection_threshold') f.gcThreshold = v;
    if (k === 'roundup_power2_divisions') f.roundupDivisions = v;
  }
  return f;
}
