// The live chart's lines as chart.js gets them (renderer/src/lib/decimate.ts): at most four
// samples per pixel bucket, in order, keeping every bucket's extremes (a one-sample spike
// survives), one sample beyond each edge of the range, and always a copy of the run's array.
import { describe, expect, it } from 'vitest';
import { lineDecimated } from '../../renderer/src/lib/decimate';
import type { Point } from '../../renderer/src/lib/series';

const line = (n: number, y: (i: number) => number): Point[] => Array.from({ length: n }, (_, i) => ({ x: i * 0.5, y: y(i) }));

describe('lineDecimated', () => {
  it('keeps each bucket’s first, lowest, highest and last sample, in order, spikes included', () => {
    const pts = line(100_000, (i) => (i === 61_234 ? 9e9 : i === 70_001 ? -5 : 1000 + (i % 7)));
    const out = lineDecimated(pts, 0, pts.at(-1)!.x, 200);
    expect(out.length).toBeLessThanOrEqual(4 * 201);
    expect(out.length).toBeGreaterThan(200);
    for (let i = 1; i < out.length; i++) expect(out[i].x).toBeGreaterThan(out[i - 1].x);
    expect(out.every((p) => pts[p.x * 2] === p)).toBe(true); // the run's own samples, not new ones
    expect(out).toContain(pts[61_234]);
    expect(out).toContain(pts[70_001]);
    expect([out[0], out.at(-1)]).toEqual([pts[0], pts.at(-1)]);
    // Per bucket the extremes match the samples they stand for.
    const width = pts.at(-1)!.x / 200;
    const b = 100;
    const inBucket = pts.filter((p) => Math.floor(p.x / width) === b);
    const kept = out.filter((p) => Math.floor(p.x / width) === b);
    expect(Math.max(...kept.map((p) => p.y))).toBe(Math.max(...inBucket.map((p) => p.y)));
    expect(Math.min(...kept.map((p) => p.y))).toBe(Math.min(...inBucket.map((p) => p.y)));
  });

  it('keeps each bucket in sample order whichever of its low and high comes first', () => {
    // Buckets of 10 samples (x 0..4.5, 5..9.5, ...): a high before a low, a low before a high,
    // the extremes at the bucket's ends, and a flat bucket (one sample stands for all four).
    const ys = [
      [5, 9, 5, 5, 5, 5, 1, 5, 5, 5],
      [5, 1, 5, 5, 5, 5, 9, 5, 5, 5],
      [1, 5, 5, 5, 5, 5, 5, 5, 5, 9],
      [3, 3, 3, 3, 3, 3, 3, 3, 3, 3],
    ].flat();
    const pts = line(ys.length, (i) => ys[i]);
    const out = lineDecimated(pts, 0, 20, 4);
    const at = (...idx: number[]) => idx.map((i) => pts[i]);
    // Each bucket's x range holds 10 samples; a line of 40 at 4 buckets is decimated (40 > 16).
    expect(out).toEqual(at(0, 1, 6, 9, 10, 11, 16, 19, 20, 29, 30, 39));
    for (let i = 1; i < out.length; i++) expect(out[i].x).toBeGreaterThan(out[i - 1].x);
  });

  it('over a zoomed range keeps one sample beyond each edge', () => {
    const pts = line(1000, (i) => i);
    const out = lineDecimated(pts, 100, 200, 500);
    expect(out[0]).toBe(pts[199]);
    expect(out.at(-1)).toBe(pts[401]);
    expect(out).toHaveLength(203);
  });

  it('returns few samples whole, as a copy chart.js may keep', () => {
    const pts = line(50, (i) => i);
    const out = lineDecimated(pts, 0, 24.5, 100);
    expect(out).toEqual(pts);
    expect(out).not.toBe(pts);
    expect(lineDecimated([], 0, 1, 100)).toEqual([]);
  });
});
