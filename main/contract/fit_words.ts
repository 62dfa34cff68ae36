// What a fit knows below its answer, in words (the CLI's text and the app's fit answer):
// under a cap "fits" need not be monotone in the value (fragmentation), and bisection alone
// would hide it.
import type { FitResult } from './runs';

const NAMES: Record<string, string> = { seq: 'length', new_tokens: 'generation length', batch: 'batch' };

const list = (xs: number[]): string => (xs.length === 1 ? String(xs[0]) : `${xs.slice(0, -1).join(', ')} and ${xs.at(-1)}`);

/** "fits at N, but not at every length below: M runs out", or what was checked; null when nothing was. */
export function notEveryBelow(fit: Pick<FitResult, 'param' | 'value' | 'checkedBelow' | 'runsOutBelow'>): string | null {
  const checked = fit.checkedBelow ?? [];
  const out = [...(fit.runsOutBelow ?? [])].sort((a, b) => a - b);
  if (!fit.value || !checked.length) return null;
  const name = NAMES[fit.param] ?? fit.param;
  if (out.length) return `fits at ${fit.value}, but not at every ${name} below: ${list(out)} ${out.length === 1 ? 'runs' : 'run'} out`;
  const low = Math.min(...checked);
  return `checked below it down to ${low} (${checked.length} more ${checked.length === 1 ? 'probe' : 'probes'}): each fits`;
}
