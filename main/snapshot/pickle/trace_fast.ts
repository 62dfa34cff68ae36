// The reader's fast path for the one shape that makes up nearly all of a large snapshot: a
// trace event dict as PyTorch's pickler writes it, inside a list the hooks consume as a
// trace (ReadHooks.traceSink). The event is decoded from the bytes straight into the sink
// (typed arrays): no dict, no frames list, no memo entry that is dropped again. A stack list
// is recognised by its bytes: its end found by walking only its opcodes, then one native
// compare with a list seen before (PyTorch writes the same stack again for each allocation
// and its free_requested), so the ~70 frame references an allocation carries are not read
// one by one; a list seen first is read by its frames' memo indices.
//
// It changes nothing the reader would decide: anything but the expected shape, or any
// limit the general path could reach on this event, and it takes nothing (returns 0) and
// the general path executes the same bytes, with its own checks and errors. What the
// general path would leave behind is left behind: the memo count, memo entries for
// values a later opcode may reference (strings, a stand-in for the consumed stack list),
// the containers counted, the heap charged for what stays.
import type { Memo } from './memo';
import { Op } from './opcodes';
import type { ByteSource } from './source';
import type { PickleValue } from './values';

/** A stack as the sink knows it, and what the memo keeps for a stack list it consumed. */
export interface TraceStack {
  readonly stand: PickleValue;
}

export interface TraceSink {
  /** The action's code (>= 0), or -1 for one the general path must judge. */
  actionCode(action: string): number;
  /** The stack these frame dicts spell (null: no frames), or undefined if they are not frame dicts. */
  stack(frames: readonly PickleValue[] | null): TraceStack | undefined;
  /** The stack a value already in the memo stands for (a consumed list's stand-in), or undefined. */
  stackOfValue(v: PickleValue): TraceStack | undefined;
  push(
    code: number,
    hi: number,
    lo: number,
    size: number,
    time: number,
    stream: number,
    stack: TraceStack,
    compileContext: string | undefined,
    userMetadata: string | undefined,
  ): void;
}

/** The reader's state the fast path reads and advances (Reader implements it). */
export interface FastState {
  readonly src: ByteSource;
  readonly memo: Memo;
  memoCount: number;
  /** 1 + the highest memo index ever stored: no entry exists at or above it. */
  memoHigh: number;
  /** Bumped whenever an existing memo entry changes or goes: caches of what indices hold are then stale. */
  readonly memoEpoch: number;
  readonly shared: Set<object>;
  readonly stack: PickleValue[];
  containers: number;
  heapBytes: number;
  readonly frameEnd: number;
  readonly limits: { maxMemo: number; maxContainers: number; maxStack: number; maxHeapBytes: number };
}

export interface FastCosts {
  dict: number;
  dictEntry: number;
  list: number;
  element: number;
  string: number;
  heapNumber: number;
  memoEntry: number;
}

const K_ACTION = 1;
const K_ADDR = 2;
const K_SIZE = 4;
const K_STREAM = 8;
const K_TIME = 16;
const K_FRAMES = 32;
const K_CC = 64;
const K_UM = 128;
const KEYS: Record<string, number> = {
  action: K_ACTION,
  addr: K_ADDR,
  size: K_SIZE,
  stream: K_STREAM,
  time_us: K_TIME,
  frames: K_FRAMES,
  compile_context: K_CC,
  user_metadata: K_UM,
};
const TWO32 = 2 ** 32;
// Little-endian words read inline: Buffer's readUInt32LE/readInt32LE check their offset on
// every call, and these run several times an event (the caller has checked the bounds).
const u32At = (b: Buffer, i: number): number => (b[i] | (b[i + 1] << 8) | (b[i + 2] << 16)) + b[i + 3] * 0x1000000;
const i32At = (b: Buffer, i: number): number => b[i] | (b[i + 1] << 8) | (b[i + 2] << 16) | (b[i + 3] << 24);
const growU32 = (a: Uint32Array): Uint32Array => {
  // (the stack list of a deep recursion can run to thousands of frames)
  const b = new Uint32Array(a.length * 2);
  b.set(a);
  return b;
};
/** Stack lists remembered by their bytes; past this many distinct ones the cache starts again. */
const MAX_STACKS = 50_000;
/** Memo indices below this are cached in arrays rather than maps. */
const LOW = 1024;
/** The bytes of a stack list read before, and its stack. */
interface ByteStack {
  bytes: Buffer;
  ref: TraceStack;
}
/** Bytes of input the reader keeps in the window ahead of an event (a longer one goes the general way). */
export const LOOKAHEAD = 1 << 16;

export class TraceFastPath {
  // What memo indices hold, valid while the memo epoch is unchanged.
  private epoch = -1;
  private keyAt = new Map<number, number>();
  private strAt = new Map<number, string>();
  /** The same for the low indices where the keys and actions live (0 / undefined: not known). */
  private keyLow = new Uint8Array(LOW);
  private strLow: Array<string | undefined> = new Array<string | undefined>(LOW).fill(undefined);
  /** Stack lists by a hash of their frames' memo indices (the indices kept to compare). */
  private stacks = new Map<number, { idxs: Uint32Array; ref: TraceStack }>();
  /** Stack lists remembered by their bytes (bytesKey). */
  private byBytes = new Map<number, ByteStack>();
  private nByBytes = 0;
  /** One JS string per distinct short text read inline ('N/A' on every PyTorch event). */
  private texts = new Map<string, string>();
  private lastText = '';

  // The event being decoded.
  private p = 0;
  private lim = 0;
  private ops = 0;
  private memoNext = 0;
  private hi = 0;
  private lo = 0;
  private num = 0;
  private text = '';
  private textNew = false;
  /** Memo puts of this event: index and value kind (0 the dict, 1 a text, 2 the stack list);
   * at most four (dict, two texts, list). Fixed arrays: emptying an array per event freed
   * and reallocated its store every time. */
  private putIdx = new Float64Array(4);
  private putKind = new Uint8Array(4);
  private putTexts: string[] = ['', '', '', ''];
  private nPuts = 0;
  private newTextBytes = 0;
  private listStart = -1;
  private listEnd = -1;
  private listItems = 0;
  private listHash = 0;
  /** Opcodes the list's items stood for, and its largest group (skipList). */
  private listOps = 0;
  private skipGroup = 0;
  /** The memo indices of the stack list being read. */
  private idxs: Uint32Array = new Uint32Array(256);
  private maxGroup = 0;
  private listMemo = -1;
  private stackRef: TraceStack | null = null;
  private missDicts: PickleValue[] | null = null;

  constructor(
    private readonly r: FastState,
    private readonly costs: FastCosts,
  ) {}

  /**
   * Decodes the event dict at the read position into `sink` (from the bytes in the window:
   * the reader makes LOOKAHEAD of them available first). Returns the opcodes it stood for
   * (> 0), or 0 when it took nothing. Throws only what the sink throws.
   */
  tryEvent(sink: TraceSink): number {
    const r = this.r;
    const src = r.src;
    if (r.memoEpoch !== this.epoch) {
      this.keyAt.clear();
      this.strAt.clear();
      this.keyLow.fill(0);
      this.strLow.fill(undefined);
      this.stacks.clear();
      this.byBytes.clear();
      this.nByBytes = 0;
      this.epoch = r.memoEpoch;
    }
    this.lim = r.frameEnd >= 0 ? Math.min(src.end, r.frameEnd - src.base) : src.end;
    this.p = src.i;
    this.ops = 0;
    this.memoNext = r.memoCount;
    this.nPuts = 0;
    this.newTextBytes = 0;
    this.listStart = this.listEnd = this.listMemo = -1;
    this.listItems = this.maxGroup = 0;
    this.stackRef = null;
    this.missDicts = null;
    const buf = src.buf;

    if (buf[this.p++] !== Op.EMPTY_DICT) return 0;
    this.ops++;
    if (!this.put(0)) return 0;
    if (this.p >= this.lim || buf[this.p++] !== Op.MARK) return 0;
    this.ops++;

    let seen = 0;
    let code = -1;
    let hi = 0;
    let lo = 0;
    let size = 0;
    let stream = 0;
    let time = 0;
    let cc: string | undefined;
    let um: string | undefined;
    for (;;) {
      if (this.p >= this.lim) return 0;
      const op = buf[this.p];
      if (op === Op.SETITEMS) {
        this.p++;
        this.ops++;
        break;
      }
      const key = this.key();
      if (key === 0 || seen & key) return 0;
      seen |= key;
      switch (key) {
        case K_ACTION: {
          const s = this.memoString();
          if (s === undefined) return 0;
          code = sink.actionCode(s);
          if (code < 0) return 0;
          break;
        }
        case K_ADDR:
          if (!this.uint64()) return 0;
          hi = this.hi;
          lo = this.lo;
          break;
        case K_SIZE:
          if (!this.int() || this.num < 0) return 0;
          size = this.num;
          break;
        case K_STREAM:
          if (!this.int()) return 0;
          stream = this.num;
          break;
        case K_TIME:
          if (!this.int()) return 0;
          time = this.num;
          break;
        case K_CC:
          if (!this.textValue()) return 0;
          cc = this.text;
          break;
        case K_UM:
          if (!this.textValue()) return 0;
          um = this.text;
          break;
        case K_FRAMES:
          if (!this.frames(sink)) return 0;
          break;
      }
    }
    // What the general path requires of this shape: an action and its address.
    if (!(seen & K_ACTION) || !(seen & K_ADDR)) return 0;
    if (!(seen & K_FRAMES)) {
      this.stackRef = sink.stack(null) ?? null;
      if (!this.stackRef) return 0;
    }
    if (this.stackRef === null) {
      if (!this.resolveStack(sink)) return 0;
      this.rememberBytes();
    }
    if (!this.withinLimits()) return 0;
    this.commit();
    sink.push(code, hi, lo, size, time, stream, this.stackRef!, cc, um);
    return this.ops;
  }

  /** A memo put after a new object (kind: 0 dict, 1 text, 2 list), if one follows; false: not one the fast path takes. */
  private put(kind: number): boolean {
    const buf = this.r.src.buf;
    if (this.p >= this.lim) return false;
    const op = buf[this.p];
    let idx: number;
    if (op === Op.MEMOIZE) {
      idx = this.memoNext;
      this.p++;
    } else if (op === Op.BINPUT) {
      if (this.p + 2 > this.lim) return false;
      idx = buf[this.p + 1];
      this.p += 2;
    } else if (op === Op.LONG_BINPUT) {
      if (this.p + 5 > this.lim) return false;
      idx = u32At(buf, this.p + 1);
      this.p += 5;
    } else return true; // not memoized
    // Only a new index at the end of the memo: anything else rebinds or skips (the general path).
    if (idx !== this.memoNext || idx < this.r.memoHigh) return false;
    if (this.nPuts === 4) return false;
    this.memoNext++;
    this.ops++;
    this.putIdx[this.nPuts] = idx;
    this.putKind[this.nPuts] = kind;
    if (kind === 1) this.putTexts[this.nPuts] = this.text;
    this.nPuts++;
    if (kind === 2) this.listMemo = idx;
    return true;
  }

  /** A memo index from BINGET/LONG_BINGET of something stored before this event, or -1. */
  private getIndex(): number {
    const buf = this.r.src.buf;
    const op = buf[this.p];
    let idx: number;
    if (op === Op.BINGET) {
      if (this.p + 2 > this.lim) return -1;
      idx = buf[this.p + 1];
      this.p += 2;
    } else if (op === Op.LONG_BINGET) {
      if (this.p + 5 > this.lim) return -1;
      idx = u32At(buf, this.p + 1);
      this.p += 5;
    } else return -1;
    this.ops++;
    return idx < this.r.memoCount ? idx : -1;
  }

  private key(): number {
    const idx = this.getIndex();
    if (idx < 0) return 0;
    if (idx < LOW && this.keyLow[idx] !== 0) return this.keyLow[idx];
    let k = this.keyAt.get(idx);
    if (k === undefined) {
      const v = this.r.memo.get(idx);
      if (typeof v !== 'string' || !Object.hasOwn(KEYS, v)) return 0;
      k = KEYS[v];
      if (idx < LOW) this.keyLow[idx] = k;
      else this.keyAt.set(idx, k);
    }
    return k;
  }

  /** A str the memo holds, referenced by GET. */
  private memoString(): string | undefined {
    const idx = this.getIndex();
    if (idx < 0) return undefined;
    let s = idx < LOW ? this.strLow[idx] : this.strAt.get(idx);
    if (s === undefined) {
      const v = this.r.memo.get(idx);
      if (typeof v !== 'string') return undefined;
      s = v;
      if (idx < LOW) this.strLow[idx] = s;
      else this.strAt.set(idx, s);
    }
    return s;
  }

  /** A str by GET, or a short ASCII one inline (and its memo put): this.text. */
  private textValue(): boolean {
    const buf = this.r.src.buf;
    if (this.p >= this.lim) return false;
    if (buf[this.p] !== Op.SHORT_BINUNICODE) {
      const s = this.memoString();
      if (s === undefined) return false;
      this.text = s;
      return true;
    }
    if (this.p + 2 > this.lim) return false;
    const n = buf[this.p + 1];
    const start = this.p + 2;
    if (start + n > this.lim) return false;
    // The same text as last time (PyTorch's 'N/A' on every event): no new string.
    const last = this.lastText;
    if (n === last.length) {
      let k = 0;
      while (k < n && buf[start + k] === last.charCodeAt(k)) k++;
      if (k === n) {
        this.p = start + n;
        this.ops++;
        this.text = last;
        return this.put(1);
      }
    }
    for (let k = start; k < start + n; k++) if (buf[k] >= 0x80) return false;
    const read = buf.toString('latin1', start, start + n);
    let s = this.texts.get(read);
    if (s === undefined) {
      if (this.texts.size >= 4096) return false;
      s = read;
      this.texts.set(s, s);
      this.newTextBytes += this.costs.string + 2 * n;
    }
    this.p = start + n;
    this.ops++;
    this.text = s;
    this.lastText = s;
    return this.put(1);
  }

  /** An int of at most 53 bits (BININT1/2, BININT, LONG1): this.num. */
  private int(): boolean {
    const buf = this.r.src.buf;
    const p = this.p;
    const op = buf[p];
    if (op === Op.BININT1) {
      if (p + 2 > this.lim) return false;
      this.num = buf[p + 1];
      this.p = p + 2;
    } else if (op === Op.BININT2) {
      if (p + 3 > this.lim) return false;
      this.num = buf[p + 1] | (buf[p + 2] << 8);
      this.p = p + 3;
    } else if (op === Op.BININT) {
      if (p + 5 > this.lim) return false;
      this.num = i32At(buf, p + 1);
      this.p = p + 5;
    } else if (op === Op.LONG1) {
      if (p + 2 > this.lim) return false;
      const n = buf[p + 1];
      const q = p + 2;
      if (n < 1 || n > 8 || q + n > this.lim) return false;
      // Beyond 6 bytes: the low word and the signed rest; beyond 2^53 the general path judges.
      this.num = n <= 6 ? buf.readIntLE(q, n) : buf.readIntLE(q + 4, n - 4) * TWO32 + u32At(buf, q);
      if (!Number.isSafeInteger(this.num)) return false;
      this.p = q + n;
    } else return false;
    this.ops++;
    return true;
  }

  /** A non-negative int below 2^64, as two words: this.hi, this.lo. */
  private uint64(): boolean {
    const buf = this.r.src.buf;
    const p = this.p;
    if (p < this.lim && buf[p] === Op.LONG1) {
      if (p + 2 > this.lim) return false;
      const n = buf[p + 1];
      const q = p + 2;
      if (n < 1 || n > 9 || q + n > this.lim) return false;
      if (buf[q + n - 1] & 0x80) return false; // negative: the general path refuses it
      if (n === 9 && buf[q + 8] !== 0) return false;
      let lo = 0;
      let hi = 0;
      for (let k = Math.min(n, 8) - 1; k >= 0; k--) {
        if (k >= 4) hi = hi * 256 + buf[q + k];
        else lo = lo * 256 + buf[q + k];
      }
      this.hi = hi;
      this.lo = lo;
      this.p = q + n;
      this.ops++;
      return true;
    }
    if (!this.int() || this.num < 0) return false;
    this.hi = Math.floor(this.num / TWO32);
    this.lo = this.num % TWO32;
    return true;
  }

  /** The frames value: None, a stand-in by GET, or a new list of frame dicts by GET. */
  private frames(sink: TraceSink): boolean {
    const r = this.r;
    const buf = r.src.buf;
    if (this.p >= this.lim) return false;
    const op = buf[this.p];
    if (op === Op.NONE) {
      this.p++;
      this.ops++;
      this.stackRef = sink.stack(null) ?? null;
      return this.stackRef !== null;
    }
    if (op === Op.BINGET || op === Op.LONG_BINGET) {
      const idx = this.getIndex();
      if (idx < 0) return false;
      const v = r.memo.get(idx);
      if (v === undefined) return false;
      this.stackRef = sink.stackOfValue(v) ?? null;
      return this.stackRef !== null;
    }
    if (op !== Op.EMPTY_LIST) return false;
    this.p++;
    this.ops++;
    if (!this.put(2)) return false;
    this.listStart = this.p;
    if (this.knownBytes()) return true;
    // Items in groups as CPython batches them: MARK GET... APPENDS, or GET APPEND. Their
    // memo indices are gathered (and hashed) to find the stack without looking them up.
    let n = 0;
    let h = 0x811c9dc5;
    const lim = this.lim;
    const memoCount = r.memoCount;
    let idxs = this.idxs;
    let p = this.p;
    for (;;) {
      if (p >= lim) return false;
      const g = buf[p];
      if (g === Op.MARK) {
        p++;
        const first = n;
        for (;;) {
          if (p >= lim) return false;
          const o = buf[p];
          let idx: number;
          if (o === Op.LONG_BINGET) {
            if (p + 5 > lim) return false;
            idx = (buf[p + 1] | (buf[p + 2] << 8) | (buf[p + 3] << 16) | (buf[p + 4] << 24)) >>> 0;
            p += 5;
          } else if (o === Op.BINGET) {
            if (p + 2 > lim) return false;
            idx = buf[p + 1];
            p += 2;
          } else if (o === Op.APPENDS) {
            p++;
            break;
          } else return false;
          if (idx >= memoCount) return false;
          if (n === idxs.length) idxs = this.idxs = growU32(idxs);
          idxs[n++] = idx;
          h = Math.imul(h ^ idx, 0x01000193);
        }
        const k = n - first;
        this.ops += k + 2;
        if (k > this.maxGroup) this.maxGroup = k;
      } else if (g === Op.BINGET || g === Op.LONG_BINGET) {
        const long = g === Op.LONG_BINGET;
        const q = p + (long ? 5 : 2);
        // A GET not followed by APPEND is the next key: the list has ended.
        if (q >= lim) return false;
        if (buf[q] !== Op.APPEND) break;
        const idx = long ? u32At(buf, p + 1) : buf[p + 1];
        if (idx >= memoCount) return false;
        if (n === idxs.length) idxs = this.idxs = growU32(idxs);
        idxs[n++] = idx;
        h = Math.imul(h ^ idx, 0x01000193);
        p = q + 1;
        this.ops += 2;
        if (this.maxGroup < 1) this.maxGroup = 1;
      } else break;
    }
    this.p = p;
    this.listItems = n;
    this.listHash = (h ^ n) & 0x3fffffff; // a small integer: a cheap Map key
    this.listEnd = p;
    return true;
  }

  /**
   * Finds where the list at listStart ends without reading its items' indices: the same walk
   * as frames() (groups MARK GET... APPENDS, single GET APPEND, anything else ends it), and
   * the same counts (items, largest group, opcodes). False when the window ends first.
   */
  private skipList(): boolean {
    const buf = this.r.src.buf;
    const lim = this.lim;
    let p = this.listStart;
    let n = 0;
    let ops = 0;
    let maxGroup = 0;
    for (;;) {
      if (p >= lim) return false;
      const g = buf[p];
      if (g === Op.MARK) {
        p++;
        const first = n;
        for (;;) {
          if (p >= lim) return false;
          const o = buf[p];
          if (o === Op.LONG_BINGET) p += 5;
          else if (o === Op.BINGET) p += 2;
          else if (o === Op.APPENDS) {
            p++;
            break;
          } else return false;
          n++;
        }
        if (p > lim) return false;
        const k = n - first;
        ops += k + 2;
        if (k > maxGroup) maxGroup = k;
      } else if (g === Op.BINGET || g === Op.LONG_BINGET) {
        const q = p + (g === Op.LONG_BINGET ? 5 : 2);
        if (q >= lim) return false;
        if (buf[q] !== Op.APPEND) break;
        p = q + 1;
        n++;
        ops += 2;
        if (maxGroup < 1) maxGroup = 1;
      } else break;
    }
    this.listEnd = p;
    this.listItems = n;
    this.listOps = ops;
    this.skipGroup = maxGroup;
    return true;
  }

  /** A key for the list's bytes: its length, first and last words (what differs between
   *  stacks is mostly at the end: the Python frames after shared C++ ones). */
  private bytesKey(start: number, end: number): number {
    const buf = this.r.src.buf;
    const len = end - start;
    let h = Math.imul(0x811c9dc5 ^ len, 0x01000193);
    if (len >= 4) h = Math.imul(h ^ i32At(buf, start), 0x01000193);
    for (let k = end - 4; k >= start && k >= end - 32; k -= 4) h = Math.imul(h ^ i32At(buf, k), 0x01000193);
    return h & 0x3fffffff;
  }

  /**
   * A stack list whose bytes equal one read before holds the same items (the bytes decide
   * the parse; memo indices only grow, and the cache empties when an entry changes), so it
   * is the same stack: found by one native compare instead of reading ~70 memo indices.
   */
  private knownBytes(): boolean {
    if (!this.skipList()) return false;
    const start = this.listStart;
    const end = this.listEnd;
    const c = this.byBytes.get(this.bytesKey(start, end));
    if (c === undefined || c.bytes.length !== end - start) return false;
    if (this.r.src.buf.compare(c.bytes, 0, c.bytes.length, start, end) !== 0) return false;
    this.p = end;
    if (this.skipGroup > this.maxGroup) this.maxGroup = this.skipGroup;
    this.ops += this.listOps;
    this.stackRef = c.ref;
    return true;
  }

  /** Remembers the list just resolved by its bytes (after resolveStack found its stack). */
  private rememberBytes(): void {
    if (this.nByBytes >= MAX_STACKS) {
      this.byBytes.clear();
      this.nByBytes = 0;
    }
    const ref = this.stackRef!;
    // One entry per key: a colliding list replaces it (found again the slower way).
    this.byBytes.set(this.bytesKey(this.listStart, this.listEnd), {
      bytes: Buffer.from(this.r.src.buf.subarray(this.listStart, this.listEnd)),
      ref,
    });
    this.nByBytes++;
  }

  /** The stack of the list read: found by its memo indices, else from the frame dicts themselves. */
  private resolveStack(sink: TraceSink): boolean {
    const n = this.listItems;
    const idxs = this.idxs;
    const hit = this.stacks.get(this.listHash);
    if (hit && hit.idxs.length === n) {
      let same = true;
      for (let k = 0; k < n; k++) {
        if (hit.idxs[k] !== idxs[k]) {
          same = false;
          break;
        }
      }
      if (same) {
        this.stackRef = hit.ref;
        return true;
      }
    }
    const dicts: PickleValue[] = [];
    for (let k = 0; k < n; k++) {
      const v = this.r.memo.get(idxs[k]);
      if (!(v instanceof Map)) return false;
      dicts.push(v);
    }
    const ref = sink.stack(dicts);
    if (!ref) return false;
    this.stackRef = ref;
    this.missDicts = dicts;
    if (this.stacks.size >= MAX_STACKS) this.stacks.clear();
    // One entry per hash: a colliding stack replaces it (found again the slow way).
    this.stacks.set(this.listHash, { idxs: idxs.slice(0, n), ref });
    return true;
  }

  /**
   * Every limit the general path could reach while executing this event: then it takes
   * nothing, and the general path reaches it with its own message and offset.
   */
  private withinLimits(): boolean {
    const r = this.r;
    const c = this.costs;
    const hasList = this.listStart >= 0;
    if (r.containers + (hasList ? 2 : 1) > r.limits.maxContainers) return false;
    const newEntries = this.nPuts;
    if (r.memo.size + newEntries > r.limits.maxMemo) return false;
    // The general path's deepest stack: the dict, 7 keys and values, the list, one group of items.
    if (r.stack.length + 17 + this.maxGroup > r.limits.maxStack) return false;
    // Its peak charge: the dict and its entries, numbers, the list and its items, strings, memo entries.
    const peak =
      c.dict +
      8 * c.dictEntry +
      3 * c.heapNumber +
      (hasList ? c.list + this.listItems * c.element : 0) +
      this.newTextBytes +
      newEntries * c.memoEntry;
    return r.heapBytes + peak <= r.limits.maxHeapBytes;
  }

  /** Leaves behind what the general path would: memo count and entries, containers, heap. */
  private commit(): void {
    const r = this.r;
    r.src.i = this.p;
    r.containers += this.listStart >= 0 ? 2 : 1;
    for (let k = 0; k < this.nPuts; k++) {
      const kind = this.putKind[k];
      // The dict was consumed (its entry released); the stack list leaves its stand-in.
      if (kind === 0) r.memo.skip(this.putIdx[k]);
      else {
        r.memo.set(this.putIdx[k], kind === 1 ? this.putTexts[k] : this.stackRef!.stand);
        r.heapBytes += this.costs.memoEntry;
      }
    }
    r.heapBytes += this.newTextBytes;
    r.memoCount = this.memoNext;
    if (this.memoNext > r.memoHigh) r.memoHigh = this.memoNext;
    // Frame dicts referenced again are read-only from now on, as after a GET.
    if (this.missDicts) for (const d of this.missDicts) r.shared.add(d as object);
  }
}
