// "fit": the largest batch that completes without OOM under the device's capacity (or
// the spec's), by doubling from the spec's batch until a run fails, then bisecting.
// Memory grows with batch, so the fits form a prefix of the batch sizes.
import { randomBytes } from 'node:crypto';
import type { FitProbe, FitResult } from '../contract/runs';
import { LIMITS, parseSpec, type SpecInput } from '../contract/spec';
import type { RunManager, StartedRun } from './manager';
import type { NativeJob } from '../addon/types';
import type { Spec } from '../contract/spec';

export interface FitOptions {
  /** Largest batch to try (default: the schema's limit). */
  maxBatch?: number;
  onProbe?: (probe: FitProbe) => void;
  onRunStarted?: (run: StartedRun) => void;
  signal?: { cancelled: boolean };
  /** Replaces each run's job (tests: the engine-free synthetic job). */
  jobFor?: (spec: Spec) => NativeJob;
}

export class FitCancelled extends Error {
  constructor() {
    super('fit cancelled');
  }
}

export async function runFit(manager: RunManager, base: unknown, deviceTotal: number, opts: FitOptions = {}): Promise<FitResult> {
  const spec = parseSpec(base);
  const maxBatch = Math.min(opts.maxBatch ?? LIMITS.batch, LIMITS.batch);
  if (!Number.isInteger(maxBatch) || maxBatch < 1) throw new Error(`fit: max batch must be an integer from 1 to ${LIMITS.batch}`);
  const fitId = `fit-${randomBytes(4).toString('hex')}`;
  const probes: FitProbe[] = [];
  const tried = new Map<number, boolean>();

  const probe = async (batch: number): Promise<boolean> => {
    const known = tried.get(batch);
    if (known !== undefined) return known;
    if (opts.signal?.cancelled) throw new FitCancelled();
    const input = { ...(base as SpecInput), batch } as SpecInput;
    const run = await manager.start(input, {
      job: opts.jobFor?.(parseSpec(input)),
      group: { kind: 'fit', id: fitId, index: probes.length, param: 'batch', value: batch },
      name: `fit batch=${batch}`,
    });
    opts.onRunStarted?.(run);
    const meta = await run.done;
    if (meta.status === 'cancelled') throw new FitCancelled();
    if (meta.status === 'error' || meta.status === 'interrupted')
      throw new Error(`fit: the run at batch ${batch} failed: ${meta.summary?.error ?? meta.status}`);
    const ok = meta.status === 'done';
    const p: FitProbe = {
      batch,
      ok,
      runId: meta.id,
      peak_allocated: meta.summary?.peak_allocated ?? 0,
      peak_reserved: meta.summary?.peak_reserved ?? 0,
    };
    probes.push(p);
    tried.set(batch, ok);
    opts.onProbe?.(p);
    return ok;
  };

  let lo = 0; // largest batch known to fit
  let hi = maxBatch + 1; // smallest batch known not to fit
  let b = Math.min(spec.batch, maxBatch);
  if (await probe(b)) {
    lo = b;
    while (lo < maxBatch) {
      b = Math.min(lo * 2, maxBatch);
      if (await probe(b)) lo = b;
      else {
        hi = b;
        break;
      }
    }
  } else hi = b;
  while (hi - lo > 1) {
    const mid = Math.floor((lo + hi) / 2);
    if (await probe(mid)) lo = mid;
    else hi = mid;
  }
  return { fitId, batch: lo, capacity: spec.capacity ?? deviceTotal, probes };
}
