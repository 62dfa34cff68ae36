// fit's words for what it knows above and below its answer, and its allocated bound's search
// (fit_bound.ts) on peaks given as functions of the value: the bound it returns is the last
// value within the limit whatever the curve, in few measurements when the curve is near a line.
import { describe, expect, it } from 'vitest';
import { aboveWords, belowWords, fitAnswer } from '../../main/contract/fit_words';
import { allocatedBound, type BoundPoint } from '../../main/runner/fit_bound';
import { ranges } from '../../main/runner/fit';

describe("fit's answer in words", () => {
  const probe = (value: number, ok: boolean) => ({ value, batch: 1, ok, runId: '', peak_allocated: 0, peak_reserved: 0 });

  it('says nothing above the answer fits up to the bound when every value there was probed', () => {
    const fit = { param: 'seq', value: 4259, bound: 4262, unexplored: [], stride: 1, checkedBelow: [], runsOutBelow: [4096] };
    expect(aboveWords(fit)).toBe('nothing above 4259 fits up to 4262 (allocated bound)');
    expect(fitAnswer(fit)).toBe(
      'longest that fits: 4259 (probed); nothing above 4259 fits up to 4262 (allocated bound); 4096 below 4259 runs out',
    );
  });

  it('names the values the probe budget left unprobed, and the step every probed one was on', () => {
    const fit = {
      param: 'seq',
      value: 100,
      bound: 110,
      stride: 4,
      unexplored: [
        [101, 101],
        [103, 105],
        [107, 109],
        [111, 111],
      ] as Array<[number, number]>,
      probes: [probe(102, false), probe(106, false), probe(110, false), probe(90, false)],
      checkedBelow: [],
      runsOutBelow: [90],
    };
    expect(aboveWords(fit)).toBe(
      'above 100 up to 110 (allocated bound): 3 lengths probed (every 4th), each runs out, 8 not probed (101, 103-105, 107-109, ...)',
    );
  });

  it('lists at most six values below, and words a monotone check', () => {
    const fit = { param: 'batch', value: 300, checkedBelow: [], runsOutBelow: [1, 2, 3, 4, 5, 6, 7] };
    expect(belowWords(fit)).toBe('1, 2, 3, 4, 5 and 2 more below 300 run out');
    expect(belowWords({ param: 'batch', value: 300, checkedBelow: [281, 262], runsOutBelow: [] })).toBe(
      'checked below it down to 262 (2 more probes): each fits',
    );
    expect(fitAnswer({ param: 'seq', value: 0, checkedBelow: [], runsOutBelow: [] })).toBeNull();
  });

  it('keeps to the old words for a result without a bound (world, or stored before)', () => {
    expect(aboveWords({ param: 'world', value: 2, bound: null, checkedBelow: [], runsOutBelow: [] })).toBeNull();
    expect(fitAnswer({ param: 'seq', value: 1728, checkedBelow: [1620], runsOutBelow: [1620] })).toBe(
      'longest that fits: 1728 (probed); 1620 below 1728 runs out',
    );
  });

  it('groups values into inclusive ranges', () => {
    const skip = new Set([3, 6, 7]);
    expect(ranges(0, 9, (x) => !skip.has(x))).toEqual([
      [1, 2],
      [4, 5],
      [8, 9],
    ]);
    expect(ranges(5, 5, () => true)).toEqual([]);
  });
});

describe('the allocated bound', () => {
  /** Measures `peak(v)` against `limit`, counting the values measured. */
  const curve = (peak: (v: number) => number, limit: number) => {
    const seen: number[] = [];
    const measure = async (values: number[]): Promise<BoundPoint[]> => {
      seen.push(...values);
      return values.map((value) => ({ value, allocated: peak(value), limit }));
    };
    const last = (max: number) => {
      let v = 0;
      for (let x = 1; x <= max && peak(x) <= limit; x++) v = x;
      return v;
    };
    return { measure, seen, last };
  };

  it('finds the last value within the limit on a near-line in a few measurements', async () => {
    // ~1.7 MiB a token over 18 GiB, with 2 MiB steps of rounding: a long sequence's peak.
    const peak = (v: number) => 18 * 2 ** 30 + Math.floor((v * 1.7 * 2 ** 20) / 2 ** 21) * 2 ** 21;
    const { measure, seen, last } = curve(peak, 22.8 * 2 ** 30);
    const known = [2048, 3968].map((value) => ({ value, allocated: peak(value), limit: 22.8 * 2 ** 30 }));
    for (const k of [1, 2, 4]) {
      seen.length = 0;
      const b = await allocatedBound(known, 131072, k, measure);
      expect(b.value).toBe(last(131072));
      expect(b.over?.value).toBe(b.value + 1);
      expect(seen.length).toBeLessThanOrEqual(12);
    }
  });

  it('finds it on a convex curve from nothing known, and stops at max', async () => {
    const peak = (v: number) => v * v + 1000 * v;
    const { measure, last } = curve(peak, 5e7);
    expect((await allocatedBound([], 100000, 2, measure)).value).toBe(last(100000));
    const capped = await allocatedBound([], 500, 2, measure);
    expect([capped.value, capped.over]).toEqual([500, null]);
  });

  it('answers 0 when even the smallest value is over the limit', async () => {
    const { measure } = curve((v) => 100 + v, 50);
    const b = await allocatedBound([], 64, 1, measure);
    expect([b.value, b.over?.value]).toEqual([0, 1]);
  });
});
