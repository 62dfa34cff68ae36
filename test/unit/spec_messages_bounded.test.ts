// Spec errors quote what they were given, but never all of it: a 100 MB alloc_conf, a
// million unknown keys or a histogram of a million lengths each end in one short line.
// Also: one value breaking two rules is said once, and histogram weights must have a finite sum.
import { describe, expect, it } from 'vitest';
import { checkSpec } from '../../main/contract/spec';
import { shapeSteps, type ShapeDraw } from '../../main/contract/shapes';
import { native } from '../helpers/addon';

const issues = (spec: unknown): string[] => {
  const r = checkSpec(spec);
  if (r.ok) throw new Error('spec was accepted');
  return r.issues;
};
const gpt = { kind: 'gpt', seq: 128 };
const MAX_LINE = 400;

describe('spec error messages stay short whatever the input', () => {
  it('a 100 MB alloc_conf is refused for its length, quoting 80 characters of it', () => {
    const [line, ...rest] = issues({ alloc_conf: 'x'.repeat(100e6) });
    expect(rest).toEqual([]);
    expect(line).toMatch(/^alloc_conf: must be at most 1024 characters \(got "x{80}"\.\.\. \(100000000 characters\)\)$/);
  });

  it('an unknown alloc_conf setting with a long name is quoted short', () => {
    const [line] = issues({ alloc_conf: `${'k'.repeat(1000)}:1` });
    expect(line).toMatch(/Unrecognized key 'k{80}\.\.\. \(1000 characters\)'/);
    expect(line.length).toBeLessThan(MAX_LINE * 2); // the allowed list is part of it
  });

  it('300,000 unknown keys: a count and the first few names', () => {
    const spec: Record<string, number> = {};
    for (let i = 0; i < 3e5; i++) spec[`k${i}`] = i;
    const [line, ...rest] = issues(spec);
    expect(rest).toEqual([]);
    expect(line).toBe(
      'spec: has 300000 keys, more than the 256 any spec object may have: "k0", "k1", "k2", "k3", "k4", "k5", "k6", "k7" and 299992 more',
    );
  });

  it('a few hundred unknown keys are listed eight at a time, with the allowed ones', () => {
    const spec: Record<string, number> = { batch: 2 };
    for (let i = 0; i < 200; i++) spec[`key${i}`] = i;
    const [line] = issues(spec);
    expect(line).toMatch(/^spec: unknown keys "key0", .*"key7" and 192 more \(allowed: model, batch, /);
    const model: Record<string, unknown> = { kind: 'mlp' };
    for (let i = 0; i < 100; i++) model[`f${i}`] = i;
    expect(issues({ model })[0]).toMatch(/^model: unknown keys "f0", .*"f7" and 92 more$/);
  });

  it('long strings in any field are quoted short', () => {
    const long = 'z'.repeat(1e6);
    const lines = [
      ...issues({ model: { kind: long }, batch: long, device: long, capacity: long, optimizer: { kind: 'adam', lr: long } }),
      ...issues({ model: gpt, finetune: { method: 'lora', targets: [long] } }),
      ...issues({ model: gpt, mode: long, checkpoint: { every: long } }),
    ];
    expect(lines.length).toBeGreaterThanOrEqual(6);
    for (const l of lines) {
      expect(l.length).toBeLessThan(MAX_LINE);
      if (l.includes('zzz')) expect(l).toContain('(1000000 characters)');
    }
  });

  it('a document nested a million deep is refused without walking it all', () => {
    let deep: unknown = 1;
    for (let i = 0; i < 1e6; i++) deep = [deep];
    const [line] = issues({ model: deep });
    expect(line).toMatch(/^model(\.0)+: nests more than 32 levels deep$/);
  });

  it('a histogram of a million lengths says the 4096 limit, not that min and max are missing', () => {
    const histogram = Array.from({ length: 1e6 }, (_, i) => [1 + (i % 128), 1]);
    const lines = issues({ model: gpt, shapes: { seq: { histogram } } });
    expect(lines.join('\n')).not.toMatch(/missing|min|max/);
    expect(lines).toEqual(['shapes.seq.histogram: lists 1000000 items; no list in a spec may hold more than 4096']);
    const justOver = Array.from({ length: 5000 }, (_, i) => [1 + (i % 128), 1]);
    expect(issues({ model: gpt, shapes: { seq: { histogram: justOver } } })).toEqual([
      'shapes.seq.histogram: must list at most 4096 lengths (got 5000)',
    ]);
  });

  it('a value that breaks two rules of one field is reported once', () => {
    // 1e300 is past the maximum and past the safe integers: two rules, one message.
    const lines = issues({ model: gpt, shapes: { seq: { min: 1, max: 8 }, seed: 1e300 } });
    expect(lines).toEqual(['shapes.seed: must be an integer from 0 to 4294967295 (got 1e+300)']);
    expect(issues({ batch: -1e300 })).toHaveLength(1);
    // Echoed as given: JSON would have printed NaN as null.
    expect(issues({ batch: NaN })).toEqual(['batch: must be an integer from 1 to 16777216 (got NaN)']);
  });
});

describe('histogram weights', () => {
  it('weights that sum to Infinity are refused', () => {
    const lines = issues({
      model: gpt,
      shapes: {
        seq: {
          histogram: [
            [64, 1e308],
            [128, 1e308],
            [32, 1e-300],
          ],
        },
      },
    });
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^shapes\.seq\.histogram: weights must sum to a finite number/);
  });

  it('large weights with a finite sum are accepted and drawn by their ratios', () => {
    const r = checkSpec({
      model: gpt,
      shapes: {
        steps: 400,
        seq: {
          histogram: [
            [64, 5e307],
            [128, 5e307],
          ],
        },
      },
    });
    expect(r.ok).toBe(true);
    const seqs = shapeSteps(r.ok ? r.spec.shapes! : [], 128).map((s) => s.seq);
    const long = seqs.filter((s) => s === 128).length;
    expect(long).toBeGreaterThan(120); // about half of 400, not all of one length
    expect(long).toBeLessThan(280);
  });

  it('a draw built without the schema refuses a non-finite total too', () => {
    const draw: ShapeDraw = {
      batch: 1,
      steps: 4,
      seed: 0,
      pad_to: 1,
      order: 'drawn',
      seq: {
        histogram: [
          [8, 1e308],
          [16, 1e308],
        ],
      },
    };
    expect(() => shapeSteps(draw, 16)).toThrow(/finite/);
  });
});

describe("the native settings parser's errors reach JS short", () => {
  it('a huge bad settings string gives a message of a few hundred characters', () => {
    for (const settings of ['q'.repeat(1 << 20), `expandable_segments:${'y'.repeat(1 << 20)}`, `${'k'.repeat(1 << 20)}:1`]) {
      let message = '';
      try {
        new native.Allocator('sim:h100-80gb', settings);
      } catch (err) {
        message = (err as Error).message;
      }
      expect(message).toMatch(/characters\)/);
      expect(message.length).toBeLessThan(MAX_LINE);
    }
  });
});
