// Y-axis ticks on round binary sizes (1, 2, 5 x KiB/MiB/GiB), so labels read "64 MiB"
// rather than "61.04 MiB".
export function byteTicks(max: number, target = 6): { value: number }[] {
  if (!(max > 0)) return [{ value: 0 }];
  const unit = 1024 ** Math.max(0, Math.floor(Math.log(max) / Math.log(1024)));
  const raw = max / unit / target;
  const mag = 10 ** Math.floor(Math.log10(raw));
  let step = ([1, 2, 2.5, 5, 10].map((m) => m * mag).find((s) => s >= raw) ?? 10 * mag) * unit;
  step = Math.max(1, step); // never fractions of a byte
  const ticks: { value: number }[] = [];
  for (let v = 0; v <= max + step * 1e-9; v += step) ticks.push({ value: v });
  return ticks;
}

/** Rounds an axis maximum up to the next tick, so the top of the data is never cut off. */
export function niceMax(max: number, target = 6): number {
  const ticks = byteTicks(max, target);
  if (ticks.length < 2) return max;
  const step = ticks[1].value - ticks[0].value;
  return Math.ceil(max / step - 1e-9) * step;
}
