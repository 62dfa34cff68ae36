// The prediction: the spec run to the end on the simulated device of its card, without
// history or memory samples, so the panel can show the exact peak while the user types.
// The same engine and allocator as the run, so the numbers are the run's.
import type { NativeAddon, NativeOutcome, NativeRunHandle } from '../addon/types';
import type { Prediction } from '../contract/runs';
import { engineSpec, type Spec } from '../contract/spec';
import type { CardMemory } from '../contract/card';
import { cardMemory } from './card_memory';

/** The simulated twin of a device: itself for sim:*; for cuda:N a device whose allocator gets
 *  what the card leaves beside its context (a sim:custom size has no context of its own). */
export function simDevice(native: NativeAddon, device: string): string {
  if (!device.startsWith('cuda:')) return device;
  const d = native.listDevices().find((x) => x.id === device);
  if (!d?.total) throw new Error(`no CUDA device ${device} here to predict for (see 'vramlab devices')`);
  return `sim:custom:${d.total - d.context}`;
}

export class Predictor {
  private readonly inFlight = new Map<string, NativeRunHandle>();

  constructor(private readonly native: NativeAddon) {}

  /** Resolves with status "cancelled" when a newer request on the same channel supersedes it. */
  predict(spec: Spec, channel = ''): Promise<Prediction> {
    const device = simDevice(this.native, spec.device);
    const card = cardMemory(this.native, spec.device);
    this.inFlight.get(channel)?.cancel();
    return new Promise((resolve, reject) => {
      let handle: NativeRunHandle | null = null;
      let scheduled = false;
      const pump = () => {
        scheduled = false;
        if (!handle) return;
        const batch = handle.drain();
        if (!batch.outcome) return;
        if (this.inFlight.get(channel) === handle) this.inFlight.delete(channel);
        resolve(toPrediction(batch.outcome, device, card, spec.capacity ?? card.total));
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
      this.inFlight.set(channel, handle);
    });
  }

  cancelAll(): void {
    for (const h of this.inFlight.values()) h.cancel();
    this.inFlight.clear();
  }
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
