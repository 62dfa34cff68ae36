// Arguments the snapshot commands (info, replay) share: --device and --top, read strictly
// (Number("") is 0 and Number("abc") is NaN: both used to pass), and the device a snapshot
// names checked before it is used.
import { preview, quote } from '../contract/echo';
import type { Snapshot } from '../snapshot/model';
import { UsageError } from './io';

/** CUDA device ordinals a snapshot can hold (PyTorch numbers devices from 0). */
export const MAX_DEVICE = 1023;
export const MAX_TOP = 1000;

/** --device N: a whole number from 0 to MAX_DEVICE. */
export function deviceArg(v: string): number {
  if (!/^[0-9]{1,4}$/.test(v) || Number(v) > MAX_DEVICE)
    throw new UsageError(`--device must be a device index from 0 to ${MAX_DEVICE} (got ${quote(v, 40)})`);
  return Number(v);
}

/** --top N: how many rows, from 1 to MAX_TOP. */
export function topArg(v: string): number {
  if (!/^[0-9]{1,4}$/.test(v) || Number(v) < 1 || Number(v) > MAX_TOP)
    throw new UsageError(`--top must be a whole number from 1 to ${MAX_TOP} (got ${quote(v, 40)})`);
  return Number(v);
}

/**
 * The device to read: the one asked for, which the snapshot must hold (a trace or a segment),
 * or the one the snapshot itself picks (busiest), which must be a real index.
 */
export function checkDevice(snap: Snapshot, device: number, asked: boolean): void {
  if (asked) {
    if (snap.deviceTraces[device]?.length || snap.segments.some((g) => g.device === device)) return;
    const held = [...new Set([...snap.deviceTraces.flatMap((t, i) => (t.length ? [i] : [])), ...snap.segments.map((g) => g.device)])];
    const list = held.length
      ? `it holds device${held.length > 1 ? 's' : ''} ${held.slice(0, 8).join(', ')}${held.length > 8 ? ', ...' : ''}`
      : 'it holds no device';
    throw new UsageError(`the snapshot has nothing for device ${device} (${list})`);
  }
  if (!Number.isInteger(device) || device < 0 || device > MAX_DEVICE)
    throw new Error(
      `the snapshot has no allocation trace and its segments name device ${preview(device, 20)}, which is not a device index (0 to ${MAX_DEVICE}): the file is damaged or not from torch.cuda.memory._dump_snapshot()`,
    );
}
