// What a fit knows, in words (the CLI's text and the app's fit answer): under a cap "fits"
// need not be monotone in the value (fragmentation), so the answer says what was probed above
// it up to the allocated bound, and what runs out below it.
import type { FitResult } from './runs';

const NAMES: Record<string, [string, string]> = {
  seq: ['length', 'lengths'],
  new_tokens: ['generation length', 'generation lengths'],
  batch: ['batch', 'batches'],
};

/** Values listed in a sentence before "and N more". */
const LISTED = 6;

const list = (xs: number[]): string => {
  const shown = xs.length > LISTED ? [...xs.slice(0, LISTED - 1).map(String), `${xs.length - LISTED + 1} more`] : xs.map(String);
  return shown.length === 1 ? shown[0] : `${shown.slice(0, -1).join(', ')} and ${shown.at(-1)}`;
};

const ordinal = (n: number): string => {
  const tail = n % 100 >= 11 && n % 100 <= 13 ? 'th' : (({ 1: 'st', 2: 'nd', 3: 'rd' } as Record<number, string>)[n % 10] ?? 'th');
  return `${n}${tail}`;
};

type FitWordsInput = Pick<FitResult, 'param' | 'value' | 'checkedBelow' | 'runsOutBelow'> &
  Partial<Pick<FitResult, 'bound' | 'boundExact' | 'unexplored' | 'stride' | 'probes'>>;

/** "longest that fits: N (probed)" (batch: "largest"). */
export function longestWords(fit: Pick<FitResult, 'param' | 'value'>): string {
  return `${fit.param === 'batch' ? 'largest' : 'longest'} that fits: ${fit.value} (probed)`;
}

/** What is known above the answer: "nothing above N fits up to U (allocated bound)", or which
 *  values up to the bound the probe budget left unprobed. Null for world or an older result. */
export function aboveWords(fit: FitWordsInput): string | null {
  if (fit.bound === undefined || fit.bound === null || fit.param === 'world') return null;
  const [one, many] = NAMES[fit.param] ?? [fit.param, fit.param];
  const top = Math.max(fit.bound, fit.value);
  const gaps = fit.unexplored ?? [];
  const missing = gaps.reduce((n, [a, b]) => n + b - a + 1, 0);
  // An estimate when measured on a generic device shifted to the card's peak (fit_allocated.ts).
  const kind = fit.boundExact === false ? 'allocated bound, estimated' : 'allocated bound';
  if (!missing)
    return top > fit.value
      ? `nothing above ${fit.value} fits up to ${top} (${kind})`
      : `nothing above ${fit.value} fits (${kind}: the next allocates more than the limit)`;
  const probed = (fit.probes ?? []).filter((p) => p.value > fit.value && p.value <= top).length;
  const every = fit.stride && fit.stride > 1 ? ` (every ${ordinal(fit.stride)})` : '';
  const shown = gaps.slice(0, 3).map(([a, b]) => (a === b ? String(a) : `${a}-${b}`));
  return (
    `above ${fit.value} up to ${top} (${kind}): ${probed} ${probed === 1 ? one : many} probed${every}, ` +
    `${probed === 1 ? 'it runs' : 'each runs'} out, ${missing} not probed (${shown.join(', ')}${gaps.length > shown.length ? ', ...' : ''})`
  );
}

/** "M below N runs out", or what was checked below; null when nothing was. */
export function belowWords(fit: FitWordsInput): string | null {
  const checked = fit.checkedBelow ?? [];
  const out = [...(fit.runsOutBelow ?? [])].sort((a, b) => a - b);
  if (!fit.value) return null;
  if (out.length) return `${list(out)} below ${fit.value} ${out.length === 1 ? 'runs' : 'run'} out`;
  if (!checked.length) return null;
  const low = Math.min(...checked);
  return `checked below it down to ${low} (${checked.length} more ${checked.length === 1 ? 'probe' : 'probes'}): each fits`;
}

/** The whole answer in one line: longest; above; below (null clauses left out). Null when nothing fits. */
export function fitAnswer(fit: FitWordsInput): string | null {
  if (!fit.value || fit.param === 'world') return null;
  return [longestWords(fit), aboveWords(fit), belowWords(fit)].filter(Boolean).join('; ');
}
