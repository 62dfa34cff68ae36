// How the ranks of a data-parallel run are grouped and named for the run view: one group
// per rank_class, contiguous ranks as a range, the group that needs the most on the card
// first to run out, and where a rank's allocated memory peaks first. Real summaries come
// from the engine at world 3, where uneven shards make rank 2 its own class.
import { describe, expect, it } from 'vitest';
import { highestGroup, peakReading, rankGroups, rankSpan } from '../../main/contract/ranks';
import { loadAddon } from '../../main/addon/load';
import { parseSpec } from '../../main/contract/spec';
import { simulate } from '../../main/runner/simulate';

describe('rank groups', () => {
  it('names one rank, a run of ranks, a few and many', () => {
    expect(rankSpan([2])).toBe('rank 2');
    expect(rankSpan([0, 1, 2, 3])).toBe('ranks 0–3');
    expect(rankSpan([1, 3, 5])).toBe('ranks 1, 3, 5');
    expect(rankSpan([0, 2, 4, 6, 8, 10, 12, 14])).toBe('ranks 0, 2, … 14 (8)');
  });

  it('groups a world-3 FSDP2 run by its rank classes, rank 0 peaking highest', async () => {
    const native = loadAddon();
    const spec = parseSpec({
      model: { kind: 'gpt', vocab: 8192, seq: 256, dim: 512, depth: 6, heads: 8 },
      batch: 8,
      optimizer: 'adamw',
      parallel: { kind: 'fsdp2', world: 3, param_dtype: 'bf16', reduce_dtype: 'fp32' },
    });
    const o = await simulate(native, spec, spec.device);
    expect(o.status).toBe('done');
    const summary = {
      ranks: o.ranks!.map((r) => Object.fromEntries(r)),
      rank_class: o.rank_class!,
      peak_reserved: o.peak_reserved,
    };
    const groups = rankGroups(summary);
    expect(groups.map((g) => [g.label, g.members])).toEqual([
      ['ranks 0–1', [0, 1]],
      ['rank 2', [2]],
    ]);
    // Rank 0's peak reserved is the run's; rank 2's sits on the same base with its own reading.
    expect(groups[0].peak_reserved).toBe(o.peak_reserved);
    expect(groups[1].peak_reserved).toBe(o.peak_reserved - summary.ranks[0].reserved_peak + summary.ranks[2].reserved_peak);
    expect(highestGroup(groups)!.rank).toBe(0);
    const at = peakReading(groups[0].readings)!;
    const allocated = Object.entries(groups[0].readings).filter(([k]) => !k.startsWith('reserved_'));
    expect(groups[0].readings[at]).toBe(Math.max(...allocated.map(([, v]) => v)));
    expect(allocated.findIndex(([k]) => k === at)).toBe(allocated.findIndex(([, v]) => v === groups[0].readings[at]));
  });

  it('is empty on one GPU', () => {
    expect(rankGroups({ peak_reserved: 1 })).toEqual([]);
  });
});
