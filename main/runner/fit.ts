// "fit": the largest batch, sequence length or generation length that completes without OOM
// under the device's capacity (or the spec's), by doubling from the spec's value until a
// run fails, then bisecting. Bisection assumes the fits form a prefix, and under a cap they
// need not: fragmentation can make a length run out while a longer one fits (Llama-3-8B LoRA
// under 24 GB: 3840 runs out, 4224 fits, in PyTorch too). So the answer is then checked
// below, in steps of 1/16 of it down to the last fit the doubling reached, and the lengths
// that run out there are reported beside it. With k probes at once (pool.ts) each round tries the next k doublings, then k points
// splitting the interval into k+1 parts; k = 1 is the plain doubling and bisection.
// The device leaves its allocator total - context (the CUDA context and libraries), so
// what fits is what fits on the whole card, as nvidia-smi sees it.
import { randomBytes } from 'node:crypto';
import type { FitProbe, FitResult } from '../contract/runs';
import { MAX_WORLD, modelDims } from '../contract/catalogue';
import { LIMITS, checkSpec, parseSpec, type Spec, type SpecInput } from '../contract/spec';
import { paramValue, withParam, type FitParam } from '../contract/sweep_params';
import type { RunManager, StartedRun } from './manager';
import type { NativeJob } from '../addon/types';
import { DEFAULT_PARALLEL, runPool } from './pool';

export interface FitOptions {
  /** What to search (default: batch). */
  param?: FitParam;
  /** Largest value to try (default: the parameter's limit). */
  max?: number;
  /** Same as max for param batch (older callers). */
  maxBatch?: number;
  /** Each probe as it ends: `done` probes so far of at most `bound` (an estimate from the
   *  interval still open; it shrinks as the search narrows). */
  onProbe?: (probe: FitProbe, done: number, bound: number) => void;
  /** Probes at once (default pool.ts DEFAULT_PARALLEL). */
  parallel?: number;
  onRunStarted?: (run: StartedRun) => void;
  signal?: { cancelled: boolean };
  /** Aborting it gives up a run still waiting for a slot (the client went away). */
  abort?: AbortSignal;
  /** Replaces each run's job (tests: the engine-free synthetic job). */
  jobFor?: (spec: Spec) => NativeJob;
}

export class FitCancelled extends Error {
  constructor() {
    super('fit cancelled');
  }
}

/** The largest value a parameter can take for this spec (new_tokens: what model.seq leaves
 *  after the prompt), and that the spec's work and size limits still accept (limits.ts):
 *  a search never steps onto a spec that would be refused instead of run. */
export function fitLimit(spec: Spec, param: FitParam): number {
  const range = fitRange(spec, param);
  const accepted = (v: number) => checkSpec(withParam(spec as unknown as SpecInput, param, v)).ok;
  if (accepted(range)) return range;
  // Above the spec's own value a larger one only adds work or size: bisect for the last accepted.
  let lo = Math.min(Number(paramValue(spec as unknown as SpecInput, param)) || 1, range);
  let hi = range;
  if (!accepted(lo)) return lo;
  while (hi - lo > 1) {
    const mid = Math.floor((lo + hi) / 2);
    if (accepted(mid)) lo = mid;
    else hi = mid;
  }
  return lo;
}

function fitRange(spec: Spec, param: FitParam): number {
  if (param === 'batch') return LIMITS.batch;
  if (param === 'world') return MAX_WORLD;
  const seq = modelDims(spec.model).seq;
  if (seq === null) throw new Error(`fit: ${param} applies to the transformer families; model.kind is "${spec.model.kind}"`);
  if (param === 'seq') return LIMITS.seq;
  if (spec.mode !== 'generate') throw new Error('fit: new_tokens applies to mode "generate"');
  return seq - spec.prompt;
}

export async function runFit(manager: RunManager, base: unknown, opts: FitOptions = {}): Promise<FitResult> {
  const spec = parseSpec(base);
  const card = manager.card(spec.device);
  const param: FitParam = opts.param ?? 'batch';
  const limit = fitLimit(spec, param);
  const max = Math.min(opts.max ?? opts.maxBatch ?? limit, limit);
  if (!Number.isInteger(max) || max < 1) throw new Error(`fit: the largest ${param} to try must be an integer from 1 to ${limit}`);
  const fitId = `fit-${randomBytes(4).toString('hex')}`;
  const probes: FitProbe[] = [];
  const tried = new Map<number, boolean>();
  const k = Math.max(1, Math.floor(opts.parallel ?? DEFAULT_PARALLEL));
  let started = 0;
  let lo = 0; // largest value known to fit
  let hi = max + 1; // smallest value known not to fit
  let growing = param !== 'world';
  /** The checks below the answer still to come (belowAnswer: at most 8). */
  let checks = param !== 'world' ? 8 : 0;

  /** Probes still to come at most: rounds of k over what is open. */
  const bound = (): number => {
    const rounds = (span: number) => (span <= 1 ? 0 : Math.ceil(Math.log(span) / Math.log(k + 1)));
    const grow = growing ? Math.ceil(Math.log2(Math.max(1, max / Math.max(lo, 1))) / k) : 0;
    return probes.length + k * (grow + rounds(hi - lo)) + checks;
  };

  const runProbe = async (value: number): Promise<FitProbe> => {
    const input = withParam(base as SpecInput, param, value);
    const probeSpec = parseSpec(input);
    const run = await manager.start(probeSpec, {
      job: opts.jobFor?.(probeSpec),
      signal: opts.abort,
      group: { kind: 'fit', id: fitId, index: started++, param, value },
      name: `fit ${param}=${value}`,
    });
    opts.onRunStarted?.(run);
    const meta = await run.done;
    if (meta.status === 'cancelled') throw new FitCancelled();
    if (meta.status === 'error' || meta.status === 'interrupted')
      throw new Error(`fit: the run at ${param} ${value} failed: ${meta.summary?.error ?? meta.status}`);
    return {
      value,
      batch: probeSpec.batch,
      ok: meta.status === 'done',
      runId: meta.id,
      peak_allocated: meta.summary?.peak_allocated ?? 0,
      peak_reserved: meta.summary?.peak_reserved ?? 0,
      nccl: meta.summary?.nccl ?? 0,
    };
  };

  /** Probes the values not tried yet, k at once; the interval (lo, hi) narrows to what they say. */
  const round = async (values: number[]): Promise<void> => {
    if (opts.signal?.cancelled) throw new FitCancelled();
    const fresh = [...new Set(values)].filter((v) => !tried.has(v));
    let done = probes.length;
    const got = await runPool(fresh, runProbe, {
      limit: k,
      stop: () => !!opts.signal?.cancelled,
      onResult: (p) => opts.onProbe?.(p, ++done, Math.max(done, bound())),
    });
    for (const p of got) {
      if (!p) throw new FitCancelled();
      probes.push(p);
      tried.set(p.value, p.ok);
    }
    for (const [v, ok] of tried) if (!ok && v < hi) hi = v;
    for (const [v, ok] of tried) if (ok && v > lo && v < hi) lo = v;
  };

  /** The answer: `value` (0: none fits) with the batch its probe ran at, and every probe. */
  const result = (value: number, checkedBelow: number[] = []): FitResult => ({
    fitId,
    param,
    value,
    checkedBelow,
    runsOutBelow: checkedBelow.filter((v) => tried.get(v) === false),
    batch: probes.find((p) => p.value === value && p.ok)?.batch ?? 0,
    capacity: spec.capacity ?? card.total,
    total: card.total,
    context: card.context,
    probes,
  });

  if (param === 'world') {
    // Memory per rank shrinks as ranks are added: the smallest world that fits, over the
    // powers of two (the worlds people launch) up to max. 0: none fits.
    let found = 0;
    for (let w = 1; w <= max && !found;) {
      const worlds: number[] = [];
      for (; w <= max && worlds.length < k; w *= 2) worlds.push(w);
      await round(worlds);
      found = worlds.find((x) => tried.get(x)) ?? 0;
    }
    return result(found);
  }
  // Doubling from the spec's value until a run fails (or max fits).
  let v = Math.min(Number(paramValue(spec as unknown as SpecInput, param)) || 1, max);
  const doublings: number[] = [v];
  while (doublings.length < k && v < max) doublings.push((v = Math.min(v * 2, max)));
  await round(doublings);
  while (hi > max && lo < max) {
    const next: number[] = [];
    for (let x = lo; next.length < k && x < max;) next.push((x = Math.min(x * 2, max)));
    await round(next);
  }
  growing = false;
  const doubled = [...tried].filter(([, ok]) => ok).map(([x]) => x);
  // Then k points splitting (lo, hi) into k + 1 parts each round (k = 1: the midpoint).
  while (hi - lo > 1) {
    const mids: number[] = [];
    for (let i = 1; i <= k; i++) {
      const m = lo + Math.floor((i * (hi - lo)) / (k + 1));
      if (m > lo && m < hi) mids.push(m);
    }
    await round(mids);
  }
  const below = belowAnswer(lo, doubled);
  checks = below.filter((x) => !tried.has(x)).length;
  await round(below.filter((x) => !tried.has(x)));
  checks = 0;
  return result(lo, below);
}

/**
 * The values below an answer worth checking, largest first: steps of 1/16 of it, down to
 * (not including) the largest fit the doubling reached below it, else half the answer. At
 * most 8, so a fit costs a bounded few more probes.
 */
export function belowAnswer(answer: number, doubledFits: number[]): number[] {
  if (answer <= 1) return [];
  const reached = Math.max(0, ...doubledFits.filter((x) => x < answer));
  const floor = reached > 0 ? reached : Math.floor(answer / 2);
  const step = Math.max(1, Math.ceil(answer / 16));
  const out: number[] = [];
  for (let x = answer - step; x > floor && x > 0; x -= step) out.push(x);
  return out;
}
