// One spec run to its end on a simulated device, without history or memory samples: the
// engine and allocator of a real run, so its peaks are the run's. The prediction, the
// requirement after an OOM and the checked remedies all go through here.
import type { NativeAddon, NativeOutcome, NativeRunHandle } from '../addon/types';
import { engineSpec, type Spec } from '../contract/spec';
import { MAX_DEVICE_BYTES } from '../contract/limits';

/** A device far larger than any spec may need (1 PiB), for what a job needs past an OOM. */
export const UNBOUNDED_DEVICE = `sim:custom:${MAX_DEVICE_BYTES}`;

export class SimCancelled extends Error {
  constructor() {
    super('simulation cancelled');
  }
}

/** Rejects with SimCancelled when `signal` aborts; `running` sees the handle while it runs. */
export function simulate(
  native: NativeAddon,
  spec: Spec,
  device: string,
  signal?: AbortSignal,
  running?: Set<NativeRunHandle>,
): Promise<NativeOutcome> {
  if (signal?.aborted) return Promise.reject(new SimCancelled());
  return new Promise((resolve, reject) => {
    let handle: NativeRunHandle | null = null;
    let scheduled = false;
    const cancel = () => handle?.cancel();
    const pump = () => {
      scheduled = false;
      if (!handle) return;
      const batch = handle.drain();
      if (!batch.outcome) return;
      running?.delete(handle);
      signal?.removeEventListener('abort', cancel);
      if (batch.outcome.status === 'cancelled') reject(new SimCancelled());
      else resolve(batch.outcome);
    };
    try {
      handle = native.startRun(
        // Unbounded: no cap either, or the cap would stop it where the card's limit did.
        {
          kind: 'experiment',
          spec: { ...engineSpec(spec), device, history: false, ...(device === UNBOUNDED_DEVICE ? { capacity: null } : {}) },
          options: { sample_every: 0 },
        },
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
    running?.add(handle);
    signal?.addEventListener('abort', cancel, { once: true });
  });
}
