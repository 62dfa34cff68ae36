// Remedies that change the number of GPUs: for a job that runs out on one card, the answer
// offers the smallest world of that card at which it fits sharded with FSDP2, and the
// smallest at which DDP fits with the global batch split over the ranks, each checked by
// running the changed spec on the card (every rank, NCCL's buffers counted), and none where
// a smaller world would have done.
import { describe, expect, it } from 'vitest';
import { native } from '../helpers/addon';
import { checkRemedies } from '../../main/runner/remedies';
import { simulate } from '../../main/runner/simulate';
import { cardMemory } from '../../main/runner/card_memory';
import { makeVerdict } from '../../main/contract/verdict';
import { parseSpec, type SpecInput } from '../../main/contract/spec';

/** A small GPT (the published FSDP2 reference's shape) on an H100 capped at 500 MiB: one GPU runs out. */
const CAPPED: SpecInput = {
  model: { kind: 'gpt', vocab: 8192, seq: 256, dim: 512, depth: 6, heads: 8 },
  batch: 8,
  device: 'sim:h100-80gb',
  capacity: '500MiB',
};

const fitsAt = async (kind: 'fsdp2' | 'ddp', world: number) => {
  const s = parseSpec({ ...CAPPED, parallel: { kind, world }, batch: CAPPED.batch! / world });
  const o = await simulate(native, s, s.device);
  return o.status === 'done';
};

describe('remedies over world', () => {
  it('offers the smallest world that fits for FSDP2 and DDP, each run on the card with NCCL counted', async () => {
    const spec = parseSpec(CAPPED);
    const r = await checkRemedies(native, spec);
    expect(r.verdict.fits).toBe(false);
    const card = cardMemory(native, spec.device);
    for (const kind of ['fsdp2', 'ddp'] as const) {
      // What the search must find: the first world of 2, 4, 8 at which the run completes.
      let expected: number | null = null;
      for (const w of [2, 4, 8])
        if (await fitsAt(kind, w)) {
          expected = w;
          break;
        }
      const offered = r.remedies.filter((x) => x.id.startsWith(`${kind}_`));
      if (expected === null) {
        expect(offered).toEqual([]);
        continue;
      }
      expect(offered.map((x) => x.id)).toEqual([`${kind}_${expected}`]);
      const remedy = offered[0];
      expect(remedy.cost).toBe('hardware');
      // The same global batch, split over the ranks: the same training.
      expect(remedy.spec.batch).toBe(8 / expected);
      expect(remedy.same_training).toBe(true);
      expect(remedy.label).toBe(
        kind === 'fsdp2'
          ? `shard over ${expected} GPUs with FSDP2 (per-rank batch ${8 / expected})`
          : `${expected} GPUs with DDP at per-rank batch ${8 / expected}`,
      );
      // Checked by running it: the changed spec completes, and its verdict counts NCCL on the card.
      const s = parseSpec(remedy.spec);
      const o = await simulate(native, s, s.device);
      expect(o.status).toBe('done');
      expect(o.nccl).toBeGreaterThan(0);
      expect(remedy.peak_reserved).toBeGreaterThanOrEqual(o.peak_reserved);
      expect(remedy.verdict).toEqual(makeVerdict(true, remedy.peak_reserved, { ...card, nccl: o.nccl! }, s.capacity));
      expect(remedy.verdict.nccl).toBe(o.nccl);
      expect(remedy.verdict.margin).toBeGreaterThanOrEqual(0);
    }
    // FSDP2 fits somewhere under this cap (the e2e fit finds 4 GPUs).
    expect(r.remedies.some((x) => x.id.startsWith('fsdp2_'))).toBe(true);
  }, 120_000);

  it('offers no world change to a job that is already data parallel', async () => {
    const spec = parseSpec({ ...CAPPED, parallel: { kind: 'fsdp2', world: 2 }, batch: 4 });
    const r = await checkRemedies(native, spec);
    expect(r.remedies.filter((x) => /^(fsdp2|ddp)_/.test(x.id))).toEqual([]);
  }, 120_000);
});
