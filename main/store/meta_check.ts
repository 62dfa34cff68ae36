// What a readable meta.json must hold before the store hands it out. One damaged file
// (hand-edited, truncated by a full disk, written by a future version) must cost only
// its own run: callers get a reason to show instead of a TypeError halfway through a list.
import type { RunMeta } from '../contract/runs';

const STATUSES = new Set(['running', 'done', 'oom', 'cancelled', 'error', 'interrupted']);

/** Why `v` is not the meta.json of run `id`, or null when it is usable. */
export function metaProblem(v: unknown, id: string): string | null {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) return 'meta.json is not a JSON object';
  const m = v as Record<string, unknown>;
  if (m.id !== id) return `meta.json names run ${JSON.stringify(m.id)}, not ${id}`;
  for (const k of ['name', 'created', 'updated', 'device'] as const)
    if (typeof m[k] !== 'string') return `meta.json: "${k}" is not a string`;
  if (typeof m.status !== 'string' || !STATUSES.has(m.status)) return `meta.json: unknown status ${JSON.stringify(m.status)}`;
  if (m.spec === null || typeof m.spec !== 'object') return 'meta.json: "spec" is not an object';
  if (m.summary !== null && (typeof m.summary !== 'object' || Array.isArray(m.summary)))
    return 'meta.json: "summary" is not an object or null';
  if (m.group !== null && m.group !== undefined && typeof m.group !== 'object') return 'meta.json: "group" is not an object or null';
  return null;
}

export function isUsableMeta(v: unknown, id: string): v is RunMeta {
  return metaProblem(v, id) === null;
}
