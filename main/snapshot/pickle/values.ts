// The JavaScript shapes of the Python values a safe pickle can hold.
//   None -> null, bool -> boolean, int -> number (bigint beyond 2^53), float -> number,
//   str -> string, bytes/bytearray -> Uint8Array, list -> array, tuple -> PyTuple,
//   dict -> Map (keeps Python's key types and insertion order), set/frozenset -> PySet.

export type PickleKey = null | boolean | number | bigint | string | PyTuple;

export type PickleValue = null | boolean | number | bigint | string | Uint8Array | PickleValue[] | PyTuple | PyDict | PySet | PyFloat;

export type PyDict = Map<PickleKey, PickleValue>;

/** A Python tuple: immutable, and distinct from a list so a round trip keeps it a tuple. */
export class PyTuple {
  constructor(readonly items: readonly PickleValue[]) {}
}

/** A Python set or frozenset (never in snapshots; read so such files still parse). */
export class PySet {
  constructor(
    readonly items: PickleValue[],
    readonly frozen: boolean,
  ) {}
}

/**
 * A float whose value is a whole number (e.g. 0.0). The reader returns plain numbers;
 * writers use this to keep Python's int/float distinction where a field is a float.
 */
export class PyFloat {
  constructor(readonly value: number) {}
}

export function isDict(v: unknown): v is PyDict {
  return v instanceof Map;
}

/** An int from a BigInt: a number when it is exactly representable, else the bigint. */
export function normaliseInt(v: bigint): number | bigint {
  return v >= BigInt(Number.MIN_SAFE_INTEGER) && v <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(v) : v;
}

/**
 * A JSON-ready copy (tuples and sets become arrays, dicts objects, bigints decimal strings,
 * bytes {"bytes": hex}): for display, debugging and comparing with Python's own view.
 */
export function toPlain(v: PickleValue): unknown {
  if (v === null || typeof v === 'boolean' || typeof v === 'number' || typeof v === 'string') return v;
  if (typeof v === 'bigint') return v.toString();
  if (v instanceof PyFloat) return v.value;
  if (v instanceof Uint8Array) return { bytes: Buffer.from(v).toString('hex') };
  if (Array.isArray(v)) return v.map(toPlain);
  if (v instanceof PyTuple) return v.items.map(toPlain);
  if (v instanceof PySet) return v.items.map(toPlain);
  const out: Record<string, unknown> = Object.create(null);
  for (const [k, val] of v) out[keyString(k)] = toPlain(val);
  return out;
}

function keyString(k: PickleKey): string {
  if (k instanceof PyTuple) return JSON.stringify(toPlain(k));
  return String(k);
}
