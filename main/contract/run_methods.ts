// Host methods for experiments: runs, the prediction, the run store, exports, sweeps and fit.
// Events: `run.progress` (RunProgress, batched per frame), `run.done` (RunDone),
// `run.error` (RunErrorEvent), each sent only to the run's subscribers (run.subscribe);
// `work.progress` (WorkProgress) to the client that started a sweep, fit or fixes with a workId.
import { z } from 'zod';
import type { CompareRow, FitResult, FixesResult, Prediction, RunMeta, RunRecord, SweepResult } from './runs';
export type { WorkProgress } from './runs';
import type { RemediesResult } from './verdict';
import { SpecSchema, LIMITS } from './spec';
import { SWEEP_PARAMS, FIT_PARAMS } from './sweep_params';

const runId = z.string({ error: 'must be a run id' }).min(1).max(64);
/** The client's name for a sweep, fit or fixes: its progress events carry it, work.cancel takes it. */
const workId = z.string({ error: 'must be a work id' }).min(1).max(64).optional();
const ids = z.array(runId).min(1).max(500);
const exportTarget = z
  .strictObject({ id: runId.optional(), ids: ids.optional() })
  .refine((p) => (p.id === undefined) !== (p.ids === undefined), { error: 'give either id (one run) or ids (a summary of many)' });

export const runMethods = {
  /** Validates the spec and starts a run; resolves as soon as it runs. */
  'run.start': { params: z.strictObject({ spec: SpecSchema, name: z.string().max(200).optional() }) },
  /** Run events (run.progress, run.done, run.error) go to the client that started the run;
   * another client receives a running run's events after subscribing to it. */
  'run.subscribe': { params: z.strictObject({ runId }) },
  'run.cancel': { params: z.strictObject({ runId }) },
  /** The spec run on the simulated device of its card, without history or samples: the exact
   * peak before running. A newer request on the same channel cancels the one in flight. */
  'run.predict': { params: z.strictObject({ spec: SpecSchema, channel: z.string().max(64).optional() }) },
  /** Candidate changes (allocator settings, checkpointing, accumulation, LoRA, bf16, a larger
   * card) each simulated on the spec's card; those that fit, cheapest first (runner/remedies.ts). */
  'run.remedies': { params: z.strictObject({ spec: SpecSchema }) },
  'runs.list': { params: z.undefined().or(z.strictObject({ group: z.string().max(64).optional() })) },
  'runs.get': { params: z.strictObject({ id: runId }) },
  'runs.rename': { params: z.strictObject({ id: runId, name: z.string().min(1).max(200) }) },
  'runs.delete': { params: z.strictObject({ id: runId }) },
  'runs.compare': { params: z.strictObject({ ids }) },
  /** id: the run's timeline; ids: one summary row per run. */
  'runs.exportCsv': { params: exportTarget },
  'runs.exportJson': { params: exportTarget },
  /** Runs one spec per value, a few at once, listed in the values' order; resolves when all ran
   *  (or, cancelled, with those that finished). */
  'sweep.start': {
    params: z.strictObject({
      workId,
      spec: SpecSchema,
      param: z.enum(SWEEP_PARAMS),
      values: z.array(z.unknown()).min(1).max(256),
    }),
  },
  /** The usual fixes for varying sequence lengths, one run each (main/runner/fixes.ts); resolves when all ran. */
  'fixes.start': { params: z.strictObject({ workId, spec: SpecSchema }) },
  /** The largest batch (or seq, or new_tokens) that runs without OOM, up to the allocated bound
   *  (runner/fit.ts), with at most `probes` probes above bisection's answer; resolves when found. */
  'fit.start': {
    params: z.strictObject({
      workId,
      spec: SpecSchema,
      param: z.enum(FIT_PARAMS).optional(),
      max: z.number().int().min(1).max(LIMITS.batch).optional(),
      maxBatch: z.number().int().min(1).max(LIMITS.batch).optional(),
      probes: z.number().int().min(0).max(100_000).optional(),
    }),
  },
  /** Stops the caller's sweep, fit or fixes of that workId: no run starts, those running are
   *  cancelled; the start call then resolves (a fit: fails as cancelled). */
  'work.cancel': { params: z.strictObject({ workId: z.string().min(1).max(64) }) },
} as const;

export interface ExportedFile {
  filename: string;
  mime: 'text/csv' | 'application/json';
  content: string;
}

export interface RunResults {
  'run.start': { runId: string };
  'run.subscribe': { subscribed: boolean };
  'run.cancel': { cancelled: boolean };
  'run.predict': Prediction;
  'run.remedies': RemediesResult;
  'runs.list': RunMeta[];
  'runs.get': RunRecord;
  'runs.rename': RunMeta;
  'runs.delete': { deleted: true };
  'runs.compare': CompareRow[];
  'runs.exportCsv': ExportedFile;
  'runs.exportJson': ExportedFile;
  'sweep.start': SweepResult;
  'fit.start': FitResult;
  'fixes.start': FixesResult;
  'work.cancel': { cancelled: boolean };
}
