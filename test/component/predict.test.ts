// The analytic prediction against PyTorch's own readings (test/refs): the formula is an
// estimate, so it must land near the measured peak, not on it.
import { describe, expect, it } from 'vitest';
import refs from '../refs/pytorch_reference.json';
import { parameterShapes, predictPeak, segmentLength } from '../../renderer/src/lib/predict';
import type { SpecInput } from '../../main/contract/spec';

type Run = { config: Record<string, string | number>; torch: Record<string, number> };
const runs = (refs as unknown as { parity_examples: { runs: Run[] } }).parity_examples.runs;

function specOf(c: Run['config']): SpecInput {
  const model =
    c.model === 'mlp'
      ? { kind: 'mlp' as const, in: c.in as number, hidden: c.hidden as number, depth: c.depth as number, out: c.out as number }
      : { kind: 'residual' as const, dim: c.dim as number, depth: c.depth as number };
  return { model, batch: c.batch as number, optimizer: c.opt as 'sgd', checkpoint: (c.ckpt as 'none') ?? 'none' };
}

describe('predictPeak', () => {
  it('counts parameters exactly (the seed MLP has 6,316,042)', () => {
    const p = predictPeak({ model: { kind: 'mlp', in: 1024, hidden: 2048, depth: 2, out: 10 } });
    expect(p.params).toBe(6316042);
    // PyTorch rounds each tensor to 512 bytes: the reference's `params` reading.
    expect(p.weights).toBe(runs[0].torch.params);
  });

  it('lands within 5% of PyTorch\'s measured peak for every parity run', () => {
    for (const r of runs) {
      const p = predictPeak(specOf(r.config));
      const measured = Math.max(r.torch.it1_peak_fwd_bwd, r.torch.it1_peak_step);
      expect(Math.abs(p.peak - measured) / measured, JSON.stringify(r.config)).toBeLessThan(0.05);
    }
  });

  it('saves activations as PyTorch does: 3 per residual block, 1 with per-block checkpointing', () => {
    const none = runs[2];
    const block = runs[3];
    expect(predictPeak(specOf(none.config)).activations).toBe(none.torch.after_forward - none.torch.input);
    expect(predictPeak(specOf(block.config)).activations).toBe(block.torch.after_forward - block.torch.input);
  });

  it('puts Adam at 8 bytes per parameter and SGD without momentum at 0', () => {
    const spec: SpecInput = { model: { kind: 'mlp', in: 64, hidden: 64, depth: 1, out: 64 } };
    const bytes = parameterShapes(spec).reduce((a, n) => a + Math.ceil((n * 4) / 512) * 512, 0);
    expect(predictPeak({ ...spec, optimizer: 'adam' }).optimizerState).toBe(2 * bytes);
    expect(predictPeak({ ...spec, optimizer: 'sgd' }).optimizerState).toBe(0);
    expect(predictPeak({ ...spec, optimizer: { kind: 'sgd', momentum: 0.9 } }).optimizerState).toBe(bytes);
  });

  it('grows activations linearly with batch and halves them under bf16', () => {
    const a = predictPeak({ batch: 256 }).activations;
    expect(predictPeak({ batch: 512 }).activations).toBe(2 * a);
    expect(predictPeak({ batch: 256, precision: 'bf16' }).activations).toBe(a / 2);
  });

  it('keeps no gradients, optimizer state or activations for inference', () => {
    const p = predictPeak({ mode: 'inference' });
    expect(p.gradients + p.optimizerState + p.activations).toBe(0);
    expect(p.peak).toBeLessThan(predictPeak({}).peak);
  });

  it('uses round(sqrt(n)) segments for sqrt checkpointing', () => {
    expect(segmentLength('sqrt', 20)).toBe(5);
    expect(segmentLength('sqrt', 16)).toBe(4);
    expect(segmentLength({ every: 3 }, 20)).toBe(3);
    expect(segmentLength('none', 20)).toBe(0);
  });
});
