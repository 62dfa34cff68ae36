// Opening a snapshot from the CLI: large files report their progress on stderr (stdout
// stays the command's answer, JSON included), every 10% of the file.
import { statSync } from 'node:fs';
import { loadSnapshotFile } from '../snapshot/import';
import type { Snapshot } from '../snapshot/model';
import { formatBytes } from './format';
import type { CliIO } from './io';

/** Files below this open in about a second: no progress lines. */
const PROGRESS_FROM_BYTES = 32 * 2 ** 20;

export function openSnapshot(file: string, io: CliIO): Snapshot {
  let size = 0;
  try {
    size = statSync(file).size;
  } catch {
    // loadSnapshotFile reports a missing or unreadable file itself.
  }
  if (size < PROGRESS_FROM_BYTES) return loadSnapshotFile(file);
  let next = 10;
  const t0 = Date.now();
  const snap = loadSnapshotFile(file, {
    onProgress: (p) => {
      const pct = Math.floor((100 * p.bytes) / p.total);
      if (pct < next) return;
      next = pct + 10;
      io.err(`reading ${file}: ${pct}% of ${formatBytes(p.total)}, ${p.events.toLocaleString('en')} events\n`);
    },
  });
  io.err(`read ${file} in ${((Date.now() - t0) / 1000).toFixed(1)} s\n`);
  return snap;
}
