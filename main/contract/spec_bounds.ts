// How large a spec document may be before its fields are read. The schema walks every key
// and item it is given, and its messages list what it found: 8M unknown keys took 90 s and
// 2.6 GB to refuse. No valid spec comes near these bounds (its widest object has 22 keys,
// its longest list LIMITS.shapes items, it nests 5 deep), so a document past them is refused
// here, in one bounded walk, with a short message.
import { LIMITS } from './catalogue/limits';
import { clipList, quote } from './echo';

/** Keys one object may have before the schema looks at it (unknown ones are listed then). */
export const MAX_OBJECT_KEYS = 256;
/** Items one list may have before the schema looks at it; the schema's own limit is LIMITS.shapes. */
export const MAX_LIST_ITEMS = 4 * LIMITS.shapes;
export const MAX_DEPTH = 32;
/** Values (objects, lists, scalars) in the whole document. */
export const MAX_VALUES = 1 << 17;

export interface SizeProblem {
  path: (string | number)[];
  message: string;
}

/** Why `input` is too large to validate, or null. Iterative: a deeply nested input cannot overflow the stack. */
export function specSizeProblem(input: unknown): SizeProblem | null {
  const stack: { v: unknown; path: (string | number)[] }[] = [{ v: input, path: [] }];
  let values = 0;
  while (stack.length) {
    const { v, path } = stack.pop()!;
    if (++values > MAX_VALUES) return { path: [], message: `holds more than ${MAX_VALUES} values; a spec holds a few thousand at most` };
    if (v === null || typeof v !== 'object') continue;
    if (path.length >= MAX_DEPTH) return { path, message: `nests more than ${MAX_DEPTH} levels deep` };
    if (ArrayBuffer.isView(v) || v instanceof ArrayBuffer) return { path, message: 'is binary data, not JSON' };
    if (Array.isArray(v)) {
      if (v.length > MAX_LIST_ITEMS)
        return { path, message: `lists ${v.length} items; no list in a spec may hold more than ${LIMITS.shapes}` };
      for (let i = v.length - 1; i >= 0; i--) stack.push({ v: v[i], path: [...path, i] });
      continue;
    }
    const keys: string[] = [];
    let count = 0;
    for (const k in v) {
      if (!Object.prototype.hasOwnProperty.call(v, k)) continue;
      if (++count <= MAX_OBJECT_KEYS) keys.push(k);
    }
    if (count > MAX_OBJECT_KEYS) {
      const names = keys.slice(0, 8).map((k) => quote(k, 40));
      return {
        path,
        message: `has ${count} keys, more than the ${MAX_OBJECT_KEYS} any spec object may have: ${clipList(names, 8, count)}`,
      };
    }
    for (let i = keys.length - 1; i >= 0; i--) stack.push({ v: (v as Record<string, unknown>)[keys[i]], path: [...path, keys[i]] });
  }
  return null;
}
