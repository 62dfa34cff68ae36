// Work and size limits a spec must meet beyond its per-field ranges.
// Each field alone can be in range while their product runs away: 100,000 iterations ran
// 31 s at 1.7 GB RSS and wrote 817 MB; depth x accum x iterations multiplies the op count
// (mode "generate": new_tokens x depth, one forward over every block per token).
// And a size built from in-range fields must still be a size the allocator can hold.
// Kept apart from spec.ts so the spec's schema can change without touching these rules;
// spec.ts applies them with one call (checkSpecLimits) on the completed spec.
import { modelDims } from './catalogue';
import { LIMITS } from './catalogue/limits';
import { drawMaxSeq, isDraw, type Shapes } from './shapes';

/** Layer passes one run may make: iterations x accum x depth (about 10 s simulated). */
export const MAX_LAYER_STEPS = 1 << 16;
/** Iterations one run may make whatever the model (readings are kept per iteration). */
export const MAX_ITERATIONS = LIMITS.iterations;
/** Layer passes a whole sweep may make (all its runs together). */
export const MAX_SWEEP_LAYER_STEPS = 1 << 20;
/** Largest tensor a spec may describe: far above any device, far below 2^53 and 2^64. */
export const MAX_TENSOR_BYTES = 2 ** 50;
/** sim:custom:<size> device sizes, as for capacity. */
export const MIN_DEVICE_BYTES = 1 << 20;
export const MAX_DEVICE_BYTES = 2 ** 50;

export interface LimitIssue {
  path: (string | number)[];
  message: string;
  /** What was given at `path` (shown as "(got ...)"). */
  input?: unknown;
}

/** The subset of a validated spec these rules read; the model's sizes are read through its
 *  family's roles (catalogue), whatever its fields are called. */
export interface SizedSpec {
  model: { kind: string };
  batch: number;
  iterations: number;
  accum: number;
  device: string;
  precision?: string;
  mode?: string;
  new_tokens?: number;
  shapes?: Shapes | null;
}

/** Layer passes a run makes: iterations x accum x depth; mode "generate": new_tokens x depth
 *  (the prefill and new_tokens - 1 decode steps, each a forward over every block). */
export function layerSteps(spec: SizedSpec): number {
  const { depth } = modelDims(spec.model);
  if (spec.mode === 'generate') return (spec.new_tokens ?? 0) * depth;
  return spec.iterations * spec.accum * depth;
}

export function specLimitIssues(spec: SizedSpec): LimitIssue[] {
  const issues: LimitIssue[] = [];
  if (spec.iterations > MAX_ITERATIONS)
    issues.push({
      path: ['iterations'],
      message: `must be at most ${MAX_ITERATIONS} (each iteration keeps its own readings)`,
      input: spec.iterations,
    });
  const steps = layerSteps(spec);
  if (steps > MAX_LAYER_STEPS)
    issues.push(
      spec.mode === 'generate'
        ? {
            path: ['new_tokens'],
            message: `too much work: new_tokens x model.depth = ${steps}, at most ${MAX_LAYER_STEPS}; lower one of them`,
            input: spec.new_tokens,
          }
        : {
            path: ['iterations'],
            message: `too much work: iterations x accum x model.depth = ${steps}, at most ${MAX_LAYER_STEPS}; lower one of them`,
            input: spec.iterations,
          },
    );
  const m = spec.model;
  const dims = modelDims(m);
  // The widest row a tensor can have: a layer's features, the transformers' vocabulary
  // (embedding, logits) and MLP width: the family's width roles.
  const widest = Math.max(0, ...dims.widths);
  // Rows of an activation: the batch, times the sequence for the token families (per-iteration
  // shapes may have their own batch; generation's prompt + new_tokens is at most model.seq).
  const rows = Math.max(spec.batch * (dims.seq ?? 1), shapeRows(spec.shapes));
  // Weights (widest^2) and activations (rows x widest), 8 bytes per element at most.
  const tensor = Math.max(widest * widest, rows * widest) * 8;
  if (!(tensor <= MAX_TENSOR_BYTES))
    issues.push({
      path: ['model'],
      message: `describes a tensor of ${tensor} bytes, more than the ${MAX_TENSOR_BYTES}-byte (1 PiB) limit`,
      input: spec.model,
    });
  const custom = /^sim:custom:([^@]*)/.exec(spec.device);
  if (custom) {
    const bytes = deviceBytes(custom[1]);
    if (!(bytes >= MIN_DEVICE_BYTES && bytes <= MAX_DEVICE_BYTES))
      issues.push({ path: ['device'], message: 'sim:custom size must be from 1 MiB to 1 PiB', input: spec.device });
  }
  return issues;
}

/** The most rows (batch x seq) any iteration of the shapes has. */
function shapeRows(s: Shapes | null | undefined): number {
  if (!s) return 0;
  if (isDraw(s)) return s.batch * Math.max(drawMaxSeq(s), s.pad_to);
  return Math.max(0, ...s.map((x) => x.batch * x.seq));
}

/** Sizes as the native device parser reads them ("24GiB", "80 GB", "1048576"); NaN when unreadable. */
function deviceBytes(text: string): number {
  const m = /^\s*([0-9]+(?:\.[0-9]+)?)\s*([A-Za-z]*)\s*$/.exec(text);
  if (!m) return NaN;
  const units: Record<string, number> = {
    '': 1,
    b: 1,
    k: 1024,
    kib: 1024,
    m: 2 ** 20,
    mib: 2 ** 20,
    g: 2 ** 30,
    gib: 2 ** 30,
    t: 2 ** 40,
    tib: 2 ** 40,
    kb: 1e3,
    mb: 1e6,
    gb: 1e9,
    tb: 1e12,
  };
  const mult = units[m[2].toLowerCase()];
  return mult === undefined ? NaN : Number(m[1]) * mult;
}

/** A sweep's runs together: refused before the first run starts. */
export function sweepLimitIssue(specs: readonly SizedSpec[]): string | null {
  const total = specs.reduce((n, s) => n + layerSteps(s), 0);
  return total > MAX_SWEEP_LAYER_STEPS
    ? `sweep: too much work: ${total} layer passes over all runs, at most ${MAX_SWEEP_LAYER_STEPS}; use fewer values or a smaller spec`
    : null;
}

/** The hook spec.ts calls on the completed spec (its schema's refinement step), before its own cross-field rules. */
export function checkSpecLimits(
  spec: SizedSpec,
  ctx: {
    issues?: readonly unknown[];
    addIssue(issue: { code: 'custom'; path: (string | number)[]; message: string; input?: unknown }): void;
  },
): void {
  // Cross-field bounds only once every field is valid on its own (one message per fault).
  if (ctx.issues?.length) return;
  for (const i of specLimitIssues(spec)) ctx.addIssue({ code: 'custom', path: i.path, message: i.message, input: i.input });
}
