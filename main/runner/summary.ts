// Folds a run's stream into its summary: peak per phase (tracked as samples arrive, so
// the timeline need not stay in memory), then readings, parameter counts and OOM diagnosis.
import type { MemorySample, PhasePeak, RunEvent, RunStatus, RunSummary } from '../contract/runs';
import type { Spec } from '../contract/spec';
import type { NativeOutcome } from '../addon/types';
import { PhaseTracker } from '../contract/phases';
import { diagnoseOom } from './diagnose';

/** Iterations whose readings and phase peaks a summary keeps one by one (and the last). */
export const KEEP_ITERATIONS = 16;

/** Per-iteration readings ("it<N>_...") of the first KEEP_ITERATIONS iterations and the last. */
export function boundedReadings(readings: readonly (readonly [string, number])[]): Record<string, number> {
  let last = -1;
  for (const [k] of readings) {
    const m = /^it(\d+)_/.exec(k);
    if (m) last = Math.max(last, Number(m[1]));
  }
  const out: Record<string, number> = {};
  for (const [k, v] of readings) {
    const m = /^it(\d+)_/.exec(k);
    if (!m || Number(m[1]) < KEEP_ITERATIONS || Number(m[1]) === last) out[k] = v;
  }
  return out;
}

/** [low, high] per key, for the keys boundedReadings keeps. */
export function boundedRanges(
  ranges: readonly (readonly [string, number, number])[],
  readings: readonly (readonly [string, number])[],
): Record<string, [number, number]> {
  const kept = boundedReadings(readings);
  return Object.fromEntries(ranges.filter(([k]) => k in kept).map(([k, lo, hi]) => [k, [lo, hi]]));
}

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
    // Iterations past the first KEEP_ITERATIONS fold into one entry per phase holding the
    // exact peak and the iteration where it happened: a summary stays small for any length.
    const folded = at.iteration >= KEEP_ITERATIONS;
    const key = `${phase}\u0000${folded ? 'later' : at.iteration}`;
    let p = this.peaks.get(key);
    if (!p) {
      p = { phase, iteration: at.iteration, allocated: s.allocated, reserved: s.reserved };
      this.peaks.set(key, p);
      this.order.push(key);
    } else {
      if (folded && s.allocated > p.allocated) p.iteration = at.iteration;
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
    readings: boundedReadings(outcome.readings),
    baseline: outcome.baseline,
    peak_allocated: peakAllocated,
    peak_reserved: peakReserved,
    peaks: tracker.list(),
    duration_ms: Math.round(outcome.duration_ms * 1000) / 1000,
    sim_time_ms: outcome.sim_time_ms,
    parameters: outcome.num_parameters,
    trainable_parameters: outcome.trainable_parameters,
    sdpa_backend: outcome.sdpa_backend,
    context: outcome.context ?? 0,
    ...(outcome.ranks && outcome.ranks.length
      ? { ranks: outcome.ranks.map((r) => boundedReadings(r)), rank_class: outcome.rank_class ?? [] }
      : {}),
    ...(outcome.ranges && outcome.ranges.length ? { ranges: boundedRanges(outcome.ranges, outcome.readings) } : {}),
    // Held from the start of a data-parallel run: an OOM (no ranks reported) holds them too.
    ...(outcome.nccl || outcome.ranks?.length ? { nccl: outcome.nccl ?? 0 } : {}),
    oom: outcome.oom ? diagnoseOom(outcome.oom) : null,
    error: outcome.error,
    samples: tracker.samples,
    events: tracker.events,
  };
}
