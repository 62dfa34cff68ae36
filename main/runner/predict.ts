// The prediction: the spec run to the end on the simulated device of its card, without
// history or memory samples, so the panel can show the exact peak while the user types.
// The same engine and allocator as the run, so the numbers are the run's.
import type { NativeAddon, NativeOutcome, NativeRunHandle } from '../addon/types';
import type { Prediction } from '../contract/runs';
import { engineSpec, type Spec } from '../contract/spec';
import type { CardMemory } from '../contract/card';
import { cardMemory } from './card_memory';
import { CancelledError, type WorkSlots } from './slots';

/** The simulated twin of a device: itself for sim:*; for cuda:N a device whose allocator gets
 *  what the card leaves beside its context (a sim:custom size has no context of its own). */
export function simDevice(native: NativeAddon, device: string): string {
  if (!device.startsWith('cuda:')) return device;
  const d = native.listDevices().find((x) => x.id === device);
  if (!d?.total) throw new Error(`no CUDA device ${device} here to predict for (see 'vramlab devices')`);
  return `sim:custom:${d.total - d.context}`;
}

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

  private simulate(spec: Spec, device: string, card: CardMemory, capacity: number, signal: AbortSignal): Promise<Prediction> {
    if (signal.aborted) return Promise.resolve(cancelled(device, card, capacity));
    return new Promise((resolve, reject) => {
      let handle: NativeRunHandle | null = null;
      let scheduled = false;
      const cancel = () => handle?.cancel();
      const pump = () => {
        scheduled = false;
        if (!handle) return;
        const batch = handle.drain();
        if (!batch.outcome) return;
        this.running.delete(handle);
        signal.removeEventListener('abort', cancel);
        resolve(toPrediction(batch.outcome, device, card, capacity));
      };
      try {
        handle = this.native.startRun(
          { kind: 'experiment', spec: { ...engineSpec(spec), device, history: false }, options: { sample_every: 0 } },
          () => {
            if (scheduled) return;
            scheduled = true;
            setImmediate(pump);
          },
        );
      } catch (err) {
        reject(err);
        return;
      }
      this.running.add(handle);
      signal.addEventListener('abort', cancel, { once: true });
    });
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
  };
}

function toPrediction(o: NativeOutcome, device: string, card: CardMemory, capacity: number): Prediction {
  return {
    status: o.status,
    device,
    baseline: o.baseline,
    peak_allocated: o.peak_allocated,
    peak_reserved: o.peak_reserved,
    capacity,
    total: card.total,
    context: card.context,
    readings: Object.fromEntries(o.readings),
    parameters: o.num_parameters,
    trainable_parameters: o.trainable_parameters,
    message: o.oom?.message ?? o.error,
    duration_ms: o.duration_ms,
  };
}
