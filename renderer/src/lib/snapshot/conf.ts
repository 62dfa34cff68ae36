// PYTORCH_CUDA_ALLOC_CONF strings as the what-if form edits them: a preset sets its key,
// keeping the others (items as main/contract/alloc_conf.ts reads them). The host checks the full syntax.
import { allocConfItems, withAllocConfItem, withoutAllocConfKey } from '$contract/alloc_conf';

export const CONF_PRESETS = ['expandable_segments:True', 'max_split_size_mb:256', 'garbage_collection_threshold:0.8'] as const;
export const CAPACITY_PRESETS = ['8GiB', '16GiB', '24GiB', '40GiB', '80GiB'] as const;

/** Top-level key:value items (a roundup_power2_divisions [..] list stays whole). */
export function confItems(conf: string): string[] {
  return allocConfItems(conf).map((x) => `${x.key}:${x.value}`);
}

const keyOf = (item: string) => allocConfItems(item)[0]?.key ?? '';
const valueOf = (item: string) => allocConfItems(item)[0]?.value ?? '';

/** `conf` with `item`'s key set to item's value (added at the end when absent). */
export function withItem(conf: string, item: string): string {
  return withAllocConfItem(conf, keyOf(item), valueOf(item));
}

export function hasItem(conf: string, item: string): boolean {
  return confItems(conf).some((x) => x.replace(/\s+/g, '') === item);
}

/** `conf` without `item`'s key. */
export function withoutKey(conf: string, item: string): string {
  return withoutAllocConfKey(conf, keyOf(item));
}
