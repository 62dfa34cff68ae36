// Coalesces one run's stream into `run.progress` messages: at most one per frame
// (~16 ms), however fast samples arrive. Backpressure: while the consumer says it is
// not ready, nothing is sent and samples keep merging (each bucket keeps its highest
// sample, so peaks survive); markers are never merged, only spread over frames.
// Each message carries its sequence number, and the end of a run is sent under the same
// backpressure (close() resolves once all of it went): a transport that drops frames when
// its buffers overflow would otherwise lose the run's end, and the viewer could not tell.
import type { MemorySample, RunEvent, RunProgress } from '../contract/runs';

export interface BatcherOptions {
  intervalMs?: number;
  /** Most samples in one message; more are merged, keeping each bucket's peak. */
  maxSamples?: number;
  /** Most events in one message; the rest wait for the next frame. */
  maxEvents?: number;
  /** False while the transport is congested: the batch waits (and keeps merging). */
  ready?: () => boolean;
  /** How long close() waits for a congested transport before sending the rest anyway. */
  closeWaitMs?: number;
}

export class ProgressBatcher {
  private samples: MemorySample[] = [];
  private events: RunEvent[] = [];
  private dropped = 0;
  private timer: NodeJS.Timeout | null = null;
  private lastSent = 0;
  private closed = false;
  private phase = '';
  private iteration = -1;
  private readonly interval: number;
  private readonly maxSamples: number;
  private readonly maxEvents: number;
  sent = 0;

  constructor(
    readonly runId: string,
    private readonly send: (p: RunProgress) => void,
    private readonly opts: BatcherOptions = {},
  ) {
    this.interval = opts.intervalMs ?? 16;
    this.maxSamples = Math.max(2, opts.maxSamples ?? 512);
    this.maxEvents = Math.max(1, opts.maxEvents ?? 4096);
  }

  push(samples: readonly MemorySample[], events: readonly RunEvent[], dropped = 0, phase?: string, iteration?: number): void {
    if (this.closed) return;
    for (const s of samples) this.samples.push(s);
    for (const e of events) this.events.push(e);
    this.dropped += dropped;
    if (phase !== undefined) this.phase = phase;
    if (iteration !== undefined) this.iteration = iteration;
    // Bound memory while the consumer is congested.
    if (this.samples.length > 4 * this.maxSamples) this.merge();
    this.schedule();
  }

  /**
   * The run ended: sends whatever is pending, as fast as the consumer takes it (all at once
   * without a ready probe), and resolves when the last message went. Later pushes are ignored.
   */
  close(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.closed = true;
    const giveUp = Date.now() + (this.opts.closeWaitMs ?? 30_000);
    return new Promise((resolve) => {
      const drain = () => {
        while (this.pending() && (!this.opts.ready || this.opts.ready() || Date.now() >= giveUp)) this.emit();
        if (this.pending()) setTimeout(drain, this.interval);
        else resolve();
      };
      drain();
    });
  }

  private pending(): boolean {
    return this.samples.length > 0 || this.events.length > 0 || this.dropped > 0;
  }

  private schedule(): void {
    if (this.timer || this.closed) return;
    const wait = Math.max(0, this.lastSent + this.interval - Date.now());
    this.timer = setTimeout(() => this.tick(), wait);
  }

  private tick(): void {
    this.timer = null;
    if (this.opts.ready && !this.opts.ready()) {
      this.merge();
      this.timer = setTimeout(() => this.tick(), this.interval);
      return;
    }
    this.emit();
    if (this.samples.length || this.events.length) this.schedule();
  }

  private emit(): void {
    if (this.samples.length > this.maxSamples) this.merge();
    const events = this.events.length > this.maxEvents ? this.events.splice(0, this.maxEvents) : this.events.splice(0);
    // Samples up to the last event sent go now; later ones wait so the order holds.
    let samples: MemorySample[];
    if (this.events.length) {
      const until = this.events[0].t;
      const n = this.samples.findIndex((s) => s.t >= until);
      samples = this.samples.splice(0, n < 0 ? this.samples.length : n);
    } else samples = this.samples.splice(0);
    const msg: RunProgress = {
      runId: this.runId,
      samples,
      events,
      dropped: this.dropped,
      latest: samples.length ? samples[samples.length - 1] : null,
      phase: this.phase,
      iteration: this.iteration,
      seq: this.sent,
    };
    this.dropped = 0;
    this.lastSent = Date.now();
    this.sent++;
    this.send(msg);
  }

  /**
   * Halves the pending samples into buckets of two, keeping the higher one of each; the newest
   * sample stays as it is, so the run's end (and the latest reading) is never merged away.
   */
  private merge(): void {
    while (this.samples.length > this.maxSamples) {
      const n = this.samples.length - 1;
      const out: MemorySample[] = [];
      for (let i = 0; i < n; i += 2) {
        const a = this.samples[i];
        const b = i + 1 < n ? this.samples[i + 1] : undefined;
        if (!b) out.push(a);
        else {
          out.push(b.allocated >= a.allocated ? b : a);
          this.dropped++;
        }
      }
      out.push(this.samples[n]);
      this.samples = out;
    }
  }
}
