// A snapshot dumped at an OOM holds the failed attempt as an 'oom' event. This says what
// the event tells about the device then, and finds by replay which memory cap makes the
// same allocation fail at the same event: PyTorch does not record the cap
// (set_per_process_memory_fraction), and the device's free memory alone says only
// whether the card was full or a cap stopped the job.
import type { Replayer } from './replay';
import type { RecordedOom } from './stats';

const MiB = 2 ** 20;
/** Caps are searched in device-allocation granules (segments are 2 MiB multiples). */
const STEP = 2 * MiB;
/** Beyond this many trace events a search (about 12 replays) costs too much to run unasked. */
export const MAX_SEARCH_EVENTS = 400_000;

export interface OomDiagnosis {
  eventIndex: number;
  size: number;
  deviceFree: number;
  /** True when CUDA had more free memory than requested: a cap, not the card, said no. */
  capped: boolean;
  /** Reserved and requested-live bytes when it failed (from the trace). */
  reserved: number;
  allocated: number;
  /** Caps under which the replay fails at this very event: [low, high]; null if none found or not searched. */
  reproducingCaps: { low: number; high: number; suggested: number } | null;
  /** Why no search ran, when it did not. */
  note?: string;
}

function reproduces(r: Replayer, cap: number, eventIndex: number): 'fits' | 'earlier' | 'same' {
  const o = r.run({ capacity: cap });
  if (!o.firstOom) return 'fits';
  return o.firstOom.eventIndex === eventIndex ? 'same' : o.firstOom.eventIndex < eventIndex ? 'earlier' : 'fits';
}

/** The roundest cap in [low, high]: whole GiB first, then halves, quarters, ... 2 MiB. */
function roundest(low: number, high: number): number {
  for (let unit = 2 ** 40; unit >= STEP; unit /= 2) {
    const c = Math.ceil(low / unit) * unit;
    if (c <= high) return c;
  }
  return low;
}

export function diagnoseOom(r: Replayer, oom: RecordedOom, events: number, search = events <= MAX_SEARCH_EVENTS): OomDiagnosis {
  const d: OomDiagnosis = {
    eventIndex: oom.eventIndex,
    size: oom.size,
    deviceFree: oom.deviceFree,
    capped: oom.deviceFree > oom.size,
    reserved: oom.reserved,
    allocated: oom.allocated,
    reproducingCaps: null,
  };
  if (!search) {
    d.note = `not searched (${events} events): replay with --capacity to test a cap`;
    return d;
  }
  // The cap lies above what was reserved just before the failure (it held then) and
  // below that plus the request (the request did not fit).
  let lo = Math.floor(oom.reserved / STEP) * STEP;
  let hi = Math.ceil((oom.reserved + oom.size) / STEP) * STEP + STEP;
  if (reproduces(r, hi, oom.eventIndex) !== 'fits') return d;
  // Smallest cap that fits, then the smallest that fails no earlier than the event.
  let fitLo = lo;
  let fitHi = hi;
  while (fitHi - fitLo > STEP) {
    const mid = Math.floor((fitLo + fitHi) / 2 / STEP) * STEP;
    if (reproduces(r, mid, oom.eventIndex) === 'fits') fitHi = mid;
    else fitLo = mid;
  }
  const high = fitHi - STEP;
  if (reproduces(r, high, oom.eventIndex) !== 'same') return d;
  lo = Math.max(STEP, Math.floor(oom.reserved / 2 / STEP) * STEP);
  let sameHi = high;
  if (reproduces(r, lo, oom.eventIndex) === 'same') sameHi = lo;
  else {
    while (sameHi - lo > STEP) {
      const mid = Math.floor((lo + sameHi) / 2 / STEP) * STEP;
      if (reproduces(r, mid, oom.eventIndex) === 'same') sameHi = mid;
      else lo = mid;
    }
  }
  hi = high;
  d.reproducingCaps = { low: sameHi, high: hi, suggested: roundest(sameHi, hi) };
  return d;
}
