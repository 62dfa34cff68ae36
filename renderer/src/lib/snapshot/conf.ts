// PYTORCH_CUDA_ALLOC_CONF strings as the what-if form edits them: a preset sets its key,
// keeping the others. The host checks the full syntax.

export const CONF_PRESETS = ['expandable_segments:True', 'max_split_size_mb:256', 'garbage_collection_threshold:0.8'] as const;
export const CAPACITY_PRESETS = ['8GiB', '16GiB', '24GiB', '40GiB', '80GiB'] as const;

/** Top-level key:value items (a roundup_power2_divisions [..] list stays whole). */
export function confItems(conf: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let cur = '';
  for (const ch of conf) {
    if (ch === '[') depth++;
    if (ch === ']') depth--;
    if (ch === ',' && depth === 0) {
      if (cur.trim()) out.push(cur.trim());
      cur = '';
    } else cur += ch;
  }
  if (cur.trim()) out.push(cur.trim());
  return out;
}

const keyOf = (item: string) => item.split(':')[0].trim();

/** `conf` with `item`'s key set to item's value (added at the end when absent). */
export function withItem(conf: string, item: string): string {
  const items = confItems(conf);
  const k = keyOf(item);
  const i = items.findIndex((x) => keyOf(x) === k);
  if (i >= 0) items[i] = item;
  else items.push(item);
  return items.join(',');
}

export function hasItem(conf: string, item: string): boolean {
  return confItems(conf).some((x) => x.replace(/\s+/g, '') === item);
}

/** `conf` without `item`'s key. */
export function withoutKey(conf: string, item: string): string {
  const k = keyOf(item);
  return confItems(conf)
    .filter((x) => keyOf(x) !== k)
    .join(',');
}
