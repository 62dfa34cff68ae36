// Folds a run's stream into its summary: peak per phase (tracked as samples arrive, so
// the timeline need not stay in memory), then readings, parameter counts and OOM diagnosis.
import type { MemorySample, PhasePeak, RunEvent, RunStatus, RunSummary } from '../contract/runs';
import type { Spec } from '../contract/spec';
import type { NativeOutcome } from '../addon/types';
import { PhaseTracker } from '../contract/phases';
import { diagnoseOom } from './diagnose';

export class PeakTracker {
  readonly phases = new PhaseTracker();
  private readonly peaks = new Map<string, PhasePeak>();
  private order: string[] = [];
  peakAllocated = 0;
  peakReserved = 0;
  samples = 0;
  events = 0;
  latest: MemorySample | null = null;

  /** Events and samples of one batch, each list in time order. */
  add(samples: readonly MemorySample[], events: readonly RunEvent[]): void {
    let e = 0;
    for (const s of samples) {
      while (e < events.length && events[e].t <= s.t) this.event(events[e++]);
      this.sample(s);
    }
    while (e < events.length) this.event(events[e++]);
  }

  private event(ev: RunEvent): void {
    this.events++;
    if (ev.type === 'phase') this.phases.apply(ev);
  }

  private sample(s: MemorySample): void {
    this.samples++;
    this.latest = s;
    this.peakAllocated = Math.max(this.peakAllocated, s.allocated);
    this.peakReserved = Math.max(this.peakReserved, s.reserved);
    const at = this.phases.current();
    const phase = at.phase || 'setup';
    const key = `${phase}\u0000${at.iteration}`;
    let p = this.peaks.get(key);
    if (!p) {
      p = { phase, iteration: at.iteration, allocated: s.allocated, reserved: s.reserved };
      this.peaks.set(key, p);
      this.order.push(key);
    } else {
      p.allocated = Math.max(p.allocated, s.allocated);
      p.reserved = Math.max(p.reserved, s.reserved);
    }
  }

  list(): PhasePeak[] {
    return this.order.map((k) => ({ ...this.peaks.get(k)! }));
  }
}

export function summarize(spec: Spec, outcome: NativeOutcome, tracker: PeakTracker): RunSummary {
  const peakAllocated = Math.max(outcome.peak_allocated, tracker.peakAllocated);
  const peakReserved = Math.max(outcome.peak_reserved, tracker.peakReserved);
  const status: RunStatus = outcome.status;
  return {
    status,
    readings: Object.fromEntries(outcome.readings),
    baseline: outcome.baseline,
    peak_allocated: peakAllocated,
    peak_reserved: peakReserved,
    peaks: tracker.list(),
    duration_ms: Math.round(outcome.duration_ms * 1000) / 1000,
    sim_time_ms: outcome.sim_time_ms,
    parameters: outcome.num_parameters,
    trainable_parameters: outcome.trainable_parameters,
    sdpa_backend: outcome.sdpa_backend,
    oom: outcome.oom ? diagnoseOom(outcome.oom, spec) : null,
    error: outcome.error,
    samples: tracker.samples,
    events: tracker.events,
  };
}
