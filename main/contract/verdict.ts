// The answer people come for: does the job fit on the card, and by how much (headroom) or
// by how much not (shortfall). "On the card" is what nvidia-smi shows: PyTorch's peak
// reserved plus the CUDA context, plus NCCL's buffers for a data-parallel rank (card.ts). On an OOM the run stops at the failure, so the
// requirement comes from the same spec run to its end on an unbounded device.
import { formatBytes } from './units';
import type { CardMemory } from './card';
import type { SpecInput } from './spec';

export interface Verdict {
  fits: boolean;
  /** Peak reserved + context (+ NCCL): the run's own (fits), else the unbounded run's (what it needs). */
  on_card: number;
  /** What the card (or the spec's capacity cap, plus the context and NCCL) allows on the card. */
  limit: number;
  total: number;
  context: number;
  /** NCCL's buffers per rank (data parallel), outside the allocator like the context; absent on one GPU. */
  nccl?: number;
  /** limit - on_card: headroom when >= 0, shortfall when < 0. */
  margin: number;
}

export function makeVerdict(fits: boolean, peakReserved: number, card: CardMemory, capacity: number | null): Verdict {
  // NCCL holds its buffers outside the allocator as the context does: the cap bounds reserved only.
  const outside = card.context + (card.nccl ?? 0);
  const usable = Math.max(0, card.total - outside);
  const limit = (capacity === null ? usable : Math.min(capacity, usable)) + outside;
  const onCard = peakReserved + outside;
  return {
    fits,
    on_card: onCard,
    limit,
    total: card.total,
    context: card.context,
    ...(card.nccl ? { nccl: card.nccl } : {}),
    margin: limit - onCard,
  };
}

/** "fits: 16.75 GiB on the card of 23.55 GiB, 6.80 GiB headroom" /
 *  "does not fit: needs 55.33 GiB on the card: short by 31.78 GiB". */
export function verdictLine(v: Verdict): string {
  const of = v.limit < v.total ? `the ${formatBytes(v.limit)} the cap allows` : formatBytes(v.total);
  if (v.fits) return `fits: ${formatBytes(v.on_card)} on the card of ${of}, ${formatBytes(v.margin)} headroom`;
  if (v.margin >= 0)
    // Needs no more than the card, yet the allocator ran out: cached blocks in the wrong sizes.
    return `does not fit: needs ${formatBytes(v.on_card)} on the card of ${of}, yet the allocator ran out (fragmentation)`;
  const cap = v.limit < v.total ? ` under the cap (${formatBytes(v.limit)} with the context${v.nccl ? ' and NCCL' : ''})` : '';
  return `does not fit: needs ${formatBytes(v.on_card)} on the card: short by ${formatBytes(-v.margin)}${cap}`;
}

/** What a remedy costs, cheapest first: free settings, then recompute or smaller steps, then
 *  changes to what is trained or its numerics, then different hardware. */
export const REMEDY_COSTS = ['free', 'compute', 'quality', 'hardware'] as const;
export type RemedyCost = (typeof REMEDY_COSTS)[number];

/** A change to the spec that the simulator ran and found to fit. */
export interface Remedy {
  id: string;
  label: string;
  /** Why it costs what it costs ("recomputes each block's forward in backward"). */
  cost_note: string;
  cost: RemedyCost;
  /** Modelled step time relative to the spec run unbounded (1.3 = 30% more), when modelled. */
  time_ratio: number | null;
  /** False when the change trains something else (smaller effective batch, LoRA, bf16 weights). */
  same_training: boolean;
  /** The spec to apply (the validated spec, as the form and the CLI take it). */
  spec: SpecInput;
  peak_reserved: number;
  verdict: Verdict;
}

export interface RemediesResult {
  /** The spec as is. */
  verdict: Verdict;
  parameters: number;
  remedies: Remedy[];
  /** Candidates the simulator ran that still do not fit (id, how they ended, reserved when they stopped). */
  rejected: { id: string; label: string; status: string; reserved: number }[];
}

/** One line per remedy: 'checkpoint: "block": 16.75 GiB on the card, 6.80 GiB headroom; 1.33x step time'. */
export function remedyLine(r: Remedy): string {
  const time = r.time_ratio !== null && Math.abs(r.time_ratio - 1) >= 0.005 ? `; ${r.time_ratio.toFixed(2)}x step time` : '';
  const flag = r.same_training ? '' : '; changes what is trained';
  return `${r.label}: ${formatBytes(r.verdict.on_card)} on the card, ${formatBytes(r.verdict.margin)} headroom (${r.cost}: ${r.cost_note}${time}${flag})`;
}
