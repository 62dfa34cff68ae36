// Registers the experiment methods (main/contract/run_methods.ts) on a host. The store
// opens on first use, so a host that never runs an experiment never touches the disk.
import type { Host } from '../host/host';
import type { NativeAddon } from '../addon/types';
import type { FitProbe, FixRow, RunMeta, SweepRun, WorkProgress } from '../contract/runs';
import { RunStore } from '../store/store';
import { compareRows } from '../store/compare';
import { timelineCsv } from '../export/timeline_csv';
import { summaryCsv } from '../export/summary_csv';
import { runJson, runsJson } from '../export/json';
import { RunManager, type StartedRun } from './manager';
import { WorkSlots } from './slots';
import type { Client } from '../host/client';
import os from 'node:os';
import { Predictor } from './predict';
import { checkSweep, runSweep } from './sweep';
import { runFixes } from './fixes';
import { runFit } from './fit';
import { RecordCache } from './record_cache';
import { HISTORY_CAP } from '../store/decimate';

export interface RunMethodsOptions {
  home: string;
  /** False while the renderer's transport is congested (batches wait and merge). */
  ready?: () => boolean;
  /** Runs and predictions at once across every client (each holds hundreds of MB while it
   *  goes); more wait, up to maxWaiting each, then are answered busy (`unavailable`). */
  maxRuns?: number;
  maxPredictions?: number;
  maxWaiting?: number;
  /** Runs at once within one sweep, fit or fixes (default pool.ts DEFAULT_PARALLEL). */
  parallel?: number;
}

type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;

/** Default bound on work at once: the cores, 2 to 4 (a run or prediction keeps one busy). */
export const DEFAULT_MAX_WORK = Math.max(2, Math.min(4, os.availableParallelism()));
export const DEFAULT_MAX_WAITING = 32;

/** A viewer gets a run's progress at most this often: 30 a second draws a smooth chart, and
 *  a viewer (a browser tab on the same cores as the run) then parses and draws half what it
 *  did at 60, which left the run's own thread less CPU. */
export const LIVE_FRAME_MS = 33;

/** Samples one runs.get reply carries at most (about 30 MB of JSON). */
export const MAX_REPLY_SAMPLES = 200_000;
const REPLY_BOUNDS = { maxSamples: MAX_REPLY_SAMPLES, maxEvents: HISTORY_CAP };

export interface WorkLoad {
  runs: number;
  predictions: number;
  waiting: number;
}

export function registerRunMethods(
  host: Host,
  native: NativeAddon,
  opts: RunMethodsOptions,
): { manager: () => Promise<RunManager>; load: () => WorkLoad } {
  let opening: Promise<RunManager> | null = null;
  let opened: RunManager | null = null;
  const waiting = opts.maxWaiting ?? DEFAULT_MAX_WAITING;
  const runSlots = new WorkSlots('runs', opts.maxRuns ?? DEFAULT_MAX_WORK, waiting);
  const predictionSlots = new WorkSlots('predictions', opts.maxPredictions ?? DEFAULT_MAX_WORK, waiting);
  const predictor = new Predictor(native, predictionSlots);
  /** Work holding a slot now, and waiting for one (tests, the load bench). */
  const load = (): WorkLoad => ({
    runs: runSlots.active,
    predictions: predictionSlots.active,
    waiting: runSlots.queued + predictionSlots.queued,
  });
  const records = new RecordCache();
  host.onDispose(() => records.clear());
  // Closing the window or quitting stops every run (its record is finished as cancelled);
  // a process killed outright leaves runs the store marks interrupted on the next open.
  host.onDispose(() => {
    opened?.cancelAll();
    predictor.cancelAll();
  });
  const manager = () =>
    (opening ??= RunStore.open(opts.home).then(
      (store) =>
        (opened = new RunManager(
          native,
          store,
          {
            // Run events go to the run's subscribers only (who started it, or asked).
            progress: (p) => host.emitTo(p.runId, 'run.progress', p),
            done: (meta, batches) => {
              host.emitTo(meta.id, 'run.done', { runId: meta.id, meta, batches });
              host.endTopic(meta.id);
            },
            error: (runId, message, meta) => {
              host.emitTo(runId, 'run.error', { runId, message, meta });
              host.endTopic(runId);
            },
          },
          { ready: opts.ready, intervalMs: LIVE_FRAME_MS },
          runSlots,
        )),
      (err) => {
        opening = null; // let a later call retry (e.g. the folder became writable)
        throw err;
      },
    ));
  const store = async () => (await manager()).store;

  /** The client follows the run and the run ends if the client goes. */
  const own = (m: RunManager, client: Client, run: StartedRun) => {
    host.subscribe(client, run.runId);
    const off = client.onClose(() => m.cancel(run.runId));
    void run.done.then(off);
  };
  /** Sweeps, fits and fixes under way that their client named (workId), by client and name. */
  const works = new Map<string, () => void>();
  /** A sweep, fit or fixes: stops (every run it started cancelled) when its client goes or
   *  calls work.cancel; with a workId, its client gets `work.progress` as each run ends. */
  const work = (m: RunManager, client: Client, workId: string | undefined) => {
    const signal = { cancelled: false };
    const running = new Set<string>();
    const stop = () => {
      signal.cancelled = true;
      for (const id of running) m.cancel(id);
    };
    const key = workId === undefined ? null : `${client.id}\u0000${workId}`;
    if (key !== null) {
      if (works.has(key)) throw new Error(`work "${workId}" is already under way`);
      works.set(key, stop);
    }
    const topic = `work:${client.id}:${workId ?? ''}`;
    if (key !== null) host.subscribe(client, topic);
    const offClose = client.onClose(stop);
    return {
      signal,
      abort: client.signal,
      onRunStarted: (run: StartedRun) => {
        running.add(run.runId);
        void run.done.then(() => running.delete(run.runId));
        own(m, client, run);
      },
      progress: (p: DistributiveOmit<WorkProgress, 'workId'>) => {
        if (workId !== undefined) host.emitTo(topic, 'work.progress', { ...p, workId });
      },
      off: () => {
        offClose();
        if (key !== null) {
          works.delete(key);
          host.endTopic(topic);
        }
      },
    };
  };
  const until = async <T>(w: { off: () => void }, p: Promise<T>): Promise<T> => {
    try {
      return await p;
    } finally {
      w.off();
    }
  };

  host.register('run.start', async ({ spec, name }, { client }) => {
    const m = await manager();
    const run = await m.start(spec, { name, signal: client.signal });
    own(m, client, run);
    return { runId: run.runId };
  });
  host.register('run.subscribe', async ({ runId }, { client }) => {
    const live = (await manager()).activeRuns().includes(runId);
    if (live) host.subscribe(client, runId);
    return { subscribed: live };
  });
  host.register('run.cancel', async ({ runId }) => ({ cancelled: (await manager()).cancel(runId) }));
  host.register('run.predict', ({ spec, channel }, { client }) =>
    predictor.predict(spec, `${client.id}\u0000${channel ?? ''}`, client.signal),
  );
  host.register('run.remedies', ({ spec }, { client }) => predictor.remedies(spec, client.signal));
  host.register('runs.list', async (p) => {
    const all = await (await store()).list();
    return p?.group ? all.filter((m) => m.group?.id === p.group) : all;
  });
  // A reply must stay loadable by a browser tab: huge stored runs come back decimated.
  host.register('runs.get', async ({ id }) => {
    const s = await store();
    const meta = await s.meta(id);
    return records.get(`${id}/${meta.updated}`, () => s.get(id, REPLY_BOUNDS));
  });
  host.register('runs.rename', async ({ id, name }) => (await store()).rename(id, name));
  host.register('runs.delete', async ({ id }) => {
    (await manager()).cancel(id);
    await (await store()).delete(id);
    return { deleted: true as const };
  });
  host.register('runs.compare', async ({ ids }) => compareRows(await metas(await store(), ids)));
  host.register('runs.exportCsv', async ({ id, ids }) => {
    const s = await store();
    if (id)
      return { filename: `vramlab-${id}-timeline.csv`, mime: 'text/csv' as const, content: timelineCsv(await s.get(id, REPLY_BOUNDS)) };
    return { filename: 'vramlab-runs.csv', mime: 'text/csv' as const, content: summaryCsv(await metas(s, ids ?? [])) };
  });
  host.register('runs.exportJson', async ({ id, ids }) => {
    const s = await store();
    // The download is built in the tab: bounded like runs.get (a run stored before history was
    // capped comes back thinned, with `decimated` saying so). `vramlab runs export` streams it whole.
    if (id) return { filename: `vramlab-${id}.json`, mime: 'application/json' as const, content: runJson(await s.get(id, REPLY_BOUNDS)) };
    return { filename: 'vramlab-runs.json', mime: 'application/json' as const, content: runsJson(await metas(s, ids ?? [])) };
  });
  host.register('sweep.start', async ({ workId, spec, param, values }, { client }) => {
    const m = await manager();
    const w = work(m, client, workId);
    const onRow = (row: SweepRun, index: number, done: number, total: number) => w.progress({ kind: 'sweep', index, row, done, total });
    return until(w, runSweep(m, checkSweep(spec, param, values), { ...w, parallel: opts.parallel, onRow }));
  });
  host.register('fixes.start', async ({ workId, spec }, { client }) => {
    const m = await manager();
    const w = work(m, client, workId);
    const onRow = (row: FixRow, index: number, done: number, total: number) => w.progress({ kind: 'fixes', index, row, done, total });
    return until(w, runFixes(m, spec, { ...w, parallel: opts.parallel, onRow }));
  });
  host.register('fit.start', async ({ workId, spec, param, max, maxBatch, probes }, { client }) => {
    const m = await manager();
    const w = work(m, client, workId);
    const onProbe = (row: FitProbe, done: number, total: number) => w.progress({ kind: 'fit', row, done, total });
    return until(w, runFit(m, spec, { param, max: max ?? maxBatch, probes, ...w, parallel: opts.parallel, onProbe }));
  });
  host.register('work.cancel', ({ workId }, { client }) => {
    const stop = works.get(`${client.id}\u0000${workId}`);
    stop?.();
    return { cancelled: !!stop };
  });
  return { manager, load };
}

async function metas(store: RunStore, ids: readonly string[]): Promise<RunMeta[]> {
  const out: RunMeta[] = [];
  for (const id of ids) out.push(await store.meta(id));
  return out;
}
