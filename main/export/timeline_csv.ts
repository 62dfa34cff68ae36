// A run's timeline as CSV: one row per memory sample, bytes per category.
import { CATEGORIES, type RunRecord } from '../contract/runs';
import { annotate } from '../contract/phases';
import { toCsv, type Cell } from './csv';

export const TIMELINE_COLUMNS = [
  'time_ms',
  'phase',
  'iteration',
  'micro_batch',
  'allocated_bytes',
  'reserved_bytes',
  'active_bytes',
  'requested_bytes',
  ...CATEGORIES.map((c) => `${c}_bytes`),
  'cached_free_bytes',
];

export function timelineCsv(run: Pick<RunRecord, 'timeline' | 'events'>): string {
  const at = annotate(run.timeline, run.events);
  return toCsv(
    TIMELINE_COLUMNS,
    run.timeline.map((s, i): Cell[] => [
      round3(s.t),
      at[i].phase,
      at[i].iteration,
      at[i].micro_batch,
      s.allocated,
      s.reserved,
      s.active,
      s.requested,
      ...CATEGORIES.map((_, c) => s.by[c] ?? 0),
      Math.max(0, s.reserved - s.allocated),
    ]),
  );
}

function round3(x: number): number {
  return Math.round(x * 1000) / 1000;
}
