// The live chart's lines, decimated by us before chart.js sees them: chart.js listens to
// pushes on the arrays it draws (work per sample even between redraws) and lays out an
// element per point it is given. Each line gets a fresh array of at most 4 points per pixel
// bucket (the first, lowest, highest and last of the bucket, in order), so what is drawn is
// what every sample draws at that width, and peaks survive.
import type { Point } from './series';
import { lowerBound } from './stack';

/** The points of `line` over [xMin, xMax] (one beyond each edge), decimated to `buckets`. */
export function lineDecimated(line: readonly Point[], xMin: number, xMax: number, buckets: number): Point[] {
  const n = line.length;
  if (!n) return [];
  let start = lowerBound(line, xMin);
  if (start > 0) start--; // one point beyond each edge keeps the line continuous when panned
  let end = lowerBound(line, xMax);
  while (end < n && line[end].x <= xMax) end++;
  if (end < n) end++;
  if (end - start <= buckets * 4) return line.slice(start, end);
  const out: Point[] = [];
  const width = (xMax - xMin) / buckets || 1;
  let bucket = Number.NEGATIVE_INFINITY;
  let first = -1;
  let lo = -1;
  let hi = -1;
  let last = -1;
  const flush = () => {
    if (first < 0) return;
    // In sample order, each once: first <= lo, hi <= last, so only lo and hi may swap (no
    // array and sort per bucket: a redraw has thousands of buckets).
    const a = lo < hi ? lo : hi;
    const b = lo < hi ? hi : lo;
    out.push(line[first]);
    if (a !== first) out.push(line[a]);
    if (b !== a) out.push(line[b]);
    if (last !== b) out.push(line[last]);
  };
  for (let i = start; i < end; i++) {
    const b = Math.floor((line[i].x - xMin) / width);
    if (b !== bucket) {
      flush();
      bucket = b;
      first = lo = hi = last = i;
    } else {
      const y = line[i].y;
      if (y < line[lo].y) lo = i;
      if (y > line[hi].y) hi = i;
      last = i;
    }
  }
  flush();
  return out;
}
