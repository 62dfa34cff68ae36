// Finished runs read for replies, kept for a moment: fifty clients opening the same run,
// or a client repeating runs.get on a huge one, cost one read of its chunks, not fifty
// (each read of a 100 MB pre-decimation run is seconds of CPU and hundreds of MB).
// Concurrent reads of one run share a single promise. Running runs are never cached.
import type { RunRecord } from '../contract/runs';

export class RecordCache {
  private readonly entries = new Map<string, Promise<RunRecord>>();

  constructor(private readonly size = 4) {}

  /** `key` must change when the run does (id + meta.updated). */
  get(key: string, read: () => Promise<RunRecord>): Promise<RunRecord> {
    const hit = this.entries.get(key);
    if (hit) {
      this.entries.delete(key); // most recent last
      this.entries.set(key, hit);
      return hit;
    }
    const p = read();
    this.entries.set(key, p);
    p.then(
      (r) => r.meta.status === 'running' && this.entries.delete(key),
      () => this.entries.delete(key),
    );
    while (this.entries.size > this.size) this.entries.delete(this.entries.keys().next().value!);
    return p;
  }

  clear(): void {
    this.entries.clear();
  }
}
