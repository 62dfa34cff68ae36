// The run being watched: its series fills from run.progress batches; run.done / run.error
// settle it. One instance per started (or opened) run. Batches are numbered: when one was
// lost on the way (a transport drops frames it cannot buffer), the run's stored record
// replaces the live series at the end, so the final picture is always the whole run.
import type { RunDone, RunErrorEvent, RunMeta, RunProgress, RunRecord } from '$contract/runs';
import type { SpecInput } from '$contract/spec';
import type { Transport } from '../transport/transport';
import { api } from './api';
import { RunSeries } from './series';

export type LiveStatus = 'starting' | 'running' | 'done' | 'oom' | 'cancelled' | 'error';

export class LiveRun {
  series = new RunSeries();
  version = $state(0);
  status = $state<LiveStatus>('starting');
  runId = $state<string | null>(null);
  meta = $state<RunMeta | null>(null);
  error = $state<string | null>(null);
  phase = $state('');
  iteration = $state(-1);
  private off: (() => void) | null = null;
  private early: RunProgress[] = [];
  private transport: Transport | null = null;
  /** The next batch number expected; `lost` once one did not arrive in order. */
  private nextSeq = 0;
  private lost = false;
  /** True when batches were lost and the series came from the stored run instead. */
  reloaded = false;

  constructor(readonly spec: SpecInput | null) {}

  /** Starts a run on the host and follows its events. */
  async start(t: Transport, capacity: number | null): Promise<void> {
    this.series.capacity = capacity;
    this.transport = t;
    this.off = t.onEvent((msg) => this.onEvent(msg.event, msg.data));
    try {
      const { runId } = await api.startRun(t, this.spec ?? {});
      this.runId = runId;
      if (this.status === 'starting') this.status = 'running';
      // Progress that raced the reply.
      for (const p of this.early.splice(0)) if (p.runId === runId) this.onProgress(p);
    } catch (e) {
      this.fail(e instanceof Error ? e.message : String(e));
    }
  }

  /** A stored run, shown like a finished live one. */
  static fromRecord(rec: RunRecord): LiveRun {
    const r = new LiveRun(rec.meta.spec as SpecInput);
    r.runId = rec.meta.id;
    r.series.ingest(rec.timeline, rec.events);
    r.settle(rec.meta);
    return r;
  }

  private onEvent(event: string, data: unknown): void {
    if (event === 'run.progress') {
      const p = data as RunProgress;
      if (this.runId === null) this.early.push(p);
      else if (p.runId === this.runId) this.onProgress(p);
    } else if (event === 'run.done') {
      const d = data as RunDone;
      if (d.runId === this.runId) void this.finish(d);
    } else if (event === 'run.error') {
      const d = data as RunErrorEvent;
      if (d.runId === this.runId) this.fail(d.message);
    } else if (event === 'connection.lost') this.fail('lost the connection to vramlab');
  }

  private onProgress(p: RunProgress): void {
    if (p.seq !== this.nextSeq) this.lost = true;
    this.nextSeq = p.seq + 1;
    this.series.ingest(p.samples, p.events);
    this.phase = p.phase;
    this.iteration = p.iteration;
    this.version++;
  }

  /** The run ended: if any batch went missing, the stored run is the series shown. */
  private async finish(d: RunDone): Promise<void> {
    const short = this.lost || (d.batches !== undefined && this.nextSeq !== d.batches);
    if (short && this.transport) {
      this.detach();
      try {
        const rec = await api.getRun(this.transport, d.runId);
        this.series.reset();
        this.series.ingest(rec.timeline, rec.events);
        this.reloaded = true;
      } catch (e) {
        this.error = `the end of the run's memory timeline was lost on the way and could not be reloaded: ${e instanceof Error ? e.message : String(e)}`;
      }
    }
    this.settle(d.meta);
  }

  settle(meta: RunMeta): void {
    this.meta = meta;
    const s = meta.summary;
    this.status =
      meta.status === 'done' || meta.status === 'oom' || meta.status === 'cancelled'
        ? meta.status
        : meta.status === 'running'
          ? 'running'
          : 'error';
    if (s?.oom) {
      const last = this.series.lastX();
      this.series.oom = { x: this.series.oom?.x ?? last, message: s.oom.message, diagnosis: s.oom.suggestions.join(' ') };
    }
    if (s?.error) this.error = s.error;
    if (meta.status !== 'running') this.detach();
    this.version++;
  }

  fail(message: string): void {
    this.error = message;
    this.status = 'error';
    this.detach();
    this.version++;
  }

  async cancel(t: Transport): Promise<void> {
    if (this.runId) await api.cancelRun(t, this.runId);
  }

  detach(): void {
    this.off?.();
    this.off = null;
  }
}
