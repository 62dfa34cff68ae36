// "fit": the largest batch, sequence length or generation length that completes without OOM
// under the device's capacity (or the spec's), by doubling from the spec's value until a
// run fails, then bisecting. Memory grows with each of them, so the fits form a prefix.
// The device leaves its allocator total - context (the CUDA context and libraries), so
// what fits is what fits on the whole card, as nvidia-smi sees it.
import { randomBytes } from 'node:crypto';
import type { FitProbe, FitResult } from '../contract/runs';
import { MAX_WORLD, modelDims } from '../contract/catalogue';
import { LIMITS, checkSpec, parseSpec, type Spec, type SpecInput } from '../contract/spec';
import { paramValue, withParam, type FitParam } from '../contract/sweep_params';
import type { RunManager, StartedRun } from './manager';
import type { NativeJob } from '../addon/types';

export interface FitOptions {
  /** What to search (default: batch). */
  param?: FitParam;
  /** Largest value to try (default: the parameter's limit). */
  max?: number;
  /** Same as max for param batch (older callers). */
  maxBatch?: number;
  onProbe?: (probe: FitProbe) => void;
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

  const probe = async (value: number): Promise<boolean> => {
    const known = tried.get(value);
    if (known !== undefined) return known;
    if (opts.signal?.cancelled) throw new FitCancelled();
    const input = withParam(base as SpecInput, param, value);
    const probeSpec = parseSpec(input);
    const run = await manager.start(probeSpec, {
      job: opts.jobFor?.(probeSpec),
      signal: opts.abort,
      group: { kind: 'fit', id: fitId, index: probes.length, param, value },
      name: `fit ${param}=${value}`,
    });
    opts.onRunStarted?.(run);
    const meta = await run.done;
    if (meta.status === 'cancelled') throw new FitCancelled();
    if (meta.status === 'error' || meta.status === 'interrupted')
      throw new Error(`fit: the run at ${param} ${value} failed: ${meta.summary?.error ?? meta.status}`);
    const ok = meta.status === 'done';
    const p: FitProbe = {
      value,
      batch: probeSpec.batch,
      ok,
      runId: meta.id,
      peak_allocated: meta.summary?.peak_allocated ?? 0,
      peak_reserved: meta.summary?.peak_reserved ?? 0,
      nccl: meta.summary?.nccl ?? 0,
    };
    probes.push(p);
    tried.set(value, ok);
    opts.onProbe?.(p);
    return ok;
  };

  if (param === 'world') {
    // Memory per rank shrinks as ranks are added: the smallest world that fits, over the
    // powers of two (the worlds people launch) up to max. 0: none fits.
    let found = 0;
    for (let w = 1; w <= max && !found; w *= 2) if (await probe(w)) found = w;
    const best = probes.find((p) => p.value === found && p.ok);
    return {
      fitId,
      param,
      value: found,
      batch: best?.batch ?? 0,
      capacity: spec.capacity ?? card.total,
      total: card.total,
      context: card.context,
      probes,
    };
  }
  let lo = 0; // largest value known to fit
  let hi = max + 1; // smallest value known not to fit
  let v = Math.min(Number(paramValue(spec as unknown as SpecInput, param)) || 1, max);
  if (await probe(v)) {
    lo = v;
    while (lo < max) {
      v = Math.min(lo * 2, max);
      if (await probe(v)) lo = v;
      else {
        hi = v;
        break;
      }
    }
  } else hi = v;
  while (hi - lo > 1) {
    const mid = Math.floor((lo + hi) / 2);
    if (await probe(mid)) lo = mid;
    else hi = mid;
  }
  const best = probes.find((p) => p.value === lo && p.ok);
  return {
    fitId,
    param,
    value: lo,
    batch: best?.batch ?? 0,
    capacity: spec.capacity ?? card.total,
    total: card.total,
    context: card.context,
    probes,
  };
}
