// The transformer and fine-tuning lessons state what the engine shows: each lesson's own
// experiments are simulated here and the relations its text claims are checked (relations
// and rough sizes, so parity work that moves a few MiB does not break them).
import { describe, expect, it } from 'vitest';
import { native } from '../helpers/addon';
import { Predictor } from '../../main/runner/predict';
import { parseSpec } from '../../main/contract/spec';
import type { Prediction } from '../../main/contract/runs';
import { lessons } from '../../renderer/src/lessons/lessons';

const GiB = 2 ** 30;
const MiB = 2 ** 20;
const predictor = new Predictor(native);

async function lessonRuns(id: string): Promise<Prediction[]> {
  const lesson = lessons().find((l) => l.id === id)!;
  const out: Prediction[] = [];
  for (const s of lesson.steps)
    if (s.action?.kind === 'experiment') out.push(await predictor.predict(parseSpec({ ...s.action.spec, history: false })));
  for (const p of out) expect(p.status).toBe('done');
  return out;
}
const peak = (p: Prediction) => p.peak_allocated - p.baseline;
const near = (x: number, want: number, tol: number) => expect(Math.abs(x - want)).toBeLessThan(tol);

describe('lesson claims', () => {
  it('transformer-memory: the vocabulary moves the peak by ~2.3 GiB; tokens, not seq^2, set attention', async () => {
    const [base, smallVocab, longCtx] = await lessonRuns('transformer-memory');
    near(peak(base), 6.5 * GiB, 0.2 * GiB);
    near(peak(base) - peak(smallVocab), 2.35 * GiB, 0.15 * GiB);
    near(peak(longCtx), peak(base), 64 * MiB);
  });

  it('grouped-query-attention: training saves ~0.9 GiB, the KV cache shrinks 8x', async () => {
    const [mha, gqa, genMha, genGqa] = await lessonRuns('grouped-query-attention');
    near(peak(mha) - peak(gqa), 0.9 * GiB, 0.1 * GiB);
    expect(mha.readings.params - gqa.readings.params).toBe(616 * MiB);
    const cache = (p: Prediction) => p.readings.after_generate - p.readings.params;
    near(cache(genMha), 1760 * MiB, 4 * MiB);
    near(cache(genGqa), 220 * MiB, 4 * MiB);
  });

  it('transformer-checkpointing: block lowers the peak by ~2.4 GiB, sqrt a little more', async () => {
    const [none, block, sqrt] = await lessonRuns('transformer-checkpointing');
    near(none.readings.after_forward, 4.05 * GiB, 0.1 * GiB);
    near(block.readings.after_forward, 1.6 * GiB, 0.1 * GiB);
    near(peak(none) - peak(block), 2.4 * GiB, 0.15 * GiB);
    expect(peak(sqrt)).toBeLessThan(peak(block));
  });

  it('lora-vs-full: LoRA and freezing both well under full fine-tuning', async () => {
    const [full, lora, freeze] = await lessonRuns('lora-vs-full');
    near(peak(full), 9.2 * GiB, 0.2 * GiB);
    near(peak(lora), 5.6 * GiB, 0.2 * GiB);
    near(peak(freeze), 5.7 * GiB, 0.2 * GiB);
    expect(lora.trainable_parameters).toBe(786_432);
    expect(lora.readings.it0_peak_step - lora.readings.it0_after_backward).toBeLessThan(16 * MiB);
    near(full.readings.after_forward - freeze.readings.after_forward, 2 * GiB, 0.15 * GiB);
  });

  it('bf16-weights: half the parameter bytes, ~6.5 GiB peak, LoRA on a bf16 base lower still', async () => {
    const [fp32, bf16, loraBf16] = await lessonRuns('bf16-weights');
    near(fp32.readings.params / bf16.readings.params, 2, 0.01);
    near(peak(bf16), 6.5 * GiB, 0.2 * GiB);
    near(peak(loraBf16), 4.3 * GiB, 0.2 * GiB);
    expect(peak(loraBf16)).toBeLessThan(peak(bf16));
  });

  it('kv-cache: static holds more after the prefill, dynamic reserves ~370 MiB more, expandable segments undo it', async () => {
    const [dynamic, fixed, expandable] = await lessonRuns('kv-cache');
    expect(fixed.readings.after_prefill).toBeGreaterThan(dynamic.readings.after_prefill);
    expect(dynamic.readings.peak_decode).toBeGreaterThan(dynamic.readings.after_prefill);
    near(fixed.readings.peak_decode, fixed.readings.after_prefill, 2 * MiB);
    near(dynamic.readings.reserved_peak - fixed.readings.reserved_peak, 370 * MiB, 40 * MiB);
    expect(expandable.readings.reserved_peak).toBeLessThan(fixed.readings.reserved_peak + 16 * MiB);
  });

  it('varying-lengths: drawn lengths reserve ~2.3 GiB more than the fixed longest; longest first and expandable segments undo it', async () => {
    const [fixed, drawn, longest, expandable] = await lessonRuns('varying-lengths');
    near(fixed.readings.reserved_peak, 7356 * MiB, 64 * MiB);
    near(drawn.readings.reserved_peak - fixed.readings.reserved_peak, 2.3 * GiB, 0.15 * GiB);
    expect(drawn.readings.num_device_alloc).toBe(139);
    near(longest.readings.reserved_peak, fixed.readings.reserved_peak, 64 * MiB);
    expect(expandable.readings.reserved_peak).toBeLessThan(fixed.readings.reserved_peak);
  });
});
