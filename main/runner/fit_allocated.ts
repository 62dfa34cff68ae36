// Where fit measures the allocated peaks of its bound (fit_bound.ts). The engine allocates by
// the card's model, not its size (cuBLAS's workspace is 32 MiB on Hopper and less elsewhere,
// SM counts size split reductions: native core/context.cpp), so a generic sim:custom device
// can allocate tens of MiB less than an H100 at the same value. The bound is measured on a
// card shown to allocate as the spec's does, by an equal peak at a value that fit there: the
// spec's own card without its cap (when the cap is below the card), else the largest preset.
// Failing both, the generic device, shifted by the difference seen at that value, and the
// bound is called an estimate.
import type { Spec } from '../contract/spec';
import type { NativeOutcome } from '../addon/types';
import type { RunManager } from './manager';
import { allocatorLimit } from '../contract/card';

export interface AllocatedPeak {
  /** Peak allocated bytes; MAX_SAFE_INTEGER when no simulated device could run it. */
  allocated: number;
  nccl: number;
}

export interface AllocatedMeter {
  /** The card measured on; null for the generic device. */
  device: string | null;
  /** Every peak so far measured on a card that allocates as the spec's (else shifted: an estimate). */
  exact: () => boolean;
  measure(spec: Spec): Promise<AllocatedPeak>;
}

type Run = (spec: Spec, device: string | null) => Promise<NativeOutcome>;

function peakOf(o: NativeOutcome): AllocatedPeak | null {
  if (o.status === 'error') throw new Error(o.error ?? 'the engine failed');
  return o.status === 'done' ? { allocated: o.peak_allocated, nccl: o.nccl ?? 0 } : null;
}

/**
 * The meter for `spec`'s bound. `known` is a value that fit on the spec's card with its exact
 * allocated peak (null when none did: the generic device, unshifted, as an estimate).
 */
export async function allocatedMeter(
  manager: RunManager,
  spec: Spec,
  specAt: (value: number) => Spec,
  known: { value: number; allocated: number } | null,
  signal?: AbortSignal,
): Promise<AllocatedMeter> {
  const run: Run = async (s, device) => {
    const o = await manager.uncapped(s, device, signal);
    if (o.status === 'cancelled') throw new MeterCancelled();
    return o;
  };
  const card = manager.card(spec.device);
  const candidates: string[] = [];
  if (spec.device.startsWith('sim:') && allocatorLimit(card, null) > allocatorLimit(card, spec.capacity)) candidates.push(spec.device);
  const largest = manager.simulatedCards()[0];
  if (largest && largest.id !== spec.device && largest.total > card.total) candidates.push(largest.id);
  let device: string | null = null;
  let shift = 0;
  let exact = false;
  if (known) {
    for (const id of candidates) {
      const p = peakOf(await run(specAt(known.value), id));
      if (p && p.allocated === known.allocated) {
        device = id;
        exact = true;
        break;
      }
    }
    if (!device) {
      const p = peakOf(await run(specAt(known.value), null));
      shift = p ? known.allocated - p.allocated : 0;
    }
  }
  const generic = async (s: Spec): Promise<AllocatedPeak> => {
    const p = peakOf(await run(s, null));
    return p ? { ...p, allocated: p.allocated + shift } : { allocated: Number.MAX_SAFE_INTEGER, nccl: 0 };
  };
  return {
    device,
    exact: () => exact,
    async measure(s) {
      if (device) {
        const p = peakOf(await run(s, device));
        if (p) return p;
        exact = false; // too large for that card: the generic device, shifted, from here on
      }
      return generic(s);
    },
  };
}

export class MeterCancelled extends Error {
  constructor() {
    super('fit cancelled');
  }
}
