// The experiment spec: one JSON document describing a run, validated before anything
// starts. Defaults are the parity protocol's (test/refs/README.md). Every rejection names
// the field, the allowed values or range, and what was given.
import { z } from 'zod';
import { checkSpecLimits } from './limits';

export const LIMITS = {
  features: 1 << 20, // in / hidden / out / dim
  depth: 4096,
  batch: 1 << 24,
  iterations: 100_000,
  accum: 4096,
  capacityMin: 1 << 20, // 1 MiB
  capacityMax: 2 ** 50, // 1 PiB
} as const;

const intIn = (lo: number, hi: number) => {
  const msg = `must be an integer from ${lo} to ${hi}`;
  return z.number({ error: msg }).int({ error: msg }).min(lo, { error: msg }).max(hi, { error: msg });
};
const oneOf = <T extends string>(values: readonly [T, ...T[]]) =>
  z.enum(values, { error: `must be one of ${values.map((v) => `"${v}"`).join(', ')}` });
const bool = () => z.boolean({ error: 'must be true or false' });

const MlpModel = z.strictObject({
  kind: z.literal('mlp'),
  in: intIn(1, LIMITS.features).default(1024),
  hidden: intIn(1, LIMITS.features).default(2048),
  depth: intIn(1, LIMITS.depth).default(2),
  out: intIn(1, LIMITS.features).default(10),
});
const ResidualModel = z.strictObject({
  kind: z.literal('residual'),
  dim: intIn(1, LIMITS.features).default(512),
  depth: intIn(1, LIMITS.depth).default(20),
});
const Model = z.discriminatedUnion('kind', [MlpModel, ResidualModel], {
  error: 'model.kind must be "mlp" or "residual"',
});

export const CHECKPOINT_MODES = ['none', 'block', 'sqrt'] as const;
const Checkpoint = z.union([oneOf(CHECKPOINT_MODES), z.strictObject({ every: intIn(1, LIMITS.depth) })], {
  error: 'must be "none", "block", "sqrt" or {"every": n} with n from 1 to ' + LIMITS.depth,
});

export const OPTIMIZERS = ['none', 'sgd', 'adam', 'adamw'] as const;
const lr = z.number({ error: 'must be a number > 0 and <= 10' }).gt(0, { error: 'must be > 0' }).lte(10, { error: 'must be <= 10' });
const OptimizerObject = z.strictObject({
  kind: oneOf(OPTIMIZERS),
  lr: lr.optional(),
  foreach: bool().optional(),
  momentum: z.number({ error: 'must be a number in [0, 1)' }).gte(0, { error: 'must be >= 0' }).lt(1, { error: 'must be < 1' }).optional(),
  weight_decay: z.number({ error: 'must be a number >= 0' }).gte(0, { error: 'must be >= 0' }).optional(),
});
const Optimizer = z
  .union([oneOf(OPTIMIZERS), OptimizerObject], {
    error: `must be one of ${OPTIMIZERS.map((o) => `"${o}"`).join(', ')} or {"kind": ..., "lr": ..., "foreach": ...}`,
  })
  .transform((o) => normalizeOptimizer(typeof o === 'string' ? { kind: o } : o));

export const PRECISIONS = ['fp32', 'tf32', 'fp16', 'bf16'] as const;
export const MODES = ['train', 'inference', 'loss_accumulation'] as const;
export const LOSSES = ['sum', 'mse', 'cross_entropy'] as const;

// PYTORCH_CUDA_ALLOC_CONF keys PyTorch 2.11 accepts; values are checked by the native parser.
const ALLOC_CONF_KEYS = [
  'max_split_size_mb',
  'max_non_split_rounding_mb',
  'garbage_collection_threshold',
  'roundup_power2_divisions',
  'expandable_segments',
  'per_process_memory_fraction',
  'release_lock_on_cudamalloc',
  'pinned_use_cuda_host_register',
  'pinned_num_register_threads',
  'pinned_use_background_threads',
  'large_segment_size_mb',
  'backend',
] as const;
const AllocConf = z
  .string({ error: 'must be a string like "max_split_size_mb:128,expandable_segments:True"' })
  .max(1024, { error: 'must be at most 1024 characters' })
  .superRefine((s, ctx) => {
    const bad = allocConfKeys(s).find((k) => !(ALLOC_CONF_KEYS as readonly string[]).includes(k));
    if (bad !== undefined)
      ctx.addIssue({ code: 'custom', message: `unknown setting "${bad}" (allowed: ${ALLOC_CONF_KEYS.join(', ')})` });
  });

// "sim:<preset>", "sim:custom:<size>" or "cuda:<ordinal>"; the device layer checks the preset exists.
const Device = z
  .string({ error: 'must be a string like "sim:h100-80gb" or "cuda:0"' })
  .regex(/^(sim:[a-z0-9][a-z0-9.-]{0,40}|sim:custom:[0-9.]+\s*[A-Za-z]{0,3}|cuda:[0-9]{1,2})$/, {
    error: 'must be "sim:<preset>" (e.g. "sim:h100-80gb"), "sim:custom:<size>" or "cuda:<n>"',
  });

const Capacity = z
  .union([z.number(), z.string()], { error: 'must be a size like "20GiB" or a number of bytes' })
  .transform((v, ctx) => {
    const bytes = typeof v === 'number' ? v : parseSize(v);
    if (bytes === null) {
      ctx.addIssue({ code: 'custom', message: `"${v}" is not a size: use a number with B, KB, MB, GB, TB, KiB, MiB, GiB or TiB` });
      return z.NEVER;
    }
    if (!Number.isFinite(bytes) || bytes < LIMITS.capacityMin || bytes > LIMITS.capacityMax) {
      ctx.addIssue({ code: 'custom', message: 'must be from 1 MiB to 1 PiB' });
      return z.NEVER;
    }
    return Math.floor(bytes);
  });

const SpecObject = z.strictObject({
  model: Model.default({ kind: 'mlp', in: 1024, hidden: 2048, depth: 2, out: 10 }),
  batch: intIn(1, LIMITS.batch).default(256),
  iterations: intIn(1, LIMITS.iterations).default(2),
  accum: intIn(1, LIMITS.accum).default(1),
  checkpoint: Checkpoint.default('none'),
  precision: oneOf(PRECISIONS).default('fp32'),
  optimizer: Optimizer.default({ kind: 'adam', lr: 1e-3, foreach: true, momentum: 0, weight_decay: 0 }),
  set_to_none: bool().default(true),
  mode: oneOf(MODES).default('train'),
  keep_loss_graph: bool().default(true),
  loss: oneOf(LOSSES).default('sum'),
  alloc_conf: AllocConf.default(''),
  device: Device.default('sim:h100-80gb'),
  capacity: Capacity.nullable().default(null),
  history: bool().default(false),
});

export const SpecSchema = SpecObject.superRefine((spec, ctx) => {
  checkSpecLimits(spec, ctx); // work and size bounds across fields: limits.ts
  if (spec.model.kind === 'mlp' && spec.checkpoint !== 'none')
    ctx.addIssue({
      code: 'custom',
      path: ['checkpoint'],
      message: 'checkpointing wraps the residual model\'s blocks: use "none" with model.kind "mlp"',
    });
  else if (typeof spec.checkpoint === 'object' && spec.checkpoint.every > spec.model.depth)
    ctx.addIssue({
      code: 'custom',
      path: ['checkpoint', 'every'],
      message: `must be at most model.depth (${spec.model.depth})`,
      input: spec.checkpoint.every,
    });
});

/** A spec as written by a user: every key optional. */
export type SpecInput = z.input<typeof SpecSchema>;
/** A validated spec with every default filled in and the optimizer in object form. */
export type Spec = z.output<typeof SpecSchema>;
export type ModelSpec = Spec['model'];
export type Checkpoint = Spec['checkpoint'];
export interface OptimizerSpec {
  kind: (typeof OPTIMIZERS)[number];
  lr: number;
  foreach: boolean;
  momentum: number;
  weight_decay: number;
}

function normalizeOptimizer(o: { kind: OptimizerSpec['kind']; lr?: number; foreach?: boolean; momentum?: number; weight_decay?: number }): OptimizerSpec {
  return {
    kind: o.kind,
    lr: o.lr ?? 1e-3,
    foreach: o.foreach ?? true,
    momentum: o.momentum ?? 0,
    weight_decay: o.weight_decay ?? (o.kind === 'adamw' ? 0.01 : 0),
  };
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
  return { ok: false, issues: res.error.issues.slice(0, 8).map(describeIssue) };
}

/** Validates and fills defaults; throws SpecError naming each bad field. */
export function parseSpec(input: unknown): Spec {
  const res = checkSpec(input);
  if (!res.ok) throw new SpecError(res.issues);
  return res.spec;
}

function describeIssue(issue: z.core.$ZodIssue): string {
  const where = issue.path.length ? issue.path.join('.') : 'spec';
  if (issue.code === 'unrecognized_keys')
    return `${where}: unknown key${issue.keys.length > 1 ? 's' : ''} ${issue.keys.map((k) => `"${k}"`).join(', ')}${
      issue.path.length === 0 ? ` (allowed: ${Object.keys(SpecObject.shape).join(', ')})` : ''
    }`;
  let got = '';
  if ('input' in issue && issue.input !== undefined && issue.code !== 'invalid_union' && typeof issue.input !== 'object')
    got = issue.message.includes(JSON.stringify(issue.input)) ? '' : ` (got ${JSON.stringify(issue.input)})`;
  else if (issue.input === undefined && issue.code === 'invalid_type') got = ' (missing)';
  // The discriminated union's message already names model.kind.
  if (issue.message.startsWith('model.kind')) return `${issue.message}${kindGot(issue)}`;
  return `${where}: ${issue.message}${got}`;
}

function kindGot(issue: z.core.$ZodIssue): string {
  const input = (issue as { input?: unknown }).input;
  if (input && typeof input === 'object' && 'kind' in input) return ` (got ${JSON.stringify((input as { kind: unknown }).kind)})`;
  return ' (missing)';
}

function allocConfKeys(conf: string): string[] {
  // Keys sit at depth 0 before a ':'; roundup_power2_divisions may hold a [..] list.
  const keys: string[] = [];
  let depth = 0;
  let cur = '';
  let inKey = true;
  for (const ch of conf) {
    if (ch === '[') depth++;
    else if (ch === ']') depth--;
    if (depth === 0 && ch === ',') {
      if (inKey && cur.trim()) keys.push(cur.trim());
      cur = '';
      inKey = true;
    } else if (depth === 0 && ch === ':' && inKey) {
      keys.push(cur.trim());
      inKey = false;
    } else if (inKey) cur += ch;
  }
  if (inKey && cur.trim()) keys.push(cur.trim());
  return keys;
}

const UNITS: Record<string, number> = {
  b: 1,
  kb: 1e3,
  mb: 1e6,
  gb: 1e9,
  tb: 1e12,
  kib: 2 ** 10,
  mib: 2 ** 20,
  gib: 2 ** 30,
  tib: 2 ** 40,
};

/** "20GiB", "1.5 GB", "512MiB", "1048576" → bytes; null when the unit is unknown. */
export function parseSize(text: string): number | null {
  const m = /^\s*([0-9]+(?:\.[0-9]+)?)\s*([A-Za-z]*)\s*$/.exec(text);
  if (!m) return null;
  const unit = (m[2] || 'b').toLowerCase();
  const mult = UNITS[unit];
  if (mult === undefined) return null;
  return Number(m[1]) * mult;
}

/** A short label for tables and CSV: "none", "block", "sqrt", "every:4". */
export function checkpointLabel(c: Checkpoint): string {
  return typeof c === 'string' ? c : `every:${c.every}`;
}

/** The spec keys a sweep may vary, and where each lives. */
export const SWEEP_PARAMS = ['batch', 'depth', 'checkpoint', 'precision', 'optimizer', 'accum', 'iterations', 'hidden', 'dim', 'mode'] as const;
export type SweepParam = (typeof SWEEP_PARAMS)[number];

/** The raw input spec with one parameter set (model keys go inside model). */
export function withParam(input: SpecInput, param: SweepParam, value: unknown): SpecInput {
  const copy: Record<string, unknown> = { ...(input as Record<string, unknown>) };
  if (param === 'depth' || param === 'hidden' || param === 'dim') {
    const model = { ...((copy.model as Record<string, unknown> | undefined) ?? { kind: 'mlp' }) };
    model[param] = value;
    copy.model = model;
  } else copy[param] = value;
  return copy as SpecInput;
}
