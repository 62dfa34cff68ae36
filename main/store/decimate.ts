// What a run keeps on disk, bounded whatever its length. The summary's
// peaks come from every sample (PeakTracker); the stored timeline is decimated:
//   - samples: the first LEVEL_SAMPLES at full rate, the next LEVEL_SAMPLES buckets of 2,
//     then of 4, ... Each bucket keeps its highest-allocated sample and its highest-
//     reserved one, so every peak (the run's, a phase's) is kept exactly, at its time.
//     Stored <= 2 x LEVEL_SAMPLES x (1 + log2(raw / LEVEL_SAMPLES)).
//   - events: whole iterations are kept or dropped together (phases stay paired; an
//     allocator event belongs to the iteration of the phase marker before it): all of the
//     first LEVEL_EVENTS events, then every 2nd iteration, then every 4th, ... At most
//     HISTORY_CAP events in all: past it only the OOM and the ends of kept phases are
//     stored, and the run is marked truncated (one iteration of a deep model can hold
//     hundreds of thousands of allocations).
import type { HistoryKept, MemorySample, RunEvent } from '../contract/runs';

export const LEVEL_SAMPLES = 1 << 12;
export const LEVEL_EVENTS = 1 << 12;

export class SampleDecimator {
  private stride = 1;
  private keptAtLevel = 0;
  private filled = 0;
  private topAllocated: MemorySample | null = null;
  private topReserved: MemorySample | null = null;
  private last: MemorySample | null = null;
  private lastKept: MemorySample | null = null;
  kept = 0;

  /** perLevel Infinity and a stride: a fixed-rate decimator (reading a huge stored run). */
  constructor(
    private readonly perLevel = LEVEL_SAMPLES,
    stride = 1,
  ) {
    this.stride = Math.max(1, Math.floor(stride));
  }

  /** The samples of `batch` to store now, in time order. */
  push(batch: readonly MemorySample[]): MemorySample[] {
    const out: MemorySample[] = [];
    for (const s of batch) {
      this.last = s;
      if (!this.topAllocated || s.allocated > this.topAllocated.allocated) this.topAllocated = s;
      if (!this.topReserved || s.reserved > this.topReserved.reserved) this.topReserved = s;
      if (++this.filled >= this.stride) this.close(out);
    }
    return out;
  }

  /** The open bucket's picks and the run's last sample (end of run): a bucket keeps its
   *  peaks, not its end, and the stored timeline must end where the run did. */
  flush(): MemorySample[] {
    const out: MemorySample[] = [];
    if (this.filled) this.close(out);
    const last = this.last;
    if (last && last !== this.lastKept && last !== out[out.length - 1]) {
      out.push(last);
      this.kept += 1;
    }
    return out;
  }

  private close(out: MemorySample[]): void {
    const a = this.topAllocated!;
    const r = this.topReserved!;
    if (a === r) out.push(a);
    else out.push(...(a.t <= r.t ? [a, r] : [r, a]));
    this.lastKept = out[out.length - 1];
    this.kept += a === r ? 1 : 2;
    this.topAllocated = this.topReserved = null;
    this.filled = 0;
    if (++this.keptAtLevel >= this.perLevel) {
      this.stride *= 2;
      this.keptAtLevel = 0;
    }
  }
}

/** Most events (allocator history and phase markers) one run stores: about 13 MB of JSON,
 *  a reply a browser parses in a second. Beyond it history is cut and the run marked truncated. */
export const HISTORY_CAP = 1 << 16;

export class EventThinner {
  private every = 1;
  private keptAtLevel = 0;
  /** The iteration the last phase marker was in: allocator events carry none of their own. */
  private current = -1;
  private open = -1;
  private keepOpen = true;
  /** Phase begins dropped after the cap: their ends are dropped too, so kept phases stay paired. */
  private droppedDepth = 0;
  kept = 0;
  recorded = 0;
  keptAllocs = 0;
  truncated = false;

  constructor(
    private readonly perLevel = LEVEL_EVENTS,
    private readonly cap = HISTORY_CAP,
  ) {}

  push(events: readonly RunEvent[]): RunEvent[] {
    const out: RunEvent[] = [];
    for (const e of events) {
      if (e.type === 'phase') this.current = e.iteration;
      else this.recorded++;
      if (this.keep(e)) {
        out.push(e);
        this.kept++;
        this.keptAtLevel++;
        if (e.type === 'alloc') this.keptAllocs++;
      }
    }
    return out;
  }

  /** What the store holds of the run's allocator history. */
  history(): HistoryKept {
    return { recorded: this.recorded, kept: this.keptAllocs, truncated: this.truncated };
  }

  private keep(e: RunEvent): boolean {
    const it = this.current;
    if (it !== this.open) {
      // A new iteration: once a level is full, keep half as many iterations (whole ones,
      // aligned, so a level change never splits an iteration).
      this.open = it;
      if (it >= 0) {
        if (this.keptAtLevel >= this.perLevel) {
          this.every *= 2;
          this.keptAtLevel = 0;
        }
        this.keepOpen = it % this.every === 0;
      }
    }
    if (e.type === 'alloc' && e.action === 'oom') return true; // the OOM stays visible, always
    const thinnedIn = it < 0 || this.keepOpen;
    if (this.kept < this.cap) return thinnedIn;
    const kept = thinnedIn && this.pastCap(e);
    if (thinnedIn && !kept) this.truncated = true;
    return kept;
  }

  /** After the cap: only the ends of phases already kept. */
  private pastCap(e: RunEvent): boolean {
    if (e.type === 'alloc') return false;
    if (e.edge === 'begin') {
      this.droppedDepth++;
      return false;
    }
    if (this.droppedDepth > 0) {
      this.droppedDepth--;
      return false;
    }
    return true;
  }
}
