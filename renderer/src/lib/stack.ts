// The stacked-by-category view, decimated by us rather than chart.js: chart.js's
// decimation picks different x values per dataset, which breaks stacking, and stacking
// 100k points x 9 categories every frame is too slow. One representative sample per
// pixel bucket (the one with the most reserved memory, so peaks survive), pre-stacked.
import type { Point } from './series';

export interface StackPoint extends Point {
  v: number; // the category's own bytes (y is the running total)
}

/**
 * columns[c][i] = bytes of category c at sample i, whose x is total[i].x (all the same length, x ascending).
 * Returns one array per category of cumulative points over [xMin, xMax], at most
 * 2 x buckets points each, all sharing the same x values.
 */
export function stackDecimated(
  columns: readonly (readonly number[])[],
  total: readonly Point[],
  xMin: number,
  xMax: number,
  buckets: number,
): StackPoint[][] {
  const n = total.length;
  const out: StackPoint[][] = columns.map(() => []);
  if (!n) return out;
  let start = lowerBound(total, xMin);
  if (start > 0) start--; // one point beyond each edge keeps the area continuous when panned
  let end = lowerBound(total, xMax);
  while (end < n && total[end].x <= xMax) end++;
  if (end < n) end++;
  const count = end - start;
  const picks: number[] = [];
  if (count <= buckets * 2) for (let i = start; i < end; i++) picks.push(i);
  else {
    const width = (xMax - xMin) / buckets || 1;
    // No bucket yet: the point kept left of xMin falls in bucket -1, so -1 cannot mean "none".
    let bucket = Number.NEGATIVE_INFINITY;
    let best = -1;
    let first = -1;
    for (let i = start; i < end; i++) {
      const b = Math.floor((total[i].x - xMin) / width);
      if (b !== bucket) {
        if (first >= 0) {
          picks.push(first);
          if (best !== first) picks.push(best);
        }
        bucket = b;
        best = i;
        first = i;
      } else if (total[i].y > total[best].y) best = i;
    }
    if (first >= 0) {
      picks.push(first);
      if (best !== first) picks.push(best);
    }
    picks.sort((a, b) => a - b);
  }
  for (const i of picks) {
    let sum = 0;
    for (let c = 0; c < columns.length; c++) {
      const v = columns[c][i];
      sum += v;
      out[c].push({ x: total[i].x, y: sum, v });
    }
  }
  return out;
}

export function lowerBound(a: readonly Point[], x: number): number {
  let lo = 0;
  let hi = a.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (a[mid].x < x) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
