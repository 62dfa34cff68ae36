// PYTORCH_CUDA_ALLOC_CONF, read once for TypeScript: the same tokens, key table, values,
// limits and messages as the engine's parser (native/allocator/settings.cpp, itself c10's
// AllocatorConfig/ConfigTokenizer), so a string the spec accepts is one the engine accepts.
// Editing helpers (set or drop one key) go through the same tokens, so a
// `roundup_power2_divisions:[256:1,>:4]` list stays one value.
import { ALLOCATOR_CONSTANTS as C } from './allocator';

const MB = 1048576;

/** What a PYTORCH_CUDA_ALLOC_CONF string sets (sizes in bytes; null: unlimited / not set). */
/** Messages quote the string and its tokens clipped, as the engine's do (a 100 MB string
 *  still gives a short message). */
const ECHO_CHARS = 80;
const clip = (t: string): string => (t.length <= ECHO_CHARS ? t : `${t.slice(0, ECHO_CHARS)}... (${t.length} characters)`);

export interface AllocConf {
  maxSplitSize: number | null;
  maxNonSplitRoundingSize: number;
  largeSegmentSize: number;
  garbageCollectionThreshold: number;
  expandableSegments: boolean;
  /** Divisions per power-of-two interval from 1 MiB (index 0 covers < 2 MiB). */
  roundupPower2Divisions: number[];
  perProcessMemoryFraction: number | null;
}

export class AllocConfError extends Error {
  override name = 'AllocConfError';
}

/** "key:val,key:[a:b,>:c]" as keys, values and the four punctuation tokens, white space dropped. */
function tokenize(conf: string): string[] {
  const out: string[] = [];
  let buf = '';
  for (const ch of conf) {
    if (ch === ',' || ch === ':' || ch === '[' || ch === ']') {
      if (buf) out.push(buf);
      buf = '';
      out.push(ch);
    } else if (!/\s/.test(ch)) buf += ch;
  }
  if (buf) out.push(buf);
  return out;
}

class Tokens {
  readonly tok: string[];
  constructor(readonly conf: string) {
    this.tok = tokenize(conf);
  }
  fail(key: string, what: string): never {
    throw new AllocConfError(`Invalid allocator setting '${clip(key)}' in "${clip(this.conf)}": ${what}`);
  }
  at(i: number, key: string): string {
    if (i >= this.tok.length) this.fail(key, `expected a value after '${clip(key)}'`);
    return this.tok[i];
  }
  expect(i: number, t: string, key: string): void {
    if (i >= this.tok.length || this.tok[i] !== t)
      this.fail(key, `expected '${t}'` + (i < this.tok.length ? ` but found '${clip(this.tok[i])}'` : ' but the string ended'));
  }
  size(i: number, key: string): number {
    const s = this.at(i, key);
    if (!/^[0-9]+$/.test(s)) this.fail(key, `expected a non-negative integer but found '${clip(s)}'`);
    if (BigInt(s) > 2n ** 64n - 1n) this.fail(key, `value '${clip(s)}' is out of range`);
    return Number(s);
  }
  number(i: number, key: string): number {
    const s = this.at(i, key);
    // strtod: a whole decimal or hexadecimal number, inf or nan.
    const ok = /^[+-]?((\d+\.?\d*|\.\d+)(e[+-]?\d+)?|inf(inity)?|nan)$/i.test(s);
    if (!ok) this.fail(key, `expected a number but found '${clip(s)}'`);
    return /^[+-]?nan$/i.test(s) ? NaN : /inf/i.test(s) ? (s.startsWith('-') ? -Infinity : Infinity) : Number(s);
  }
  bool(i: number, key: string): boolean {
    const s = this.at(i, key);
    if (s === 'True') return true;
    if (s === 'False') return false;
    return this.fail(key, `expected 'True' or 'False' but found '${clip(s)}'`);
  }
}

const isPow2 = (v: number) => v !== 0 && 2 ** Math.floor(Math.log2(v)) === v;
const bytes = (mb: number) => Math.min(mb * MB, Number.MAX_SAFE_INTEGER);

/** Reads one key's value starting at token i (the key); returns the index of its last token. */
type KeyReader = (t: Tokens, i: number, s: AllocConf, key: string) => number;

const splitSize: KeyReader = (t, i, s, key) => {
  t.expect(++i, ':', key);
  const mb = t.size(++i, key);
  const min = s.largeSegmentSize / MB;
  if (mb < min) t.fail(key, `too small, must be >= ${min} (got ${mb})`);
  if (key === 'max_split_size_mb') s.maxSplitSize = bytes(mb);
  else s.maxNonSplitRoundingSize = bytes(mb);
  return i;
};

const compatBool: KeyReader = (t, i, _s, key) => {
  // Accepted for compatibility; they do not change placement decisions.
  t.expect(++i, ':', key);
  t.bool(++i, key);
  return i;
};

/** Every key PyTorch 2.11 accepts and how its value is read (c10's key table). */
export const ALLOC_CONF_KEYS: Record<string, KeyReader> = {
  // Read in a first pass (it bounds the two split sizes); skipped here.
  large_segment_size_mb: (t, i, _s, key) => {
    t.expect(++i, ':', key);
    t.at(++i, key);
    return i;
  },
  max_split_size_mb: splitSize,
  max_non_split_rounding_mb: splitSize,
  garbage_collection_threshold: (t, i, s, key) => {
    t.expect(++i, ':', key);
    const v = t.number(++i, key);
    if (!(v > 0 && v < 1)) t.fail(key, `must be in (0.0, 1.0), got ${clip(t.tok[i])}`);
    s.garbageCollectionThreshold = v;
    return i;
  },
  roundup_power2_divisions: (t, i, s, key) => readRoundup(t, i, s, key),
  expandable_segments: (t, i, s, key) => {
    t.expect(++i, ':', key);
    s.expandableSegments = t.bool(++i, key);
    return i;
  },
  per_process_memory_fraction: (t, i, s, key) => {
    t.expect(++i, ':', key);
    const v = t.number(++i, key);
    if (!(v >= 0 && v <= 1)) t.fail(key, `must be within [0, 1], got ${clip(t.tok[i])}`);
    s.perProcessMemoryFraction = v;
    return i;
  },
  backend: (t, i, _s, key) => {
    t.expect(++i, ':', key);
    const v = t.at(++i, key);
    if (v === 'cudaMallocAsync') t.fail(key, "backend:cudaMallocAsync is not modelled; only 'native' is supported");
    if (v !== 'native') t.fail(key, `unknown allocator backend '${clip(v)}', options are native and cudaMallocAsync`);
    return i;
  },
  release_lock_on_cudamalloc: compatBool,
  pinned_use_cuda_host_register: compatBool,
  pinned_use_background_threads: compatBool,
  graph_capture_record_stream_reuse: compatBool,
  pinned_num_register_threads: (t, i, _s, key) => {
    t.expect(++i, ':', key);
    if (!isPow2(t.size(++i, key))) t.fail(key, 'has to be a power of 2');
    return i;
  },
};

function readRoundup(t: Tokens, i: number, s: AllocConf, key: string): number {
  t.expect(++i, ':', key);
  const div = s.roundupPower2Divisions;
  if (t.at(++i, key) !== '[') {
    const value = t.size(i, key);
    if (!isPow2(value)) t.fail(key, `the divisions have to be a power of 2, got ${value}`);
    div.fill(value);
    return i;
  }
  let first = true;
  let last = 0;
  while (++i < t.tok.length && t.tok[i] !== ']') {
    const boundaryAt = i;
    t.expect(++i, ':', key);
    const value = t.size(++i, key);
    if (value !== 0 && !isPow2(value)) t.fail(key, `the divisions have to be a power of 2 or 0 to disable roundup, got ${value}`);
    if (t.tok[boundaryAt] === '>') {
      div.fill(value, Math.min(last + 1, div.length));
    } else {
      const boundary = t.size(boundaryAt, key);
      if (!isPow2(boundary)) t.fail(key, `the intervals have to be powers of 2 (in MiB), got ${boundary}`);
      const index = Math.min(Math.floor(Math.log2(boundary)), div.length - 1);
      if (first) {
        div.fill(value, 0, index);
        first = false;
      }
      div[index] = value;
      last = index;
    }
    if (i + 1 < t.tok.length && t.tok[i + 1] !== ']') t.expect(++i, ',', key);
  }
  if (i >= t.tok.length) t.fail(key, "expected a closing ']'");
  return i;
}

/** The settings a string sets, or an AllocConfError naming the key, as the engine would refuse it. */
export function parseAllocConf(conf: string): AllocConf {
  const s: AllocConf = {
    maxSplitSize: null,
    maxNonSplitRoundingSize: C.largeBuffer,
    largeSegmentSize: C.largeBuffer,
    garbageCollectionThreshold: 0,
    expandableSegments: false,
    roundupPower2Divisions: new Array<number>(C.roundupIntervals).fill(0),
    perProcessMemoryFraction: null,
  };
  const t = new Tokens(conf);
  // large_segment_size_mb first: it bounds max_split_size_mb and max_non_split_rounding_mb.
  for (let i = 0; i < t.tok.length; i++) {
    if (t.tok[i] !== 'large_segment_size_mb') continue;
    const key = t.tok[i];
    t.expect(++i, ':', key);
    const mb = t.size(++i, key);
    if (mb <= C.minLargeAlloc / MB) t.fail(key, `must be > ${C.minLargeAlloc / MB} MB`);
    s.largeSegmentSize = bytes(mb);
  }
  s.maxNonSplitRoundingSize = s.largeSegmentSize;
  for (let i = 0; i < t.tok.length; i++) {
    const key = t.tok[i];
    const read = Object.hasOwn(ALLOC_CONF_KEYS, key) ? ALLOC_CONF_KEYS[key] : undefined;
    if (!read) throw new AllocConfError(`Unrecognized key '${clip(key)}' in allocator settings "${clip(conf)}"`);
    i = read(t, i, s, key);
    if (i + 1 < t.tok.length) t.expect(++i, ',', key);
  }
  return s;
}

/** The top-level `key:value` items of a string, each value as written (a [..] list whole). */
export function allocConfItems(conf: string): { key: string; value: string }[] {
  const out: { key: string; value: string }[] = [];
  let depth = 0;
  let cur = '';
  const push = () => {
    const item = cur.trim();
    cur = '';
    if (!item) return;
    const colon = item.indexOf(':');
    out.push(colon < 0 ? { key: item, value: '' } : { key: item.slice(0, colon).trim(), value: item.slice(colon + 1).trim() });
  };
  for (const ch of conf) {
    if (ch === '[') depth++;
    else if (ch === ']') depth--;
    if (ch === ',' && depth === 0) push();
    else cur += ch;
  }
  push();
  return out;
}

/** `conf` with `key` set to `value` (replaced where it was given, else added at the end). */
export function withAllocConfItem(conf: string, key: string, value: string): string {
  const items = allocConfItems(conf);
  const at = items.findIndex((x) => x.key === key);
  if (at >= 0) items[at] = { key, value };
  else items.push({ key, value });
  return items.map((x) => `${x.key}:${x.value}`).join(',');
}

/** `conf` without `key`. */
export function withoutAllocConfKey(conf: string, key: string): string {
  return allocConfItems(conf)
    .filter((x) => x.key !== key)
    .map((x) => `${x.key}:${x.value}`)
    .join(',');
}
