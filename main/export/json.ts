// JSON export: a whole run (meta with spec and summary, timeline, events), or many runs' metas.
// A run can be larger than one string may be (a run stored before history was capped holds
// millions of events), so the export also comes in pieces, chunk by chunk: the same text.
import type { MemorySample, RunEvent, RunMeta, RunRecord } from '../contract/runs';
import { exportedMeta } from './applied_spec';

export const EXPORT_FORMAT = 'vramlab.run/1';

export function runJson(run: RunRecord): string {
  return JSON.stringify({ format: EXPORT_FORMAT, ...run, meta: exportedMeta(run.meta) }, null, 1);
}

export function runsJson(runs: readonly RunMeta[]): string {
  return JSON.stringify({ format: 'vramlab.runs/1', runs: runs.map(exportedMeta) }, null, 1);
}

export interface RunChunk {
  samples: readonly MemorySample[];
  events: readonly RunEvent[];
}

/** runJson's text in pieces of about one chunk each; `chunks` is read twice (timeline, then events). */
export async function* runJsonPieces(
  meta: RunMeta,
  chunks: () => AsyncIterable<RunChunk>,
  decimated?: RunRecord['decimated'],
): AsyncGenerator<string> {
  yield `{\n "format": ${JSON.stringify(EXPORT_FORMAT)},\n "meta": ${nested(exportedMeta(meta))}`;
  for (const key of ['timeline', 'events'] as const) {
    yield `,\n ${JSON.stringify(key)}: [`;
    let n = 0;
    for await (const c of chunks()) {
      let piece = '';
      for (const x of key === 'timeline' ? c.samples : c.events) piece += `${n++ ? ',' : ''}\n  ${nested(x, '  ')}`;
      if (piece) yield piece;
    }
    yield n ? '\n ]' : ']';
  }
  if (decimated) yield `,\n "decimated": ${nested(decimated)}`;
  yield '\n}';
}

/** JSON.stringify(v, null, 1) as it reads nested under `pad` more spaces. */
function nested(v: unknown, pad = ' '): string {
  return JSON.stringify(v, null, 1).replace(/\n/g, `\n${pad}`);
}
