// The ranks of a data-parallel run grouped as the engine simulated them: ranks of one
// rank_class ran the same program on the same sizes, so they are shown once ("ranks 0–3").
// Which rank peaks highest (runs out first as the card shrinks) and where its memory peaks.
import type { RankVerdict, RunSummary } from './runs';

export interface RankGroup {
  /** The first rank of the class: the one whose simulation the others share. */
  rank: number;
  members: number[];
  label: string;
  readings: Record<string, number>;
  /** Its verdict on the card, where the run has one. */
  verdict: RankVerdict | null;
  /** Its peak reserved: the verdict's, else its reserved_peak reading over rank 0's base; null if unknown. */
  peak_reserved: number | null;
}

/** "rank 2", "ranks 0–3", "ranks 1, 3, 5", "ranks 0, 2, … 14 (8)". */
export function rankSpan(members: readonly number[]): string {
  if (members.length === 1) return `rank ${members[0]}`;
  const contiguous = members.every((r, i) => i === 0 || r === members[i - 1] + 1);
  if (contiguous) return `ranks ${members[0]}–${members[members.length - 1]}`;
  if (members.length <= 4) return `ranks ${members.join(', ')}`;
  return `ranks ${members[0]}, ${members[1]}, … ${members[members.length - 1]} (${members.length})`;
}

/** One group per distinct rank, in rank order; [] for a run on one GPU. */
export function rankGroups(s: Pick<RunSummary, 'ranks' | 'rank_class' | 'rank_verdicts' | 'peak_reserved'>): RankGroup[] {
  // After an OOM the run has no readings per rank, only the classes its verdicts came from.
  const ranks = s.ranks ?? [];
  const classes = s.rank_class?.length ? s.rank_class : ranks.map((_, r) => r);
  if (classes.length < 2) return [];
  const members = new Map<number, number[]>();
  classes.forEach((c, r) => members.set(c, [...(members.get(c) ?? []), r]));
  // Every rank sets up alike before the model is built: one base reserved under each reading.
  const r0 = ranks[0]?.reserved_peak;
  return [...members.entries()].map(([rank, m]) => {
    const verdict = s.rank_verdicts?.find((v) => v.rank === rank) ?? null;
    const own = ranks[rank]?.reserved_peak;
    const fromReadings = own !== undefined && r0 !== undefined ? own + s.peak_reserved - r0 : null;
    return {
      rank,
      members: m,
      label: rankSpan(m),
      readings: ranks[rank] ?? {},
      verdict,
      peak_reserved: verdict?.peak_reserved ?? fromReadings,
    };
  });
}

/** The group that needs the most on the card (the first to run out), ties to the lower rank;
 *  without verdicts, the one with the highest reserved_peak reading. */
export function highestGroup(groups: readonly RankGroup[]): RankGroup | null {
  const need = (g: RankGroup) => g.verdict?.verdict.on_card ?? g.readings.reserved_peak ?? 0;
  return groups.reduce<RankGroup | null>((best, g) => (best === null || need(g) > need(best) ? g : best), null);
}

/** The first reading (in the protocol's order) at which a rank's allocated memory is highest. */
export function peakReading(readings: Record<string, number>): string | null {
  let key: string | null = null;
  for (const [k, v] of Object.entries(readings)) if (!k.startsWith('reserved_') && (key === null || v > readings[key])) key = k;
  return key;
}
