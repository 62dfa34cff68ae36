// The stacked view's own decimation and the byte-sized axis ticks.
import { describe, expect, it } from 'vitest';
import { stackDecimated } from '../../renderer/src/lib/stack';
import { byteTicks } from '../../renderer/src/charts/ticks';

describe('stackDecimated', () => {
  const n = 100_000;
  const a = Array.from({ length: n }, () => 10);
  const b = Array.from({ length: n }, (_, i) => (i === 54_321 ? 1000 : 5));
  const total = a.map((y, i) => ({ x: i, y: y + b[i] }));

  it('keeps at most two points per bucket, shared x values, cumulative y', () => {
    const [sa, sb] = stackDecimated([a, b], total, 0, n - 1, 500);
    expect(sa.length).toBeLessThanOrEqual(1000);
    expect(sa.map((p) => p.x)).toEqual(sb.map((p) => p.x));
    expect(sb.every((p, i) => p.y === sa[i].y + p.v)).toBe(true);
  });

  it('keeps the peak sample', () => {
    const [, sb] = stackDecimated([a, b], total, 0, n - 1, 500);
    expect(sb.some((p) => p.x === 54_321 && p.v === 1000)).toBe(true);
  });

  it('returns every point of a zoomed-in range', () => {
    const [sa] = stackDecimated([a, b], total, 1000, 1100, 500);
    expect(sa[0].x).toBe(999);
    expect(sa[sa.length - 1].x).toBe(1101);
  });

  it('decimates a zoomed range denser than its buckets, keeping the point left of it and the peak', () => {
    // Samples at fractional times: the one kept left of the window falls in bucket -1.
    const [sa, sb] = stackDecimated([a, b], total, 50_000.5, 60_000.5, 500);
    expect(sa[0].x).toBe(50_000);
    expect(sa.length).toBeLessThanOrEqual(1004);
    expect(sb.some((p) => p.x === 54_321 && p.v === 1000)).toBe(true);
    expect(sa.every((p, i) => i === 0 || p.x > sa[i - 1].x)).toBe(true);
  });
});

describe('byteTicks', () => {
  it('steps in round binary sizes', () => {
    const MiB = 2 ** 20;
    expect(byteTicks(130 * MiB).map((t) => t.value / MiB)).toEqual([0, 25, 50, 75, 100, 125]);
    expect(byteTicks(3 * 2 ** 30).map((t) => t.value / 2 ** 30)).toEqual([0, 0.5, 1, 1.5, 2, 2.5, 3]);
  });
});
