// Streams one run into its folder: samples and events are buffered and written as
// numbered chunk files (each atomic), so a crash loses at most the last unflushed
// half-second; finish() writes the final meta.json, the run's commit point.
import path from 'node:path';
import type { MemorySample, RunEvent, RunMeta, RunStatus, RunSummary } from '../contract/runs';
import { readJson, writeJsonAtomic } from './atomic';

export const CHUNK_ITEMS = 2048; // small enough that one JSON.stringify stays a few ms
const FLUSH_MS = 500;

export class RunWriter {
  private samples: MemorySample[] = [];
  private events: RunEvent[] = [];
  private chunkNo = 0;
  private chain: Promise<void> = Promise.resolve();
  private failure: unknown = null;
  private timer: NodeJS.Timeout | null = null;
  private closed = false;

  constructor(
    readonly dir: string,
    private current: RunMeta,
  ) {}

  get id(): string {
    return this.current.id;
  }

  get meta(): RunMeta {
    return this.current;
  }

  append(samples: readonly MemorySample[], events: readonly RunEvent[]): void {
    if (this.closed) return;
    for (const s of samples) this.samples.push(s);
    for (const e of events) this.events.push(e);
    if (this.samples.length + this.events.length >= CHUNK_ITEMS) this.flush();
    else if (!this.timer) {
      this.timer = setTimeout(() => this.flush(), FLUSH_MS);
      this.timer.unref?.();
    }
  }

  /** Queues the buffered items as one chunk file; resolves when it is durable. */
  flush(): Promise<void> {
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = null;
    }
    if (this.samples.length || this.events.length) {
      const chunk = { samples: this.samples, events: this.events };
      this.samples = [];
      this.events = [];
      const file = path.join(this.dir, 'chunks', `${String(++this.chunkNo).padStart(6, '0')}.json`);
      this.chain = this.chain
        .then(() => writeJsonAtomic(file, chunk))
        .catch((err) => {
          this.failure ??= err;
        });
    }
    return this.chain;
  }

  /** Writes everything left, then the final status and summary. */
  async finish(status: RunStatus, summary: RunSummary | null): Promise<RunMeta> {
    this.closed = true;
    await this.flush();
    // A rename may have landed while the run went: keep the name on disk.
    const onDisk = await readJson<RunMeta>(path.join(this.dir, 'meta.json')).catch(() => this.current);
    const meta: RunMeta = { ...this.current, name: onDisk.name, status, summary, updated: new Date().toISOString() };
    await writeJsonAtomic(path.join(this.dir, 'meta.json'), meta);
    this.current = meta;
    if (this.failure) throw this.failure;
    return meta;
  }
}
