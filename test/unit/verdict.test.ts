// The verdict and the checked remedies, through the real addon: an OOM still says what the
// job needs (the peak of the same spec run on an unbounded device, plus the card's context)
// and by how much it is short; every remedy offered fits when simulated on the card, and
// the candidates that still run out of memory are not offered.
import { describe, expect, it } from 'vitest';
import { native } from '../helpers/addon';
import { Predictor } from '../../main/runner/predict';
import { checkRemedies } from '../../main/runner/remedies';
import { simulate } from '../../main/runner/simulate';

/** A device of the 4090's model far larger than these jobs need (a sim:custom device has no
 *  context of its own). */
const UNBOUNDED = 'sim:custom:1TiB@rtx4090-24gb';
import { cardMemory } from '../../main/runner/card_memory';
import { checkSpec, parseSpec, type SpecInput } from '../../main/contract/spec';
import { verdictLine } from '../../main/contract/verdict';

const TINYLLAMA = { kind: 'llama', vocab: 32000, seq: 2048, dim: 2048, depth: 22, heads: 32, kv_heads: 4, ffn: 5632 } as const;
/** TinyLlama LoRA, batch 8, on a 24 GB card: runs out of memory as it stands. */
const TINY_LORA_24GB: SpecInput = { model: TINYLLAMA, batch: 8, finetune: { method: 'lora' }, device: 'sim:rtx4090-24gb' };

describe('the verdict', () => {
  it('reports what an OOM spec needs: the unbounded peak plus the context, and the shortfall', async () => {
    const spec = parseSpec(TINY_LORA_24GB);
    const p = await new Predictor(native).predict(spec);
    expect(p.status).toBe('oom');
    const unbounded = await simulate(native, spec, UNBOUNDED);
    expect(unbounded.status).toBe('done');
    const card = cardMemory(native, spec.device);
    expect(p.verdict).toMatchObject({
      fits: false,
      on_card: unbounded.peak_reserved + card.context,
      total: card.total,
      context: card.context,
    });
    expect(p.verdict!.margin).toBe(card.total - (unbounded.peak_reserved + card.context));
    expect(p.verdict!.margin).toBeLessThan(0);
    // The model is counted even though the run stopped at the OOM.
    expect(p.parameters).toBe(unbounded.num_parameters);
    expect(p.parameters).toBeGreaterThan(1e9);
    expect(verdictLine(p.verdict!)).toMatch(/^does not fit: needs \d+\.\d\d GiB on the card: short by \d+\.\d\d GiB$/);
  });

  it('reports the requirement with expandable segments too (they reserve address space by device size)', async () => {
    const spec = parseSpec({ ...TINY_LORA_24GB, alloc_conf: 'expandable_segments:True' });
    const p = await new Predictor(native).predict(spec);
    expect(p.status).toBe('oom');
    const unbounded = await simulate(native, spec, UNBOUNDED);
    expect(unbounded.status).toBe('done');
    expect(p.verdict!.on_card).toBe(unbounded.peak_reserved + p.context);
  });

  it('says a spec that fits fits, with its headroom on the whole card', async () => {
    const spec = parseSpec({ ...TINY_LORA_24GB, batch: 1 });
    const p = await new Predictor(native).predict(spec);
    expect(p.status).toBe('done');
    expect(p.verdict).toMatchObject({ fits: true, on_card: p.peak_reserved + p.context, margin: p.total - p.peak_reserved - p.context });
    expect(verdictLine(p.verdict!)).toMatch(/^fits: .* headroom$/);
  });

  it('counts the spec capacity cap in the limit', async () => {
    const p = await new Predictor(native).predict(parseSpec({ batch: 65536, capacity: '512MiB' }));
    expect(p.verdict!.limit).toBe(512 * 2 ** 20 + p.context);
    expect(p.verdict!.fits).toBe(false);
  });
});

describe('checked remedies', () => {
  it('lists only changes that fit when simulated, and leaves out those that still run out of memory', async () => {
    const spec = parseSpec(TINY_LORA_24GB);
    const card = cardMemory(native, spec.device);
    const r = await checkRemedies(native, spec);
    expect(r.verdict.fits).toBe(false);
    expect(r.remedies.length).toBeGreaterThan(0);
    for (const remedy of r.remedies) {
      // Valid through the one validation, and it completes on its card.
      const checked = checkSpec(remedy.spec);
      expect(checked.ok).toBe(true);
      const s = parseSpec(remedy.spec);
      const o = await simulate(native, s, s.device);
      expect(o.status, remedy.id).toBe('done');
      expect(remedy.peak_reserved).toBe(o.peak_reserved);
      expect(remedy.verdict.fits).toBe(true);
    }
    // Each rejected candidate really runs out of memory on this card.
    for (const id of ['expandable_segments', 'max_split_size_mb']) {
      const conf = id === 'expandable_segments' ? 'expandable_segments:True' : 'max_split_size_mb:128';
      const o = await simulate(native, parseSpec({ ...TINY_LORA_24GB, alloc_conf: conf }), spec.device);
      expect(o.status).toBe('oom');
      expect(r.remedies.map((x) => x.id)).not.toContain(id);
      expect(r.rejected.map((x) => x.id)).toContain(id);
    }
    const ids = r.remedies.map((x) => x.id);
    expect(ids).toContain('checkpoint_block');
    expect(ids.some((id) => id.startsWith('accum_'))).toBe(true);
    // Accumulation keeps the effective batch.
    const accum = r.remedies.find((x) => x.id.startsWith('accum_'))!;
    expect(Number(accum.spec.batch) * Number(accum.spec.accum)).toBe(8);
    // The larger card is the smallest preset bigger than this one on which it completes.
    const larger = r.remedies.find((x) => x.id === 'larger_card')!;
    const bigger = native
      .listDevices()
      .filter((d) => d.kind === 'sim' && d.total > card.total)
      .sort((a, b) => a.total - b.total);
    for (const d of bigger) {
      const o = await simulate(native, parseSpec({ ...TINY_LORA_24GB, device: d.id }), d.id);
      if (o.status === 'done') {
        expect(larger.spec.device).toBe(d.id);
        break;
      }
    }
    // Cheapest first: free settings, compute, quality, hardware.
    const order = ['free', 'compute', 'quality', 'hardware'];
    const ranks = r.remedies.map((x) => order.indexOf(x.cost));
    expect(ranks).toEqual([...ranks].sort((a, b) => a - b));
    expect(r.remedies.at(-1)!.id).toBe('larger_card');
  }, 60_000);
});
