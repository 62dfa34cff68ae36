// The host methods the lab's screens use, typed by the contract (main/contract/methods.ts).
import type { SpecInput } from '$contract/spec';
import type { FitParam, SweepParam } from '$contract/sweep_params';
import { call, type Transport } from '../transport/transport';

export const api = {
  startRun: (t: Transport, spec: SpecInput, name?: string) => call(t, 'run.start', name ? { spec, name } : { spec }),
  cancelRun: (t: Transport, runId: string) => call(t, 'run.cancel', { runId }),
  listRuns: (t: Transport) => call(t, 'runs.list'),
  getRun: (t: Transport, id: string) => call(t, 'runs.get', { id }),
  renameRun: (t: Transport, id: string, name: string) => call(t, 'runs.rename', { id, name }),
  deleteRun: (t: Transport, id: string) => call(t, 'runs.delete', { id }),
  exportCsv: (t: Transport, target: { id: string } | { ids: string[] }) => call(t, 'runs.exportCsv', target),
  exportJson: (t: Transport, target: { id: string } | { ids: string[] }) => call(t, 'runs.exportJson', target),
  /** workId (optional): names the work for its `work.progress` events and cancelWork. */
  startSweep: (t: Transport, spec: SpecInput, param: SweepParam, values: unknown[], workId?: string) =>
    call(t, 'sweep.start', { spec, param, values, workId }),
  startFixes: (t: Transport, spec: SpecInput, workId?: string) => call(t, 'fixes.start', { spec, workId }),
  startFit: (t: Transport, spec: SpecInput, param: FitParam = 'batch', workId?: string) => call(t, 'fit.start', { spec, param, workId }),
  cancelWork: (t: Transport, workId: string) => call(t, 'work.cancel', { workId }),
  /** The spec simulated on its card; a newer request on the same channel cancels an older one. */
  predict: (t: Transport, spec: SpecInput, channel?: string) => call(t, 'run.predict', channel ? { spec, channel } : { spec }),
  /** Candidate changes simulated on the spec's card: those that fit, cheapest first. */
  remedies: (t: Transport, spec: SpecInput) => call(t, 'run.remedies', { spec }),
};
