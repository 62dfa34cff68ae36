// What a run keeps on disk, bounded whatever its length. The summary's
// peaks come from every sample (PeakTracker); the stored timeline is decimated:
//   - samples: the first LEVEL_SAMPLES at full rate, the next LEVEL_SAMPLES buckets of 2,
//     then of 4, ... Each bucket keeps its highest-allocated sample and its highest-
//     reserved one, so every peak (the run's, a phase's) is kept exactly, at its time.
//     Stored <= 2 x LEVEL_SAMPLES x (1 + log2(raw / LEVEL_SAMPLES)).
//   - events: whole iterations are kept or dropped together (phases stay paired): all of
//     the first LEVEL_EVENTS events, then every 2nd iteration, then every 4th, ...
import type { MemorySample, RunEvent } from '../contract/runs';

export const LEVEL_SAMPLES = 1 << 12;
export const LEVEL_EVENTS = 1 << 12;

export class SampleDecimator {
  private stride = 1;
  private keptAtLevel = 0;
  private filled = 0;
  private topAllocated: MemorySample | null = null;
  private topReserved: MemorySample | null = null;
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
      if (!this.topAllocated || s.allocated > this.topAllocated.allocated) this.topAllocated = s;
      if (!this.topReserved || s.reserved > this.topReserved.reserved) this.topReserved = s;
      if (++this.filled >= this.stride) this.close(out);
    }
    return out;
  }

  /** The open bucket's picks (end of run). */
  flush(): MemorySample[] {
    const out: MemorySample[] = [];
    if (this.filled) this.close(out);
    return out;
  }

  private close(out: MemorySample[]): void {
    const a = this.topAllocated!;
    const r = this.topReserved!;
    if (a === r) out.push(a);
    else out.push(...(a.t <= r.t ? [a, r] : [r, a]));
    this.kept += a === r ? 1 : 2;
    this.topAllocated = this.topReserved = null;
    this.filled = 0;
    if (++this.keptAtLevel >= this.perLevel) {
      this.stride *= 2;
      this.keptAtLevel = 0;
    }
  }
}

export class EventThinner {
  private every = 1;
  private keptAtLevel = 0;
  private levelStart = 0; // first iteration of the current level
  kept = 0;

  constructor(private readonly perLevel = LEVEL_EVENTS) {}

  push(events: readonly RunEvent[]): RunEvent[] {
    const out: RunEvent[] = [];
    for (const e of events) {
      const it = 'iteration' in e && typeof e.iteration === 'number' ? e.iteration : -1;
      if (it >= 0 && this.keptAtLevel >= this.perLevel && it > this.levelStart) {
        // Level full: from the next whole iteration on, keep half as many iterations.
        this.every *= 2;
        this.keptAtLevel = 0;
        this.levelStart = it;
      }
      if (it < 0 || (it - this.levelStart) % this.every === 0) {
        out.push(e);
        this.kept++;
        this.keptAtLevel++;
      }
    }
    return out;
  }
}
