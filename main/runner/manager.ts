// Runs experiments: validates the spec, opens the run in the store, starts the native
// worker thread, and fans its batches out to the store (a bounded timeline: store/decimate.ts)
// and to listeners (run.progress, batched per frame). The event loop only ever sees batches.
import { CATEGORIES, type RunSummary, type RunEvent, type RunGroup, type RunMeta, type RunProgress } from '../contract/runs';
import { engineSpec, type Spec } from '../contract/spec';
import type { NativeAddon, NativeEventBatch, NativeJob, NativeOutcome, NativeRunHandle } from '../addon/types';
import type { RunStore } from '../store/store';
import type { RunWriter } from '../store/writer';
import { describeError } from '../host/errors';
import { ProgressBatcher, type BatcherOptions } from './batcher';
import { PeakTracker, summarize } from './summary';
import { checkRemedies, requirementOf } from './remedies';
import { remedyLine } from '../contract/verdict';
import { rankVerdicts } from './rank_verdicts';
import { EventThinner, SampleDecimator } from '../store/decimate';
import type { CardMemory } from '../contract/card';
import { cardMemory } from './card_memory';
import { simulate, simulateUnbounded } from './simulate';
import type { WorkSlots } from './slots';

export interface RunEvents {
  progress(p: RunProgress): void;
  /** After the last progress batch went; `batches` is how many the run sent. */
  done(meta: RunMeta, batches: number): void;
  error(runId: string, message: string, meta: RunMeta | null): void;
}

export interface StartOptions {
  name?: string;
  group?: RunGroup | null;
  /** Replaces the job the spec would give (tests: the engine-free synthetic job). */
  job?: NativeJob;
  /** Called with every native batch, unbatched (the CLI's progress line). */
  onBatch?: (tracker: PeakTracker) => void;
  /** Aborting it while the run waits for a slot gives up the run (its client went away). */
  signal?: AbortSignal;
}

export interface StartedRun {
  runId: string;
  spec: Spec;
  /** Resolves with the final meta whatever the outcome (done, oom, cancelled, error). */
  done: Promise<RunMeta>;
}

interface Active {
  handle: NativeRunHandle | null;
}

export class RunManager {
  private readonly active = new Map<string, Active>();
  private judging = new AbortController();

  constructor(
    private readonly native: NativeAddon,
    readonly store: RunStore,
    private readonly events: Partial<RunEvents> = {},
    private readonly batching: BatcherOptions = {},
    /** The server-wide bound on runs at once (serve, the app); none for the CLI. */
    private readonly slots: WorkSlots | null = null,
  ) {}

  /** The card a device id names: its total and its CUDA context (fit and sweeps report both). */
  card(device: string): CardMemory {
    return cardMemory(this.native, device);
  }

  /** Takes a spec validated at the boundary (host, CLI: parseSpec) and validates nothing again;
   *  throws the native side's refusal before anything runs. */
  async start(spec: Spec, opts: StartOptions = {}): Promise<StartedRun> {
    // The validated spec goes to the engine (a draw of shapes expanded); a sample every allocation feeds the chart.
    const job: NativeJob = opts.job ?? { kind: 'experiment', spec: engineSpec(spec), options: { sample_every: 1 } };
    // A run holds its slot from before its record exists until its native thread ends.
    const release = this.slots ? await this.slots.acquire(opts.signal) : () => {};
    let writer: RunWriter;
    try {
      writer = await this.store.create(spec, { name: opts.name, group: opts.group });
    } catch (err) {
      release();
      throw err;
    }
    const runId = writer.id;
    const tracker = new PeakTracker();
    const batcher = new ProgressBatcher(runId, (p) => quietly(() => this.events.progress?.(p)), this.batching);
    const entry: Active = { handle: null };
    let resolveDone!: (m: RunMeta) => void;
    const done = new Promise<RunMeta>((r) => (resolveDone = r));

    // The store gets a bounded timeline (store/decimate.ts); peaks and progress see every sample.
    const keepSamples = new SampleDecimator();
    const keepEvents = new EventThinner();
    const ingest = (batch: NativeEventBatch) => {
      if (batch.samples.length || batch.events.length || batch.dropped) {
        const events = batch.events.map(nameCategory);
        const kept = keepEvents.push(events);
        writer.append(keepSamples.push(batch.samples), kept);
        tracker.add(batch.samples, events);
        const at = tracker.phases.current();
        batcher.push(batch.samples, liveEvents(events, kept), batch.dropped, at.phase, at.iteration);
        opts.onBatch?.(tracker);
      }
      if (batch.outcome) writer.append(keepSamples.flush(), []);
    };
    // A wake-up only schedules the pull: the loop gets a turn between batches.
    let scheduled = false;
    let finished = false;
    let failure: string | null = null; // a bug on this side stops the run, never the process
    const pump = () => {
      scheduled = false;
      if (finished || !entry.handle) return;
      const batch = entry.handle.drain();
      try {
        ingest(batch);
      } catch (err) {
        failure ??= `runner: ${describeError(err)}`;
        entry.handle.cancel();
      }
      if (batch.outcome) {
        finished = true;
        release();
        this.active.delete(runId);
        // The end of the run goes under backpressure too; done follows its last batch.
        let flushed: Promise<void>;
        try {
          flushed = batcher.close();
        } catch (err) {
          failure ??= `runner: ${describeError(err)}`;
          flushed = Promise.resolve();
        }
        const outcome = failure ? { ...batch.outcome, status: 'error' as const, error: failure } : batch.outcome;
        // After an OOM: what the job needs (fit's probes only ask whether it fits), and with no
        // sweep or fit around it, the remedies that the simulator finds to fit.
        const verdict = !opts.job && opts.group?.kind !== 'fit';
        const advise = verdict && !opts.group;
        void Promise.all([this.finish(spec, writer, outcome, tracker, keepEvents, { verdict, advise }), flushed]).then(([end]) => {
          this.announce(end, batcher.sent);
          resolveDone(end.meta);
        });
      }
    };
    const onWake = () => {
      if (scheduled) return;
      scheduled = true;
      setImmediate(pump);
    };

    this.active.set(runId, entry);
    try {
      entry.handle = this.native.startRun(job, onWake);
    } catch (err) {
      // The native side refused the job: no run happened, so none is kept.
      release();
      this.active.delete(runId);
      await writer.finish('error', null).catch(() => {});
      await this.store.delete(runId).catch(() => {});
      throw err;
    }
    return { runId, spec, done };
  }

  /** The spec run to its end without its cap on a simulated device (`device`, or one larger
   *  than it needs), unstored: what it allocates at most (fit's monotone bound). It holds a
   *  server-wide slot like a run. */
  async uncapped(spec: Spec, device: string | null, signal?: AbortSignal): Promise<NativeOutcome> {
    const release = this.slots ? await this.slots.acquire(signal) : () => {};
    try {
      return device === null
        ? await simulateUnbounded(this.native, spec, signal)
        : await simulate(this.native, { ...spec, capacity: null }, device, signal);
    } finally {
      release();
    }
  }

  /** The simulated presets, largest first. */
  simulatedCards(): Array<{ id: string; total: number }> {
    return this.native
      .listDevices()
      .filter((d) => d.kind === 'sim')
      .map((d) => ({ id: d.id, total: d.total }))
      .sort((a, b) => b.total - a.total);
  }

  cancel(runId: string): boolean {
    const a = this.active.get(runId);
    if (!a) return false;
    a.handle?.cancel();
    return true;
  }

  cancelAll(): void {
    for (const id of this.active.keys()) this.cancel(id);
    // The simulations that judge finished runs (requirement, remedies) stop too.
    this.judging.abort();
    this.judging = new AbortController();
  }

  activeRuns(): string[] {
    return [...this.active.keys()];
  }

  /** The verdict on the card; after an OOM the requirement (the real parameter counts with it)
   *  and, when `advise`, the checked remedies as the OOM's suggestions. */
  private async judge(spec: Spec, outcome: NativeOutcome, summary: RunSummary, advise: boolean): Promise<void> {
    if (outcome.status !== 'done' && outcome.status !== 'oom') return;
    const signal = this.judging.signal;
    const need = await orNull(requirementOf(this.native, spec, { ...outcome, peak_reserved: summary.peak_reserved }, signal));
    if (!need) return;
    summary.verdict = need.verdict;
    if (need.outcome.ranks && need.outcome.ranks.length > 1) {
      summary.rank_verdicts = rankVerdicts(need.outcome, outcome.status === 'done', need.verdict, this.card(spec.device), spec.capacity);
      // An OOM ends the run before the engine reports its ranks: the unbounded run's classes and NCCL's buffers hold.
      summary.rank_class ??= need.outcome.rank_class;
      summary.nccl ??= need.outcome.nccl;
    }
    summary.parameters = need.outcome.num_parameters;
    summary.trainable_parameters = need.outcome.trainable_parameters;
    if (!summary.oom || !advise) return;
    const checked = await orNull(checkRemedies(this.native, spec, { signal }));
    if (checked) summary.oom.suggestions = checked.remedies.map(remedyLine);
  }

  private async finish(
    spec: Spec,
    writer: RunWriter,
    outcome: NativeOutcome,
    tracker: PeakTracker,
    kept: EventThinner,
    check: { verdict: boolean; advise: boolean },
  ): Promise<{ meta: RunMeta; message: string | null }> {
    let meta: RunMeta;
    let message: string | null = null;
    try {
      const summary = summarize(spec, outcome, tracker);
      if (check.verdict) await this.judge(spec, outcome, summary, check.advise);
      if (spec.history) summary.history = kept.history();
      try {
        meta = await writer.finish(summary.status, summary);
      } catch (err) {
        message = `store: ${describeError(err)}`;
        meta = { ...writer.meta, status: 'error', summary: { ...summary, status: 'error', error: message } };
      }
    } catch (err) {
      // Summarizing failed (a bug): the run still ends, as an error, and is kept.
      message = `runner: ${describeError(err)}`;
      meta = await writer.finish('error', null).catch(() => ({ ...writer.meta, status: 'error' as const }));
    }
    return { meta, message };
  }

  private announce({ meta, message }: { meta: RunMeta; message: string | null }, batches: number): void {
    if (meta.status === 'error') quietly(() => this.events.error?.(meta.id, message ?? meta.summary?.error ?? 'run failed', meta));
    else quietly(() => this.events.done?.(meta, batches));
  }
}

/** A simulation after the run failed for its own reasons: the run keeps its result without it. */
async function orNull<T>(p: Promise<T>): Promise<T | null> {
  try {
    return await p;
  } catch {
    return null;
  }
}

function nameCategory(e: NativeEventBatch['events'][number]): RunEvent {
  if (e.type !== 'alloc') return e;
  return { ...e, category: e.category >= 0 && e.category < CATEGORIES.length ? CATEGORIES[e.category] : '' };
}

/** What viewers are sent: every phase marker (the chart's bands), and of the allocator trace
 *  only what the store keeps. The trace is the bulk of a run's stream (the KV-cache lesson:
 *  570k events, ~60 MB of JSON a viewer parsed at ~250k events/s), and the segment map of a
 *  live run is then the one the stored run shows. `kept` is an ordered subset of `all`. */
function liveEvents(all: readonly RunEvent[], kept: readonly RunEvent[]): RunEvent[] {
  if (kept.length === all.length) return kept as RunEvent[];
  const out: RunEvent[] = [];
  let k = 0;
  for (const e of all) {
    if (k < kept.length && kept[k] === e) {
      out.push(e);
      k++;
    } else if (e.type === 'phase') out.push(e);
  }
  return out;
}

/** Listeners run from timers and native wake-ups: one that throws must not take the process down. */
function quietly(fn: () => void): void {
  try {
    fn();
  } catch (err) {
    process.emitWarning(`vramlab run listener failed: ${describeError(err)}`);
  }
}
