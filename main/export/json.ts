// JSON export: a whole run (meta with spec and summary, timeline, events), or many runs' metas.
import type { RunMeta, RunRecord } from '../contract/runs';

export const EXPORT_FORMAT = 'vramlab.run/1';

export function runJson(run: RunRecord): string {
  return JSON.stringify({ format: EXPORT_FORMAT, ...run }, null, 1);
}

export function runsJson(runs: readonly RunMeta[]): string {
  return JSON.stringify({ format: 'vramlab.runs/1', runs }, null, 1);
}
