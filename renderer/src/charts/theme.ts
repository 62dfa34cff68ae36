// Colours for canvases, read from the CSS variables so light and dark themes both apply.
import { CATEGORIES, type Category } from '$contract/runs';

export interface ChartColors {
  fg: string;
  muted: string;
  grid: string;
  danger: string;
  accent: string;
  bg: string;
  series: { allocated: string; reserved: string; active: string };
  /** The CUDA context & libraries band: a hue no category or series uses. */
  context: { fill: string; stripe: string; text: string };
  /** Each memory category's colour, by id. */
  category: Readonly<Record<Category, string>>;
  /** Reserved but unallocated (the stacked chart's top band, the segment map's free blocks). */
  cachedFree: string;
  /** category's colours in CATEGORIES' order, then cachedFree: the stacked chart's bands. */
  categories: string[];
}

/** Each memory category's colour, by id (the same on light and dark backgrounds). */
export const CATEGORY_COLORS: Readonly<Record<Category, string>> = {
  parameters: '#6366f1',
  gradients: '#f59e0b',
  optimizer_state: '#10b981',
  activations: '#3b82f6',
  temporaries: '#ef4444',
  inputs: '#8b5cf6',
  workspace: '#64748b',
  other: '#a3a3a3',
  attention: '#ec4899',
  mlp: '#14b8a6',
  norms: '#eab308',
  logits: '#f97316',
  kv_cache: '#0ea5e9',
  activation_gradients: '#b45309',
};

export function chartColors(el: Element = document.documentElement): ChartColors {
  const css = getComputedStyle(el);
  const v = (name: string, fallback: string) => css.getPropertyValue(name).trim() || fallback;
  const dark = v('--bg', '#fff').toLowerCase() !== '#ffffff';
  const cachedFree = dark ? 'rgba(226,232,240,0.35)' : 'rgba(100,116,139,0.45)';
  return {
    fg: v('--fg', '#1b1f24'),
    muted: v('--muted', '#5b6470'),
    grid: v('--border', '#d8dee6'),
    danger: v('--danger', '#b42318'),
    accent: v('--accent', '#6d28d9'),
    bg: v('--bg', '#ffffff'),
    series: dark
      ? { allocated: '#60a5fa', reserved: '#f59e0b', active: '#34d399' }
      : { allocated: '#1d4ed8', reserved: '#b45309', active: '#047857' },
    // Lime: readable on both backgrounds.
    context: dark
      ? { fill: 'rgba(163, 230, 53, 0.16)', stripe: 'rgba(163, 230, 53, 0.5)', text: '#65a30d' }
      : { fill: 'rgba(77, 124, 15, 0.14)', stripe: 'rgba(77, 124, 15, 0.5)', text: '#4d7c0f' },
    category: CATEGORY_COLORS,
    cachedFree,
    categories: [...CATEGORIES.map((c) => CATEGORY_COLORS[c]), cachedFree],
  };
}

/** Calls back when the OS theme or the page's data-theme changes. */
export function onThemeChange(fn: () => void): () => void {
  const mq = matchMedia('(prefers-color-scheme: dark)');
  mq.addEventListener('change', fn);
  const mo = new MutationObserver(fn);
  mo.observe(document.documentElement, { attributes: true, attributeFilter: ['data-theme'] });
  return () => {
    mq.removeEventListener('change', fn);
    mo.disconnect();
  };
}
