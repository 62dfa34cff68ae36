// JSON text of a large value in pieces, never as one string: a run of hundreds of MB
// (millions of samples) would exceed V8's string limit in JSON.stringify, and the
// RangeError took the whole server down. Small subtrees are stringified
// whole; only big arrays (and objects holding one) are walked element by element.
const BIG = 256;

/** Holds an array longer than BIG within a few levels (a reply wraps its record). */
function isBig(v: unknown, depth = 4): boolean {
  if (Array.isArray(v)) return v.length > BIG;
  if (depth > 0 && v && typeof v === 'object') for (const x of Object.values(v)) if (isBig(x, depth - 1)) return true;
  return false;
}

/** The same text JSON.stringify(value) gives, in order, as a sequence of pieces. */
export function* jsonPieces(value: unknown): Generator<string> {
  if (!isBig(value) || (value as { toJSON?: unknown }).toJSON !== undefined) {
    yield JSON.stringify(value) ?? 'null';
    return;
  }
  if (Array.isArray(value)) {
    yield '[';
    for (let i = 0; i < value.length; i++) {
      if (i) yield ',';
      const v = value[i];
      if (v === undefined || typeof v === 'function' || typeof v === 'symbol') yield 'null';
      else yield* jsonPieces(v);
    }
    yield ']';
    return;
  }
  yield '{';
  let first = true;
  for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
    if (v === undefined || typeof v === 'function' || typeof v === 'symbol') continue;
    yield `${first ? '' : ','}${JSON.stringify(k)}:`;
    first = false;
    yield* jsonPieces(v);
  }
  yield '}';
}
