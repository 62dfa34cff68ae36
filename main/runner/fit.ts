// "fit": the largest batch, sequence length or generation length that completes without OOM
// under the device's capacity (or the spec's). Under a cap "fits" is not monotone in the value:
// fragmentation can make a length run out while a longer one fits (Llama-3-8B LoRA under
// 24 GB: 3969-4096 run out, 4097-4259 fit, in PyTorch too), so bisection alone answers too low.
// The search, in four steps:
//   1. doubling from the spec's value until a run fails, then bisection (k probes at once:
//      the next k doublings, then k points splitting the interval; pool.ts);
//   2. the allocated bound (fit_bound.ts): the peak *allocated* bytes do grow with the value,
//      so above the largest value whose allocated peak is within the limit nothing can fit;
//   3. every value between the bisection's answer and that bound, top down and coarse to
//      fine (a grid anchored at the bound, its step halved each pass; a fit found is followed
//      up to the edge of its run of fits by bisection), at most `probes` probes: what is left
//      unprobed when they run out is reported, never guessed;
//   4. checks below the answer (steps of 1/16 of it), whose runs out are named beside it.
// The device leaves its allocator total - context (the CUDA context and libraries), so
// what fits is what fits on the whole card, as nvidia-smi sees it.
import { randomBytes } from 'node:crypto';
import type { FitBoundPoint, FitProbe, FitResult } from '../contract/runs';
import { MAX_WORLD, modelDims } from '../contract/catalogue';
import { LIMITS, checkSpec, parseSpec, type Spec, type SpecInput } from '../contract/spec';
import { paramValue, withParam, type FitParam } from '../contract/sweep_params';
import type { RunManager, StartedRun } from './manager';
import type { NativeJob } from '../addon/types';
import { DEFAULT_PARALLEL, runPool } from './pool';
import { allocatedBound } from './fit_bound';
import { allocatorLimit } from '../contract/card';
import { SimCancelled } from './simulate';
import { MeterCancelled, allocatedMeter } from './fit_allocated';

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
  /** Probes at most for the values between the bisection's answer and the allocated bound
   *  (default FIT_SEARCH_PROBES); what they leave unprobed is reported. */
  probes?: number;
  /** Each value measured for the allocated bound, as it ends. */
  onBound?: (point: FitBoundPoint) => void;
  /** Replaces each run's job (tests: the engine-free synthetic job); `allocatedFor` must then
   *  say what such a job allocates at its peak, unbounded. */
  jobFor?: (spec: Spec) => NativeJob;
  allocatedFor?: (spec: Spec) => Promise<{ peak_allocated: number; nccl?: number }>;
}

/** Probes for the values above the bisection's answer by default: a Llama-3-8B length probe
 *  takes about 0.3 s on one core, so this is a few seconds on two. */
export const FIT_SEARCH_PROBES = 64;

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
  const budget = opts.probes ?? FIT_SEARCH_PROBES;
  if (!Number.isInteger(budget) || budget < 0) throw new Error(`fit: the probes above the answer must be a whole number (got ${budget})`);
  if (opts.jobFor && !opts.allocatedFor) throw new Error('fit: a replaced job (jobFor) needs allocatedFor for the allocated bound');
  const fitId = `fit-${randomBytes(4).toString('hex')}`;
  const probes: FitProbe[] = [];
  const tried = new Map<number, boolean>();
  const k = Math.max(1, Math.floor(opts.parallel ?? DEFAULT_PARALLEL));
  let started = 0;
  let lo = 0; // largest value known to fit (in the bisection: below the smallest known not to)
  let hi = max + 1; // smallest value known not to fit
  let growing = param !== 'world';
  /** Probes the search above the bisection's answer may still make (step 3), then the checks below (step 4). */
  let above = param !== 'world' ? budget : 0;
  let checks = param !== 'world' ? 8 : 0;

  /** Probes still to come at most: rounds of k over what is open. */
  const bound = (): number => {
    const rounds = (span: number) => (span <= 1 ? 0 : Math.ceil(Math.log(span) / Math.log(k + 1)));
    const grow = growing ? Math.ceil(Math.log2(Math.max(1, max / Math.max(lo, 1))) / k) : 0;
    return probes.length + k * (grow + rounds(hi - lo)) + above + checks;
  };
  const cancelled = () => !!opts.signal?.cancelled || !!opts.abort?.aborted;

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

  /** Probes the values not tried yet, k at once, until `enough` says so after a result; the
   *  bisection's interval (lo, hi) narrows to what they say. */
  const round = async (values: number[], enough: (p: FitProbe) => boolean = () => false): Promise<void> => {
    if (cancelled()) throw new FitCancelled();
    const fresh = [...new Set(values)].filter((v) => !tried.has(v));
    let done = probes.length;
    let stop = false;
    const got = await runPool(fresh, runProbe, {
      limit: k,
      stop: () => stop || cancelled(),
      onResult: (p) => {
        stop ||= enough(p);
        opts.onProbe?.(p, ++done, Math.max(done, bound()));
      },
    });
    if (cancelled()) throw new FitCancelled();
    for (const p of got) {
      if (!p) continue; // not started: `enough` stopped the pool
      probes.push(p);
      tried.set(p.value, p.ok);
    }
    for (const [v, ok] of tried) if (!ok && v < hi) hi = v;
    for (const [v, ok] of tried) if (ok && v > lo && v < hi) lo = v;
  };

  /** The largest value probed that fit. */
  const best = (): number => Math.max(0, ...[...tried].filter(([, ok]) => ok).map(([v]) => v));

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
    return { ...outcome(found), checkedBelow: [], runsOutBelow: [] };
  }

  // 1. Doubling from the spec's value until a run fails (or max fits).
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
  const bisected = lo;

  // 2. The allocated bound: nothing above it fits, whatever the fragmentation.
  const limitFor = (nccl: number) => allocatorLimit({ ...card, nccl }, spec.capacity);
  const fits = probes.filter((p) => p.ok);
  const known = fits.map((p) => ({ value: p.value, allocated: p.peak_allocated, limit: limitFor(p.nccl ?? 0) }));
  const specAt = (value: number) => parseSpec(withParam(base as SpecInput, param, value));
  const sims = new AbortController();
  const onAbort = () => sims.abort();
  opts.abort?.addEventListener('abort', onAbort, { once: true });
  const poll = setInterval(() => opts.signal?.cancelled && sims.abort(), 100);
  poll.unref?.();
  let allocBound;
  let exact: boolean;
  try {
    const atBest = fits.find((p) => p.value === bisected);
    const meter = opts.allocatedFor
      ? null
      : await allocatedMeter(manager, spec, specAt, atBest ? { value: atBest.value, allocated: atBest.peak_allocated } : null, sims.signal);
    allocBound = await allocatedBound(known, max, k, async (values) => {
      if (cancelled()) throw new FitCancelled();
      const got = await runPool(
        values,
        async (value) => {
          const o = opts.allocatedFor ? await opts.allocatedFor(specAt(value)) : await meter!.measure(specAt(value));
          const point = { value, allocated: 'allocated' in o ? o.allocated : o.peak_allocated, limit: limitFor(o.nccl ?? 0) };
          opts.onBound?.(point);
          return point;
        },
        { limit: k, stop: cancelled },
      );
      if (cancelled() || got.some((p) => !p)) throw new FitCancelled();
      return got as FitBoundPoint[];
    });
    exact = meter?.exact() ?? true;
  } catch (err) {
    if (cancelled() || err instanceof FitCancelled || err instanceof SimCancelled || err instanceof MeterCancelled)
      throw new FitCancelled();
    throw new Error(`fit: the allocated bound's run failed: ${(err as Error).message}`, { cause: err });
  } finally {
    clearInterval(poll);
    opts.abort?.removeEventListener('abort', onAbort);
  }
  const top = Math.max(allocBound.value, bisected);

  // 3. Every value above the bisection's answer up to the bound, top down, coarse to fine.
  const untried = () => {
    let n = 0;
    for (let x = best() + 1; x <= top; x++) if (!tried.has(x)) n++;
    return n;
  };
  let used = 0;
  above = Math.min(budget, untried());
  let stride: number | null = null;
  let step = 2 ** Math.max(0, Math.ceil(Math.log2((top - best()) / 8)));
  while (used < budget) {
    const grid: number[] = [];
    for (let x = top; x > best(); x -= step) if (!tried.has(x)) grid.push(x);
    if (!grid.length) {
      stride = step;
      if (step === 1) break;
      step /= 2;
      continue;
    }
    const before = probes.length;
    await round(grid.slice(0, budget - used), (p) => p.ok);
    used += probes.length - before;
    // A fit: bisect up to the edge of its run of fits (the nearest value above known to run out).
    let edge = Math.min(top + 1, ...[...tried].filter(([x, ok]) => !ok && x > best()).map(([x]) => x));
    while (edge - best() > 1 && used < budget) {
      const from = best();
      const mids: number[] = [];
      for (let i = 1; i <= k && mids.length < budget - used; i++) {
        const m = from + Math.floor((i * (edge - from)) / (k + 1));
        if (m > from && m < edge && !tried.has(m)) mids.push(m);
      }
      if (!mids.length) break;
      const b = probes.length;
      await round(mids);
      used += probes.length - b;
      edge = Math.min(top + 1, ...[...tried].filter(([x, ok]) => !ok && x > best()).map(([x]) => x));
    }
    above = Math.max(0, Math.min(budget - used, untried()));
  }
  above = 0;
  const answer = best();

  // 4. The checks below the answer.
  const below = belowAnswer(answer, doubled);
  checks = below.filter((x) => !tried.has(x)).length;
  await round(below.filter((x) => !tried.has(x)));
  checks = 0;
  return {
    ...outcome(answer),
    bisected,
    bound: allocBound.value,
    boundOver: allocBound.over,
    boundExact: exact,
    boundPoints: allocBound.measured,
    unexplored: ranges(answer, top, (x) => !tried.has(x)),
    stride: ranges(answer, top, (x) => !tried.has(x)).length ? stride : 1,
    checkedBelow: below,
    runsOutBelow: [...tried]
      .filter(([x, ok]) => !ok && x < answer)
      .map(([x]) => x)
      .sort((a, b) => a - b),
  };

  /** The answer `value` (0: none fits) with the batch its probe ran at, and every probe. */
  function outcome(value: number) {
    return {
      fitId,
      param,
      value,
      batch: probes.find((p) => p.value === value && p.ok)?.batch ?? 0,
      capacity: spec.capacity ?? card.total,
      total: card.total,
      context: card.context,
      probes,
    };
  }
}

/** The values in (from, to] for which `keep` holds, as inclusive ranges. */
export function ranges(from: number, to: number, keep: (x: number) => boolean): Array<[number, number]> {
  const out: Array<[number, number]> = [];
  for (let x = from + 1; x <= to; x++) {
    if (!keep(x)) continue;
    const last = out.at(-1);
    if (last && last[1] === x - 1) last[1] = x;
    else out.push([x, x]);
  }
  return out;
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
