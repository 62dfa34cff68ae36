// Registers the experiment methods (main/contract/run_methods.ts) on a host. The store
// opens on first use, so a host that never runs an experiment never touches the disk.
import type { Host } from '../host/host';
import type { NativeAddon } from '../addon/types';
import type { ExportedFile, RunResults } from '../contract/run_methods';
import type { RunMeta } from '../contract/runs';
import type { Spec, SweepParam } from '../contract/spec';
import { RunStore } from '../store/store';
import { compareRows } from '../store/compare';
import { timelineCsv } from '../export/timeline_csv';
import { summaryCsv } from '../export/summary_csv';
import { runJson, runsJson } from '../export/json';
import { RunManager } from './manager';
import { runSweep } from './sweep';
import { runFit } from './fit';
import { deviceTotal } from './device_total';
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
  const records = new RecordCache();
  host.onDispose(() => records.clear());
  // Closing the window or quitting stops every run (its record is finished as cancelled);
  // a process killed outright leaves runs the store marks interrupted on the next open.
  host.onDispose(() => opened?.cancelAll());
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

  host.register('run.start', async (p): Promise<RunResults['run.start']> => {
    const { spec, name } = p as { spec: Spec; name?: string };
    const run = await (await manager()).start(spec, { name });
    return { runId: run.runId };
  });
  host.register('run.cancel', async (p): Promise<RunResults['run.cancel']> => ({
    cancelled: (await manager()).cancel((p as { runId: string }).runId),
  }));
  host.register('runs.list', async (p): Promise<RunMeta[]> => {
    const group = (p as { group?: string } | undefined)?.group;
    const all = await (await store()).list();
    return group ? all.filter((m) => m.group?.id === group) : all;
  });
  // A reply must stay loadable by a browser tab: huge stored runs come back decimated.
  host.register('runs.get', async (p) => {
    const s = await store();
    const id = (p as { id: string }).id;
    const meta = await s.meta(id);
    return records.get(`${id}/${meta.updated}`, () => s.get(id, { maxSamples: MAX_REPLY_SAMPLES }));
  });
  host.register('runs.rename', async (p) => {
    const { id, name } = p as { id: string; name: string };
    return (await store()).rename(id, name);
  });
  host.register('runs.delete', async (p): Promise<RunResults['runs.delete']> => {
    const id = (p as { id: string }).id;
    (await manager()).cancel(id);
    await (await store()).delete(id);
    return { deleted: true };
  });
  host.register('runs.compare', async (p) => compareRows(await metas(await store(), (p as { ids: string[] }).ids)));
  host.register('runs.exportCsv', async (p): Promise<ExportedFile> => {
    const { id, ids } = p as { id?: string; ids?: string[] };
    const s = await store();
    if (id) return { filename: `vramlab-${id}-timeline.csv`, mime: 'text/csv', content: timelineCsv(await s.get(id)) };
    return { filename: 'vramlab-runs.csv', mime: 'text/csv', content: summaryCsv(await metas(s, ids!)) };
  });
  host.register('runs.exportJson', async (p): Promise<ExportedFile> => {
    const { id, ids } = p as { id?: string; ids?: string[] };
    const s = await store();
    if (id) return { filename: `vramlab-${id}.json`, mime: 'application/json', content: runJson(await s.get(id)) };
    return { filename: 'vramlab-runs.json', mime: 'application/json', content: runsJson(await metas(s, ids!)) };
  });
  host.register('sweep.start', async (p) => {
    const { spec, param, values } = p as { spec: Spec; param: SweepParam; values: unknown[] };
    return runSweep(await manager(), spec, param, values);
  });
  host.register('fit.start', async (p) => {
    const { spec, maxBatch } = p as { spec: Spec; maxBatch?: number };
    return runFit(await manager(), spec, deviceTotal(native, spec.device), { maxBatch });
  });
  return { manager };
}

async function metas(store: RunStore, ids: readonly string[]): Promise<RunMeta[]> {
  const out: RunMeta[] = [];
  for (const id of ids) out.push(await store.meta(id));
  return out;
}
