// Many runs as one CSV: a row per run with its spec columns, outcome and readings.
import type { RunMeta } from '../contract/runs';
import { toCsv, type Cell } from './csv';
import { SPEC_COLUMNS, specColumns } from './spec_columns';

const OUTCOME_COLUMNS = [
  'duration_ms',
  'peak_allocated_bytes',
  'peak_reserved_bytes',
  'parameters',
  'trainable_parameters',
  'sdpa_backend',
  'oom',
  'oom_requested_bytes',
  'fits',
  'on_card_bytes',
  'card_limit_bytes',
  'margin_bytes',
] as const;

export function summaryCsv(runs: readonly RunMeta[]): string {
  // Reading keys in first-seen order across runs (it0_..., it1_... stay together).
  const keys: string[] = [];
  const seen = new Set<string>();
  for (const r of runs)
    for (const k of Object.keys(r.summary?.readings ?? {}))
      if (!seen.has(k)) {
        seen.add(k);
        keys.push(k);
      }
  const header = ['id', 'name', 'status', 'created', ...SPEC_COLUMNS, ...OUTCOME_COLUMNS, ...keys.map((k) => `${k}_bytes`)];
  const rows = runs.map((r): Cell[] => {
    const s = r.summary;
    const spec = specColumns(r.spec);
    return [
      r.id,
      r.name,
      r.status,
      r.created,
      ...SPEC_COLUMNS.map((c) => spec[c]),
      s?.duration_ms ?? null,
      s?.peak_allocated ?? null,
      s?.peak_reserved ?? null,
      s?.parameters ?? null,
      s?.trainable_parameters ?? null,
      s?.sdpa_backend ?? null,
      s ? s.oom !== null : null,
      s?.oom?.requested ?? null,
      // The verdict: on the card (needed, after an OOM) and headroom (negative: the shortfall).
      s?.verdict?.fits ?? null,
      s?.verdict?.on_card ?? null,
      s?.verdict?.limit ?? null,
      s?.verdict?.margin ?? null,
      ...keys.map((k) => s?.readings[k] ?? null),
    ];
  });
  return toCsv(header, rows);
}
