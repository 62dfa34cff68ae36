// Each distinct rank's verdict on the card for a data-parallel run. Ranks run their own
// simulation per rank_class (the engine reports rank 0's status and peaks, every class's
// readings), so a class's peak reserved is its reserved_peak reading over the same base
// reserved as rank 0 (every rank sets up alike before the model is built).
import type { NativeOutcome } from '../addon/types';
import type { CardMemory } from '../contract/card';
import type { RankVerdict } from '../contract/runs';
import { makeVerdict, type Verdict } from '../contract/verdict';

const asRecord = (r: [string, number][] | undefined) => Object.fromEntries(r ?? []);

/**
 * `outcome` is the run itself when it completed, else the unbounded run of the same spec
 * (what each rank needs); `verdict` is the run's own (rank 0's). A completed run completed
 * on every rank (a rank that runs out ends the run); after an OOM a rank fits when what it
 * needs unbounded stays within the limit (its capped run never reaches the cap, so it is
 * the same run).
 */
export function rankVerdicts(
  outcome: NativeOutcome,
  completed: boolean,
  verdict: Verdict,
  card: CardMemory,
  capacity: number | null,
): RankVerdict[] {
  const ranks = (outcome.ranks ?? []).map(asRecord);
  if (ranks.length < 2) return [];
  const classes = outcome.rank_class?.length === ranks.length ? outcome.rank_class : ranks.map((_, r) => r);
  const base = outcome.peak_reserved - (ranks[0].reserved_peak ?? 0);
  const out: RankVerdict[] = [];
  for (const c of new Set(classes)) {
    if (c === 0) {
      out.push({ rank: 0, peak_reserved: outcome.peak_reserved, verdict });
      continue;
    }
    const peak = (ranks[c].reserved_peak ?? 0) + base;
    const within = makeVerdict(true, peak, { ...card, nccl: outcome.nccl ?? 0 }, capacity);
    const fits = completed || within.margin >= 0;
    out.push({ rank: c, peak_reserved: peak, verdict: { ...within, fits } });
  }
  return out;
}
