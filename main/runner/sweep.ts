// A sweep: one spec, one parameter, a run per value, a few at once (pool.ts), listed in the
// values' order. Every spec is validated before the first run starts; a cancelled run ends
// the sweep (no new runs start), which returns the runs that finished.
import { sweepLimitIssue } from '../contract/limits';
import { randomBytes } from 'node:crypto';
import type { SweepResult, SweepRun } from '../contract/runs';
import { parseSpec, SpecError, type SpecInput } from '../contract/spec';
import { withParam, SWEEP_PARAMS, type SweepParam } from '../contract/sweep_params';
import type { RunManager, StartedRun } from './manager';
import type { NativeJob } from '../addon/types';
import type { Spec } from '../contract/spec';
import { runPool } from './pool';

export interface SweepOptions {
  onRunStarted?: (run: StartedRun, index: number) => void;
  /** Set by the caller: no further run starts (the caller cancels those running). */
  signal?: { cancelled: boolean };
  /** Runs at once (default pool.ts DEFAULT_PARALLEL). */
  parallel?: number;
  /** Each run's row as it finishes: `done` of `total` finished. */
  onRow?: (row: SweepRun, index: number, done: number, total: number) => void;
  /** Aborting it gives up a run still waiting for a slot (the client went away). */
  abort?: AbortSignal;
  /** Replaces each run's job (tests: the engine-free synthetic job). */
  jobFor?: (spec: Spec) => NativeJob;
}

/** A sweep as validated at the boundary: each value with its spec. */
export interface CheckedSweep {
  param: SweepParam;
  values: readonly unknown[];
  specs: Spec[];
}

/** Every value's spec, validated once, before the first run; throws SpecError naming each bad one.
 *  The boundary (host method, CLI command) calls it and hands the typed result to runSweep. */
export function checkSweep(base: unknown, param: string, values: readonly unknown[]): CheckedSweep {
  if (!(SWEEP_PARAMS as readonly string[]).includes(param))
    throw new SpecError([`sweep parameter "${param}" is not one of ${SWEEP_PARAMS.join(', ')}`]);
  if (values.length === 0 || values.length > 256) throw new SpecError(['sweep values: give 1 to 256 values']);
  const p = param as SweepParam;
  const specs = values.map((v, i) => {
    try {
      return parseSpec(withParam((base ?? {}) as SpecInput, p, v));
    } catch (err) {
      if (err instanceof SpecError) throw new SpecError(err.issues.map((m) => `value ${i + 1} (${JSON.stringify(v)}): ${m}`));
      throw err;
    }
  });
  const tooMuch = sweepLimitIssue(specs);
  if (tooMuch) throw new SpecError([tooMuch]);
  return { param: p, values, specs };
}

export async function runSweep(manager: RunManager, sweep: CheckedSweep, opts: SweepOptions = {}): Promise<SweepResult> {
  const { param: p, values, specs } = sweep;
  const sweepId = `sweep-${randomBytes(4).toString('hex')}`;
  // The device is the same for every value: one card, one context.
  const card = manager.card(specs[0].device);
  let stopped = false;
  const rows = await runPool(
    specs,
    async (spec, i): Promise<SweepRun> => {
      const value = values[i];
      const run = await manager.start(spec, {
        job: opts.jobFor?.(spec),
        signal: opts.abort,
        group: { kind: 'sweep', id: sweepId, index: i, param: p, value },
        name: `sweep ${p}=${typeof value === 'object' ? JSON.stringify(value) : String(value)}`,
      });
      opts.onRunStarted?.(run, i);
      const meta = await run.done;
      if (meta.status === 'cancelled') stopped = true;
      return {
        value,
        runId: meta.id,
        status: meta.status,
        peak_allocated: meta.summary?.peak_allocated ?? 0,
        peak_reserved: meta.summary?.peak_reserved ?? 0,
        oom: meta.status === 'oom',
        nccl: meta.summary?.nccl ?? 0,
      };
    },
    {
      limit: opts.parallel,
      stop: () => stopped || !!opts.signal?.cancelled,
      onResult: (row, i, done) => opts.onRow?.(row, i, done, specs.length),
    },
  );
  const runs = rows.filter((r): r is SweepRun => r !== undefined);
  return { sweepId, param: p, runs, total: card.total, context: card.context };
}
