// One spec run to its end on a simulated device, without history or memory samples: the
// engine and allocator of a real run, so its peaks are the run's. The prediction, the
// requirement after an OOM and the checked remedies all go through here.
import type { NativeAddon, NativeOutcome, NativeRunHandle } from '../addon/types';
import { engineSpec, type Spec } from '../contract/spec';
import { MAX_DEVICE_BYTES } from '../contract/limits';
import { twinDevice } from './predict_device';

/** Sizes far larger than a job needs, tried in order for what it needs past an OOM: 1 TiB
 *  first, since expandable segments reserve address space in proportion to the device and a
 *  device near the 1 PiB limit runs out of it; larger only for a job that needs more. */
export const UNBOUNDED_BYTES = [2 ** 40, 2 ** 44, MAX_DEVICE_BYTES];

/** The unbounded devices for a spec on `device`: its GPU model at each size, so the engine's
 *  kernels (cuBLAS workspace, attention backend) are the card's. */
export function unboundedDevices(native: NativeAddon, device: string): string[] {
  return UNBOUNDED_BYTES.map((bytes) => twinDevice(native, device, bytes));
}

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
    running?.add(handle);
    signal?.addEventListener('abort', cancel, { once: true });
  });
}

/** The spec run to its end on a device of its card's model larger than it needs, without its capacity cap (or the
 *  cap would stop it where the card did): the peak it needs. */
export async function simulateUnbounded(
  native: NativeAddon,
  spec: Spec,
  signal?: AbortSignal,
  running?: Set<NativeRunHandle>,
): Promise<NativeOutcome> {
  let o: NativeOutcome | null = null;
  for (const device of unboundedDevices(native, spec.device)) {
    o = await simulate(native, { ...spec, capacity: null }, device, signal, running);
    if (o.status !== 'oom') return o;
  }
  return o!;
}
