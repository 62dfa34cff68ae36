// Registers the experiment methods (main/contract/run_methods.ts) on a host. The store
// opens on first use, so a host that never runs an experiment never touches the disk.
import type { Host } from '../host/host';
import type { NativeAddon } from '../addon/types';
import type { RunMeta } from '../contract/runs';
import { RunStore } from '../store/store';
import { compareRows } from '../store/compare';
import { timelineCsv } from '../export/timeline_csv';
import { summaryCsv } from '../export/summary_csv';
import { runJson, runsJson } from '../export/json';
import { RunManager } from './manager';
import { Predictor } from './predict';
import { runSweep } from './sweep';
import { runFixes } from './fixes';
import { runFit } from './fit';
import { RecordCache } from './record_cache';

export interface RunMethodsOptions {
  home: string;
  /** False while the renderer's transport is congested (batches wait and merge). */
  ready?: () => boolean;
}

/** Samples one runs.get reply carries at most (about 30 MB of JSON). */
export const MAX_REPLY_SAMPLES = 200_000;

export function registerRunMethods(host: Host, native: NativeAddon, opts: RunMethodsOptions): { manager: () => Promise<RunManager> } {
  let opening: Promise<RunManager> | null = null;
  let opened: RunManager | null = null;
  const predictor = new Predictor(native);
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
            progress: (p) => host.emit('run.progress', p),
            done: (meta) => host.emit('run.done', { runId: meta.id, meta }),
            error: (runId, message, meta) => host.emit('run.error', { runId, message, meta }),
          },
          { ready: opts.ready },
        )),
      (err) => {
        opening = null; // let a later call retry (e.g. the folder became writable)
        throw err;
      },
    ));
  const store = async () => (await manager()).store;

  host.register('run.start', async ({ spec, name }) => ({ runId: (await (await manager()).start(spec, { name })).runId }));
  host.register('run.cancel', async ({ runId }) => ({ cancelled: (await manager()).cancel(runId) }));
  host.register('run.predict', ({ spec, channel }) => predictor.predict(spec, channel));
  host.register('runs.list', async (p) => {
    const all = await (await store()).list();
    return p?.group ? all.filter((m) => m.group?.id === p.group) : all;
  });
  // A reply must stay loadable by a browser tab: huge stored runs come back decimated.
  host.register('runs.get', async ({ id }) => {
    const s = await store();
    const meta = await s.meta(id);
    return records.get(`${id}/${meta.updated}`, () => s.get(id, { maxSamples: MAX_REPLY_SAMPLES }));
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
    if (id) return { filename: `vramlab-${id}-timeline.csv`, mime: 'text/csv' as const, content: timelineCsv(await s.get(id)) };
    return { filename: 'vramlab-runs.csv', mime: 'text/csv' as const, content: summaryCsv(await metas(s, ids ?? [])) };
  });
  host.register('runs.exportJson', async ({ id, ids }) => {
    const s = await store();
    if (id) return { filename: `vramlab-${id}.json`, mime: 'application/json' as const, content: runJson(await s.get(id)) };
    return { filename: 'vramlab-runs.json', mime: 'application/json' as const, content: runsJson(await metas(s, ids ?? [])) };
  });
  host.register('sweep.start', async ({ spec, param, values }) => runSweep(await manager(), spec, param, values));
  host.register('fixes.start', async ({ spec }) => runFixes(await manager(), spec));
  host.register('fit.start', async ({ spec, param, max, maxBatch }) => runFit(await manager(), spec, { param, max: max ?? maxBatch }));
  return { manager };
}

async function metas(store: RunStore, ids: readonly string[]): Promise<RunMeta[]> {
  const out: RunMeta[] = [];
  for (const id of ids) out.push(await store.meta(id));
  return out;
}
