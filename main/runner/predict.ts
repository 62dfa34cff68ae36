// The prediction: the spec run to the end on the simulated device of its card, without
// history or memory samples, so the panel can show the exact peak while the user types.
// The same engine and allocator as the run, so the numbers are the run's.
// An OOM is run again on an unbounded device for what the job needs (the verdict).
import type { NativeAddon, NativeOutcome, NativeRunHandle } from '../addon/types';
import type { Prediction } from '../contract/runs';
import type { Spec } from '../contract/spec';
import type { CardMemory } from '../contract/card';
import type { RemediesResult } from '../contract/verdict';
import { cardMemory } from './card_memory';
import { CancelledError, type WorkSlots } from './slots';
import { simDevice } from './predict_device';
import { SimCancelled, simulate } from './simulate';
import { checkRemedies, requirementOf } from './remedies';

export { simDevice };

export class Predictor {
  /** The latest request per channel: a newer one cancels it, queued or running. */
  private readonly latest = new Map<string, AbortController>();
  private readonly running = new Set<NativeRunHandle>();

  constructor(
    private readonly native: NativeAddon,
    /** The server-wide bound on predictions at once (serve, the app). */
    private readonly slots: WorkSlots | null = null,
  ) {}

  /**
   * Resolves with status "cancelled" when a newer request on the same channel supersedes it
   * or `signal` aborts (its client went away). Channels are per client: pass the client's id
   * in `channel` so two clients never cancel each other's predictions.
   */
  async predict(spec: Spec, channel = '', signal?: AbortSignal): Promise<Prediction> {
    const device = simDevice(this.native, spec.device);
    const card = cardMemory(this.native, spec.device);
    const capacity = spec.capacity ?? card.total;
    this.latest.get(channel)?.abort();
    const mine = new AbortController();
    this.latest.set(channel, mine);
    const stop = () => mine.abort();
    signal?.addEventListener('abort', stop, { once: true });
    if (signal?.aborted) stop();
    let release: () => void = () => {};
    try {
      if (this.slots) release = await this.slots.acquire(mine.signal);
      return await this.simulate(spec, device, card, capacity, mine.signal);
    } catch (err) {
      if (err instanceof CancelledError) return cancelled(device, card, capacity);
      throw err;
    } finally {
      release();
      signal?.removeEventListener('abort', stop);
      if (this.latest.get(channel) === mine) this.latest.delete(channel);
    }
  }

  private async simulate(spec: Spec, device: string, card: CardMemory, capacity: number, signal: AbortSignal): Promise<Prediction> {
    try {
      const o = await simulate(this.native, spec, device, signal, this.running);
      const need = await requirementOf(this.native, spec, o, signal, this.running);
      return toPrediction(o, device, card, capacity, need);
    } catch (err) {
      if (err instanceof SimCancelled) return cancelled(device, card, capacity);
      throw err;
    }
  }

  /** Every candidate change simulated on the spec's card; those that fit, cheapest first.
   *  Holds one prediction slot for the lot; `signal` aborts it (the client went away). */
  async remedies(spec: Spec, signal?: AbortSignal): Promise<RemediesResult> {
    const release = this.slots ? await this.slots.acquire(signal) : () => {};
    try {
      return await checkRemedies(this.native, spec, { signal, running: this.running });
    } finally {
      release();
    }
  }

  cancelAll(): void {
    for (const c of this.latest.values()) c.abort();
    for (const h of this.running) h.cancel();
    this.latest.clear();
  }
}

/** A request superseded or abandoned before it ran: nothing was simulated. */
function cancelled(device: string, card: CardMemory, capacity: number): Prediction {
  return {
    status: 'cancelled',
    device,
    baseline: 0,
    peak_allocated: 0,
    peak_reserved: 0,
    capacity,
    total: card.total,
    context: card.context,
    readings: {},
    parameters: 0,
    trainable_parameters: 0,
    message: 'superseded or abandoned before it ran',
    duration_ms: 0,
    verdict: null,
  };
}

function toPrediction(
  o: NativeOutcome,
  device: string,
  card: CardMemory,
  capacity: number,
  need: { verdict: Prediction['verdict']; outcome: NativeOutcome } | null,
): Prediction {
  // An OOM outcome does not report NCCL's buffers; the unbounded run of the same spec does.
  const nccl = o.nccl || need?.outcome.nccl || 0;
  return {
    status: o.status,
    device,
    baseline: o.baseline,
    peak_allocated: o.peak_allocated,
    peak_reserved: o.peak_reserved,
    capacity,
    total: card.total,
    context: card.context,
    ...(nccl ? { nccl } : {}),
    readings: Object.fromEntries(o.readings),
    ...(o.ranges?.length ? { ranges: Object.fromEntries(o.ranges.map(([k, lo, hi]): [string, [number, number]] => [k, [lo, hi]])) } : {}),
    // An OOM can stop before the model is counted: the unbounded run's counts are the model's.
    parameters: need?.outcome.num_parameters ?? o.num_parameters,
    trainable_parameters: need?.outcome.trainable_parameters ?? o.trainable_parameters,
    message: o.oom?.message ?? o.error,
    duration_ms: o.duration_ms + (need && need.outcome !== o ? need.outcome.duration_ms : 0),
    verdict: need?.verdict ?? null,
  };
}
