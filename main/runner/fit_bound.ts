// fit's monotone bound. Under a cap "fits" is not monotone in the value (fragmentation moves
// the reserved bytes), but the bytes a run allocates at its peak grow with the batch, the
// length or the generation, whatever the card: a value whose allocated peak is over what the
// allocator may reserve can never fit. So the largest value within that limit bounds every
// answer, and a bracket on the allocated peak (valid because it is monotone) finds it.
// The peak is nearly linear in the value: each round probes where the line through the
// bracket's ends crosses the limit and the value after it (often closing the bracket at
// once), and halves the bracket instead when interpolation stopped narrowing it.

/** One value's allocated peak (an unbounded run, or a probe that fit: the same allocations)
 *  against what the allocator may reserve for it (the cap, or the card less its context and NCCL). */
export interface BoundPoint {
  value: number;
  allocated: number;
  limit: number;
}

export interface AllocatedBound {
  /** The largest value (at most max) whose allocated peak is within the limit; 0 if none. */
  value: number;
  /** The value after it, over the limit; null when max itself is within. */
  over: BoundPoint | null;
  /** The values measured for the bound (not those given as known). */
  measured: BoundPoint[];
}

const within = (p: BoundPoint) => p.allocated <= p.limit;

/**
 * The largest value in [1, max] whose allocated peak is within its limit. `known` holds
 * points already measured (probes that fit); `measure` runs the values given (at most k)
 * and returns their points.
 */
export async function allocatedBound(
  known: readonly BoundPoint[],
  max: number,
  k: number,
  measure: (values: number[]) => Promise<BoundPoint[]>,
): Promise<AllocatedBound> {
  const points = new Map<number, BoundPoint>(known.map((p) => [p.value, p]));
  const measured: BoundPoint[] = [];
  let lastWidth = Infinity;
  for (;;) {
    const all = [...points.values()].sort((a, b) => a.value - b.value);
    const low = all.filter(within).at(-1) ?? { value: 0, allocated: 0, limit: 0 };
    const high = all.find((p) => p.value > low.value && !within(p)) ?? null;
    if (low.value >= max) return { value: max, over: null, measured };
    if (high && high.value === low.value + 1) return { value: low.value, over: high, measured };
    const top = high ? high.value - 1 : max;
    const width = top - low.value;
    let guess: number;
    if (high && width * 2 <= lastWidth) {
      // Where the line through the bracket's ends crosses the limit (the limit may differ per
      // point by NCCL's buffers: interpolate the excess over it).
      const f0 = low.allocated - low.limit;
      const f1 = high.allocated - high.limit;
      guess = Math.floor(low.value + ((0 - f0) * (high.value - low.value)) / (f1 - f0));
    } else if (high) {
      guess = Math.floor((low.value + high.value) / 2);
    } else {
      // No value over the limit yet: extrapolate the line from the lowest value within to the
      // highest (a wide base: neighbouring values differ by a few bytes of rounding), else double.
      const first = all.find((p) => within(p) && p.value < low.value);
      const slope = first ? (low.allocated - low.limit - (first.allocated - first.limit)) / (low.value - first.value) : 0;
      guess = slope > 0 ? Math.floor(low.value + (low.limit - low.allocated) / slope) : low.value * 2;
    }
    lastWidth = width;
    guess = Math.min(Math.max(guess, low.value + 1), top);
    const values = [guess];
    // The value after the guess closes the bracket when the guess is the last within.
    if (k > 1 && guess + 1 <= (high ? high.value - 1 : max)) values.push(guess + 1);
    // More probes at once: the rest spread over a closed bracket (never far past the line:
    // a run at a huge value costs in proportion).
    for (let i = 1; high && values.length < k && i < k; i++) {
      const v = low.value + Math.floor((i * (top - low.value)) / k);
      if (v > low.value && !values.includes(v)) values.push(v);
    }
    const fresh = values.filter((v) => !points.has(v) && v >= 1 && v <= max);
    if (!fresh.length) throw new Error(`fit: the allocated bound found nothing new to measure between ${low.value} and ${top}`);
    for (const p of await measure(fresh)) {
      points.set(p.value, p);
      measured.push(p);
    }
  }
}
