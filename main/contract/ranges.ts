// Readings PyTorch itself does not fix (DDP after its bucket rebuild) carry [low, high]:
// shown as "low–high" with one line of why wherever readings are listed.
import { formatBytes } from './units';

/** Why a reading is a range: the one mechanism the engine reports ranges for. */
export const RANGE_WHY =
  "PyTorch may or may not still hold the first iteration's gradient bucket there (DDP all-reduces it on NCCL, whose watchdog frees it whenever it next wakes); every other reading is exact";

export type Ranges = Record<string, [number, number]> | undefined | null;

/** The reading as bytes, or "low–high" where it is a range. */
export function rangeOrBytes(key: string, value: number, ranges: Ranges): string {
  const r = ranges?.[key];
  return r ? `${formatBytes(r[0])}–${formatBytes(r[1])}` : formatBytes(value);
}

export function hasRanges(ranges: Ranges): boolean {
  return !!ranges && Object.keys(ranges).length > 0;
}
