// Sequence lengths drawn per step: the draw is deterministic from its seed, stays in its
// range or histogram, pads and orders as asked, is checked like every other field, and
// reaches the engine as the explicit list.
import { describe, expect, it } from 'vitest';
import { checkSpec, engineSpec, parseSpec } from '../../main/contract/spec';
import { describeShapes, shapeSteps, type ShapeDraw } from '../../main/contract/shapes';
import { lengthFixSpecs } from '../../main/runner/fixes';

const gpt = { kind: 'gpt', vocab: 1024, seq: 512, dim: 64, depth: 2, heads: 4 };
const draw = (over: Partial<ShapeDraw> = {}): ShapeDraw => ({
  batch: 4,
  steps: 500,
  seed: 7,
  seq: { min: 10, max: 300 },
  pad_to: 1,
  order: 'drawn',
  ...over,
});

describe('drawn shapes', () => {
  it('the same seed gives the same lengths, another seed others, all within the range', () => {
    const a = shapeSteps(draw(), 512);
    expect(a).toEqual(shapeSteps(draw(), 512));
    expect(a.map((s) => s.seq)).not.toEqual(shapeSteps(draw({ seed: 8 }), 512).map((s) => s.seq));
    expect(a).toHaveLength(500);
    expect(a.every((s) => s.batch === 4 && s.seq >= 10 && s.seq <= 300)).toBe(true);
    // uniform: both ends come up and the mean is near the middle
    const lens = a.map((s) => s.seq);
    expect(Math.min(...lens)).toBeLessThan(20);
    expect(Math.max(...lens)).toBeGreaterThan(290);
    expect(Math.abs(lens.reduce((x, y) => x + y, 0) / lens.length - 155)).toBeLessThan(15);
  });

  it('draws a histogram with its weights, never a zero-weight length', () => {
    const lens = shapeSteps(
      draw({
        steps: 4000,
        seq: {
          histogram: [
            [64, 3],
            [128, 1],
            [256, 0],
            [512, 1],
          ],
        },
      }),
      512,
    ).map((s) => s.seq);
    const share = (l: number) => lens.filter((x) => x === l).length / lens.length;
    expect(share(256)).toBe(0);
    expect(share(64)).toBeGreaterThan(0.55);
    expect(share(64)).toBeLessThan(0.65);
    expect(share(128)).toBeGreaterThan(0.15);
    expect(share(512)).toBeGreaterThan(0.15);
  });

  it('pads to buckets (capped at model.seq) and sorts longest first', () => {
    const padded = shapeSteps(draw({ pad_to: 128, seq: { min: 1, max: 500 } }), 480);
    expect(padded.every((s) => s.seq % 128 === 0 || s.seq === 480)).toBe(true);
    expect(new Set(padded.map((s) => s.seq)).size).toBeLessThanOrEqual(4);
    const sorted = shapeSteps(draw({ order: 'longest_first' }), 512).map((s) => s.seq);
    expect(sorted).toEqual([...shapeSteps(draw(), 512).map((s) => s.seq)].sort((x, y) => y - x));
  });

  it('a spec keeps the draw as written, with defaults; the engine gets the explicit list', () => {
    const spec = parseSpec({ model: gpt, shapes: { seq: { min: 32, max: 256 }, steps: 20 } });
    expect(spec.shapes).toEqual({ batch: 8, steps: 20, seed: 0, seq: { min: 32, max: 256 }, pad_to: 1, order: 'drawn' });
    expect(spec.iterations).toBe(20);
    const eng = engineSpec(spec);
    expect(Array.isArray(eng.shapes)).toBe(true);
    expect(eng.shapes).toEqual(shapeSteps(spec.shapes as ShapeDraw, 512));
    // a stored spec parses to itself
    expect(parseSpec(JSON.parse(JSON.stringify(spec)))).toEqual(spec);
    expect(describeShapes(spec.shapes!)).toBe('b8 x 20 steps, seq 32..256, seed 0, pad 1, drawn');
  });

  it.each([
    [{ model: gpt, shapes: { seq: { min: 32, max: 600 } } }, 'shapes.seq', 'at most model.seq (512)'],
    [{ model: gpt, shapes: { seq: { min: 300, max: 200 } } }, 'shapes.seq.min', 'at most max'],
    [{ model: gpt, shapes: { seq: { histogram: [[64, 0]] } } }, 'shapes.seq.histogram', 'positive weight'],
    [{ model: gpt, shapes: { seq: { histogram: [[64, -1]] } } }, 'shapes.seq.histogram.0.1', 'not be negative'],
    [{ model: gpt, shapes: { seq: { min: 1, max: 8 }, order: 'random' } }, 'shapes.order', '"drawn" or "longest_first"'],
    [{ model: gpt, shapes: { seq: { min: 1, max: 8 }, steps: 10 }, iterations: 3 }, 'iterations', 'must equal the number of shapes (10)'],
    [{ model: gpt, shapes: { seq: { min: 1, max: 8 }, pad_to: 1024 } }, 'shapes.pad_to', 'at most model.seq (512)'],
    [{ model: gpt, shapes: { seq: { min: 1, max: 8 }, steps: 100000 } }, 'shapes.steps', 'an integer from 1 to 4096'],
    [{ model: gpt, shapes: { seq: 12 } }, 'shapes', 'seq must be {"min": a, "max": b}'],
    [{ model: gpt, mode: 'inference', empty_cache_every: 2 }, 'empty_cache_every', 'mode "train" only'],
  ])('rejects %j naming %s', (input, field, text) => {
    const r = checkSpec(input);
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(
      r.issues.some((i) => i.startsWith(`${field}`) && i.includes(text)),
      r.issues.join(' | '),
    ).toBe(true);
  });

  it('the fixes: one valid variant each, padding and packing as described', () => {
    const v = lengthFixSpecs({ model: gpt, shapes: { seq: { min: 1, max: 300 }, steps: 50, seed: 3 } });
    expect(v.map((x) => x.fix.id)).toEqual(['none', 'pad_buckets', 'longest_first', 'pack', 'expandable_segments', 'empty_cache']);
    const by = Object.fromEntries(v.map((x) => [x.fix.id, x]));
    expect(by.pad_buckets.steps.every((s) => s.seq % 128 === 0)).toBe(true);
    expect(by.longest_first.steps[0].seq).toBe(Math.max(...by.none.steps.map((s) => s.seq)));
    const tokens = (xs: { batch: number; seq: number }[]) => xs.reduce((a, s) => a + s.batch * s.seq, 0);
    const longest = Math.max(...by.none.steps.map((s) => s.seq));
    expect(new Set(by.pack.steps.map((s) => s.seq))).toEqual(new Set([longest]));
    expect(tokens(by.pack.steps)).toBeGreaterThanOrEqual(tokens(by.none.steps));
    expect(tokens(by.pack.steps) - tokens(by.none.steps)).toBeLessThan(8 * longest);
    expect(by.pack.spec.iterations).toBe(by.pack.steps.length);
    expect(by.expandable_segments.spec.alloc_conf).toBe('expandable_segments:True');
    expect(by.empty_cache.spec.empty_cache_every).toBe(10);
    expect(() => lengthFixSpecs({ model: gpt })).toThrow(/per-iteration shapes/);
  });
});
