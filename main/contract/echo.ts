// Quoting what a user gave inside an error message, in bounded time and size. A message
// that echoed its input whole turned a 100 MB alloc_conf into 200 MB on stderr and 8M
// unknown keys into 95 MB of names; these helpers look at no more than they print.

/** Characters of one quoted string an error message keeps. */
export const ECHO_CHARS = 80;
/** Names of a list (unknown keys, ...) an error message keeps. */
export const ECHO_ITEMS = 8;

/** `s` cut to `max` characters, saying how long it was when cut. */
export function clipText(s: string, max = ECHO_CHARS): string {
  return s.length <= max ? s : `${s.slice(0, max)}... (${s.length} characters)`;
}

/** A string quoted as JSON, cut first: "abc..." (1000000 characters). */
export function quote(s: string, max = ECHO_CHARS): string {
  return s.length <= max ? JSON.stringify(s) : `${JSON.stringify(s.slice(0, max))}... (${s.length} characters)`;
}

/** The first `max` items joined by ", ", then "and N more" (of `total`, when only some were collected). */
export function clipList(items: readonly string[], max = ECHO_ITEMS, total = items.length): string {
  const shown = items.slice(0, max).join(', ');
  return total <= max ? shown : `${shown} and ${total - Math.min(max, items.length)} more`;
}

/**
 * A JSON-like preview of any value, at most about `max` characters, reading only what it
 * shows: long strings, arrays and objects end in "..." with their size.
 */
export function preview(value: unknown, max = ECHO_CHARS): string {
  const out: string[] = [];
  let left = max;
  const put = (s: string) => {
    out.push(s);
    left -= s.length;
  };
  const walk = (v: unknown, depth: number): void => {
    if (typeof v === 'string') return put(quote(v, Math.max(8, left)));
    // Numbers as JavaScript writes them: NaN and Infinity, which JSON would print as null.
    if (typeof v === 'number' || typeof v === 'bigint') return put(typeof v === 'bigint' ? `${v}n` : String(v));
    if (v === null || typeof v !== 'object') return put(String(JSON.stringify(v) ?? v));
    if (depth > 4) return put(Array.isArray(v) ? '[...]' : '{...}');
    if (Array.isArray(v)) {
      put('[');
      let i = 0;
      for (; i < v.length && left > 0; i++) {
        if (i) put(', ');
        walk(v[i], depth + 1);
      }
      return put(i < v.length ? `, ... (${v.length} items)]` : ']');
    }
    put('{');
    let i = 0;
    // Only the keys shown are quoted, however many there are.
    for (const k in v) {
      if (!Object.prototype.hasOwnProperty.call(v, k)) continue;
      if (left <= 0) {
        put(', ...');
        break;
      }
      if (i++) put(', ');
      put(`${quote(k, 24)}: `);
      walk((v as Record<string, unknown>)[k], depth + 1);
    }
    return put('}');
  };
  walk(value, 0);
  return out.join('');
}
