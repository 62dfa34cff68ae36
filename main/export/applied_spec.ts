// A run's spec as the exports carry it: only the keys its mode reads (contract
// catalogue/applies.ts), so a generation row has no optimizer and a training row no prompt.
import { modeReads } from '../contract/catalogue';
import type { RunMeta } from '../contract/runs';
import type { Spec } from '../contract/spec';

export function appliedSpec(spec: Spec): Partial<Spec> {
  return Object.fromEntries(Object.entries(spec).filter(([k]) => modeReads(spec.mode, k))) as Partial<Spec>;
}

/** The meta with its spec cut to what applies (older runs without a spec keep theirs). */
export function exportedMeta(meta: RunMeta): RunMeta {
  return meta.spec ? ({ ...meta, spec: appliedSpec(meta.spec) } as RunMeta) : meta;
}
