// Side by side: each run's spec columns, readings and peaks, for the compare view.
import type { CompareRow, RunMeta } from '../contract/runs';
import { specColumns } from '../export/spec_columns';

export function compareRows(runs: readonly RunMeta[]): CompareRow[] {
  return runs.map((m) => ({
    id: m.id,
    name: m.name,
    status: m.status,
    spec: specColumns(m.spec),
    readings: m.summary?.readings ?? {},
    peak_allocated: m.summary?.peak_allocated ?? 0,
    peak_reserved: m.summary?.peak_reserved ?? 0,
  }));
}
