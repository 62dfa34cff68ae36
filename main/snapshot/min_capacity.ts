// The smallest device cap under which a trace runs to its end without running out of
// memory, for one allocator setting: a bisection over caps, each step one native replay.
// Caps move in 2 MiB steps: segments are whole 2 MiB granules, so reserved memory (and so
// the least cap that holds it) is always a multiple of 2 MiB.
import { MAX_SEARCH_EVENTS } from './oom_diagnosis';
import type { Replayer } from './replay';
import { startTotals } from './window_start';

const STEP = 2 * 2 ** 20;

export interface MinCapacity {
  allocConf: string;
  /** The smallest cap found that fits (a cap one step lower runs out of memory); null when none does or no search ran. */
  capacity: number | null;
  /** Peak reserved of the replay on the whole device (the search's upper end); null when not searched. */
  peakReserved: number | null;
  /** Native replays the search took. */
  replays: number;
  /** Why there is no capacity, when there is none. */
  note?: string;
}

const ceilStep = (b: number) => Math.ceil(b / STEP) * STEP;

export function minCapacity(r: Replayer, allocConf: string, events: number): MinCapacity {
  if (events > MAX_SEARCH_EVENTS)
    return {
      allocConf,
      capacity: null,
      peakReserved: null,
      replays: 0,
      note: `not searched: ${events} events (at most ${MAX_SEARCH_EVENTS})`,
    };
  const whole = r.run({ allocConf });
  if (whole.firstOom)
    return {
      allocConf,
      capacity: null,
      peakReserved: whole.peakReserved,
      replays: 1,
      note: `runs out of memory even on the whole simulated device (at event ${whole.firstOom.eventIndex})`,
    };
  let replays = 1;
  const fits = (cap: number) => (replays++, r.run({ allocConf, capacity: cap }).firstOom === null);
  // Reserved memory holds every allocated block and the state a late trace starts from, so a
  // cap below either fails: `lo` never fits. A cap at the whole device's peak refuses no
  // cudaMalloc, so the replay under it is the same one: `hi` fits.
  const floor = Math.max(whole.peakAllocated, r.trace.seed ? startTotals(r.trace.start).reserved : 0);
  let lo = ceilStep(floor) - STEP;
  let hi = Math.max(ceilStep(whole.peakReserved), lo + STEP);
  while (hi - lo > STEP) {
    const mid = lo + Math.floor((hi - lo) / 2 / STEP) * STEP;
    if (fits(mid)) hi = mid;
    else lo = mid;
  }
  return { allocConf, capacity: hi, peakReserved: whole.peakReserved, replays };
}
