// A safe pickle reader: plain data only (None, bools, ints of any size, floats, str, bytes,
// lists, tuples, dicts, sets) from protocols 0-5, with memo and framing. Opcodes that
// import, call or construct Python objects are refused by name and offset; nothing in the
// input can make this code run anything. Every malformed input ends in a PickleError.
//
// Structure rules beyond Python's own: a container may not change after the pickle has
// referenced it a second time (memo GET or DUP). CPython's pickler never does that for
// acyclic data, and the rule makes recursive (self-containing) values impossible, so the
// result is always a finite tree (shared subtrees allowed) whose depth is checked once.
//
// Shared subtrees are where a small file turns into a lot of work ("billion laughs": a
// 12 KB memo referencing one list thousands of times, each holding thousands of
// references). Anything that walks the result as a tree (the snapshot converter, stats,
// toPlain) does work per *reference*, so the reader bounds that expanded size explicitly:
// maxValues, or maxValuesPerByte times the input size when larger. It is measured in one
// memoized walk, without expanding anything, and refused with a 'limit' PickleError.
import { getHeapStatistics } from 'node:v8';
import { PickleError } from './errors';
import { describeOp, HIGHEST_PROTOCOL, Op, opName, REFUSED } from './opcodes';
import { bufferSource, fileSource, type ByteSource } from './source';
import { Memo } from './memo';
import { LOOKAHEAD, TraceFastPath, type FastState, type TraceSink } from './trace_fast';
import { normaliseInt, PySet, PyTuple, type PickleKey, type PickleValue, type PyDict } from './values';

export interface ReadLimits {
  /** Deepest nesting of containers (the top-level value counts as 1). */
  maxDepth: number;
  /** Longest str/bytes, in bytes. */
  maxStringBytes: number;
  /** Longest int, in bytes of two's complement (LONG1/LONG4) or digits (INT/LONG). */
  maxIntBytes: number;
  /** Most items on the stack at once. */
  maxStack: number;
  /** Most memo entries. */
  maxMemo: number;
  /** Most containers (lists, dicts, tuples, sets) created. */
  maxContainers: number;
  /**
   * Most values (containers, dict keys, scalars) in the result counted as a walk of it
   * sees them: every shared reference counted again. The effective bound is the larger of
   * this and maxValuesPerByte times the input length.
   */
  maxValues: number;
  /** Expanded values allowed per input byte (real snapshots stay far below; see tests). */
  maxValuesPerByte: number;
  /** Longest text float or memo index argument, in characters. */
  maxTextNumber: number;
  /**
   * Most bytes the decoded values may take on the JavaScript heap, estimated per object as
   * it is created (HEAP_COST); what a hook lets go of is given back. Keeps a small file of
   * many cheap opcodes (2-byte empty dicts) from exhausting V8's heap.
   */
  maxHeapBytes: number;
}

/**
 * Estimated V8 heap bytes per decoded object (measured on Node 22, x64: an empty Map takes
 * 184 bytes, an empty array 32, a heap number 16). Rough on purpose, and never below the
 * real cost of the object's own slots.
 */
export const HEAP_COST = {
  dict: 184,
  dictEntry: 24,
  list: 32,
  /** A list element, with the growth slack of arrays that grow by push. */
  element: 12,
  tuple: 64,
  set: 64,
  string: 24, // + 2 bytes a character (two-byte strings; one-byte ones are cheaper)
  bytes: 128, // + 1 a byte
  heapNumber: 16, // a double or an int outside 32 bits: charged for every slot that holds one
  bigint: 24, // + 8 per 64 bits
  memoEntry: 40, // a Map entry with its share of the table
} as const;

/**
 * An eighth of V8's heap limit, at most 512 MiB: the decoded value plus what the rest of the
 * process holds (other open snapshots, the trace's typed arrays) stays well inside it. A
 * streamed snapshot keeps little: its memo's entries for stack lists (about 40 bytes an
 * event), so 5 million events stay near 200 MB.
 */
export function defaultHeapBudget(): number {
  return Math.min(2 ** 29, Math.floor(getHeapStatistics().heap_size_limit / 8));
}

export const DEFAULT_LIMITS: ReadLimits = {
  maxDepth: 1000,
  maxStringBytes: 64 << 20,
  maxIntBytes: 4096,
  maxStack: 10_000_000,
  maxMemo: 16_000_000, // below V8's Map limit (2^24 entries): our error, not the engine's
  maxContainers: 30_000_000,
  maxValues: 1 << 24,
  maxValuesPerByte: 64,
  maxTextNumber: 1024,
  maxHeapBytes: defaultHeapBudget(),
};

/**
 * Lets a caller consume a long list while it is read instead of keeping it (a snapshot's
 * millions of trace events go straight into typed arrays). The reader stays the judge of
 * what is valid; hooks only see finished values.
 */
export interface ReadHooks {
  /** A container was stored in the memo at idx. */
  memoized?(value: PickleValue, idx: number): void;
  /** Items are about to be appended to list; what is returned is appended instead. */
  append?(list: PickleValue[], items: PickleValue[], reader: HookContext): PickleValue[];
  /**
   * For a list the hooks consume as a trace: a sink the reader may decode the event dicts
   * PyTorch writes straight into (trace_fast.ts), instead of building them for append.
   * Asked when a batch of items for the list begins; undefined: the general path.
   */
  traceSink?(list: PickleValue[]): TraceSink | undefined;
}

export interface HookContext {
  /** Absolute input offset reached, and the input's length (for progress). */
  readonly offset: number;
  readonly length: number;
  /**
   * Let go of a value the hook has consumed: its memo entry (idx) becomes `replacement`,
   * or is dropped when none is given (a later GET of it then fails).
   */
  release(value: PickleValue, idx: number, replacement?: PickleValue): void;
  /**
   * One reference to a container is gone: an item the hook consumed, or a value held by
   * one. Call it once per such reference (before release); its heap cost is given back
   * as far as references to it were counted.
   */
  drop(value: PickleValue): void;
}

export interface ReadOptions {
  limits?: Partial<ReadLimits>;
  hooks?: ReadHooks;
  /** Accept bytes after STOP (Python ignores them). Default false: they mean a damaged file. */
  allowTrailing?: boolean;
}

/** Parse a pickle held in memory. The bytes are read in place. */
export function readPickle(data: Uint8Array, options: ReadOptions = {}): PickleValue {
  return parse(bufferSource(data), options);
}

/** Parse a pickle file, reading it in chunks (constant memory besides the result). */
export function readPickleFile(path: string, options: ReadOptions & { chunkBytes?: number } = {}): PickleValue {
  const src = fileSource(path, options.chunkBytes);
  try {
    return parse(src, options);
  } finally {
    src.close();
  }
}

export interface SliceOptions {
  /** Opcodes per slice (default 200,000: a few milliseconds). */
  sliceOps?: number;
  /** What to await between slices (default: one turn of the event loop, setImmediate). */
  pause?: () => Promise<void>;
}

/** readPickle that yields to the event loop between slices of work (same result, same errors). */
export function readPickleSliced(data: Uint8Array, options: ReadOptions & SliceOptions = {}): Promise<PickleValue> {
  const reader = new Reader(bufferSource(data), { ...DEFAULT_LIMITS, ...options.limits }, options.allowTrailing ?? false, options.hooks);
  return reader.runSliced(options.sliceOps ?? 200_000, options.pause ?? (() => new Promise<void>((resolve) => setImmediate(resolve))));
}

const PENDING = Symbol('pending');

function parse(src: ByteSource, options: ReadOptions): PickleValue {
  const reader = new Reader(src, { ...DEFAULT_LIMITS, ...options.limits }, options.allowTrailing ?? false, options.hooks);
  return reader.run();
}

/**
 * Anything the reader itself hits that is not already a PickleError (a RangeError from a
 * Map or array at its engine limit, a stack overflow, an I/O error) becomes one, with the
 * offset and opcode being executed, so callers only ever handle one error type. Only an
 * engine limit (V8 throws RangeError for all of them) is labelled 'limit': the test is on
 * the error's type, never on words a message may contain ("memory snapshot" was one).
 */
function asPickleError(err: unknown, at: number, op: number): PickleError {
  if (err instanceof PickleError) return err;
  const e = err as { name?: string; message?: string; code?: string };
  const what = e?.message ?? String(err);
  const engineLimit = err instanceof RangeError;
  const why = engineLimit ? `the value is too large or too deeply nested to read (${what})` : `could not be read (${e?.code ?? what})`;
  return new PickleError(engineLimit ? 'limit' : 'malformed', `pickle: ${describeOp(op)} at offset ${at}: ${why}`, at, op);
}

/** An error a caller's hook threw: it reaches the caller as it was thrown. */
class HookFailure {
  constructor(readonly error: unknown) {}
}

type Container = PickleValue[] | PyDict | PyTuple | PySet;

function isContainer(v: PickleValue): v is Container {
  return Array.isArray(v) || v instanceof Map || v instanceof PyTuple || v instanceof PySet;
}

const ascii = new TextDecoder('ascii');
/** Python 2 string escapes (a backslash-newline is a line continuation: nothing). */
const ESCAPES: Record<string, number> = { n: 10, t: 9, r: 13, '\\': 92, "'": 39, '"': 34, a: 7, b: 8, f: 12, v: 11, '\n': -1 };
const utf8 = new TextDecoder('utf-8', { fatal: true });

// Fields without `private` are the trace fast path's too (FastState, trace_fast.ts).
class Reader implements FastState {
  readonly stack: PickleValue[] = [];
  private marks: number[] = [];
  readonly memo = new Memo();
  /** Distinct memo indices ever stored (Python's len(memo); entries a hook released still count). */
  memoCount = 0;
  /** 1 + the highest memo index ever stored. */
  memoHigh = 0;
  /** Bumped when an existing memo entry is replaced or removed. */
  memoEpoch = 0;
  /** Containers referenced more than once (memo GET, DUP): read-only from then on. */
  readonly shared = new Set<Container>();
  // What a hook lets go of is given back to the heap budget when nothing can reach it any
  // more: every reference to it dropped (the first, and one per GET or DUP) and no memo
  // entry left. A reference counts only once, so no input can give back more than it took.
  // (Counts live on the containers themselves, see Counted: Maps of millions of entries
  // made the streamed read half as fast again.)

  containers = 0;
  /** Estimated heap bytes the decoded values take now (see HEAP_COST). */
  heapBytes = 0;
  frameEnd = -1;
  private fast: TraceFastPath | null = null;
  /** The list the last trace sink was asked for, and its answer. */
  private sinkList: PickleValue[] | null = null;
  private sink: TraceSink | null = null;
  /** Offset of the opcode being executed, for errors. */
  private at = 0;
  private op = 0;

  constructor(
    readonly src: ByteSource,
    readonly limits: ReadLimits,
    private allowTrailing: boolean,
    private hooks?: ReadHooks,
  ) {
    if (hooks?.traceSink) this.fast = new TraceFastPath(this, HEAP_COST);
  }

  private ctx?: HookContext;

  /** What a hook may do to the reader (see ReadHooks). */
  private hookContext(): HookContext {
    const src = this.src;
    return (this.ctx ??= {
      get offset() {
        return src.base + src.i;
      },
      length: this.src.length,
      release: (value, idx, replacement) => {
        if (this.memo.get(idx) !== value) return;
        this.memoEpoch++;
        if (replacement === undefined) {
          this.memo.delete(idx);
          this.heapBytes -= HEAP_COST.memoEntry;
        } else this.memo.set(idx, replacement);
        if (isContainer(value)) {
          this.shared.delete(value);
          const c = value as Counted;
          c[MEMO_HOLDS] = (c[MEMO_HOLDS] ?? 1) - 1;
          if (c[MEMO_HOLDS] <= 0 && c[EXTRA_REFS] === -1) this.heapBytes -= shallowCost(value) + numbersIn(value);
        }
      },
      drop: (value) => {
        if (!isContainer(value)) return;
        const c = value as Counted;
        const extra = c[EXTRA_REFS] ?? 0;
        if (extra === -1) return; // every reference dropped already
        if (extra > 0) c[EXTRA_REFS] = extra - 1;
        else {
          c[EXTRA_REFS] = -1;
          if (!(c[MEMO_HOLDS]! > 0)) this.heapBytes -= shallowCost(value) + numbersIn(value);
        }
      },
    });
  }

  run(): PickleValue {
    try {
      return this.loop() as PickleValue; // no slice limit: never PENDING
    } catch (err) {
      throw this.asThrown(err);
    }
  }

  /** What a failed read throws: a hook's own error as it was, anything else a PickleError. */
  private asThrown(err: unknown): unknown {
    if (err instanceof HookFailure) return err.error instanceof RangeError ? asPickleError(err.error, this.at, this.op) : err.error;
    return asPickleError(err, this.at, this.op);
  }

  /** Calls a hook; what it throws (a format error of the caller's) is not the reader's to relabel. */
  private hook<T>(call: () => T): T {
    try {
      return call();
    } catch (err) {
      throw new HookFailure(err);
    }
  }

  /**
   * Reads in slices of `ops` opcodes, awaiting `pause` between them: a server keeps
   * answering other clients while a large snapshot is read.
   */
  async runSliced(ops: number, pause: () => Promise<void>): Promise<PickleValue> {
    for (;;) {
      let v: PickleValue | typeof PENDING;
      try {
        v = this.loop(ops);
      } catch (err) {
        throw this.asThrown(err);
      }
      if (v !== PENDING) return v;
      await pause();
    }
  }

  /** Executes opcodes until STOP (the value), or PENDING after maxOps of them. */
  private loop(maxOps = Infinity): PickleValue | typeof PENDING {
    const src = this.src;
    for (let n = 0; ; n++) {
      if (n >= maxOps) return PENDING;
      this.at = src.base + src.i;
      if (this.frameEnd >= 0 && this.at >= this.frameEnd) this.frameEnd = -1;
      if (src.i >= src.end && !src.ensure(1)) {
        throw new PickleError('truncated', `pickle: input ends at offset ${this.at} without a STOP opcode`, this.at);
      }
      const op = src.buf[src.i];
      if (op === Op.EMPTY_DICT && this.fast !== null) {
        const took = this.traceEvent(maxOps - n);
        if (took > 0) {
          n += took - 1;
          continue;
        }
      }
      src.i++;
      this.op = op;
      if (op === Op.STOP) return this.stop();
      this.exec(op);
    }
  }

  /**
   * Dicts right after the MARK of a batch appended to a trace list: the fast path decodes
   * them straight into the trace (trace_fast.ts), one after another while they have its
   * shape and `budget` opcodes last. Events read before in the batch are handed over
   * first, so events keep their order. Returns the opcodes taken (0: none).
   */
  private traceEvent(budget: number): number {
    const marks = this.marks;
    if (!marks.length) return 0;
    const mark = marks[marks.length - 1];
    if (mark === 0) return 0;
    const list = this.stack[mark - 1];
    if (!Array.isArray(list)) return 0;
    if (list !== this.sinkList) {
      const traceSink = this.hooks!.traceSink!;
      const sink = this.hook(() => traceSink(list));
      if (sink === undefined) return 0; // asked again later: the hooks may claim the list after its first batch
      this.sink = sink;
      this.sinkList = list;
    }
    const sink = this.sink!; // set with sinkList
    if (this.shared.has(list)) return 0;
    // Events the general path read earlier in this batch (one with a new frame, say) go to
    // the trace first, as APPENDS would hand them over, so the order is kept.
    if (this.stack.length > mark) {
      for (let k = mark; k < this.stack.length; k++) if (!(this.stack[k] instanceof Map)) return 0;
      this.appendItems(list, this.stack.splice(mark));
    }
    // The events that follow in the batch, while they keep the shape and the slice has room.
    const src = this.src;
    const fast = this.fast!;
    let took = 0;
    while (took < budget) {
      const avail = src.end - src.i;
      if (avail < LOOKAHEAD) {
        const left = src.length - (src.base + src.i);
        if (left > avail) src.ensure(Math.min(left, LOOKAHEAD));
      }
      this.at = src.base + src.i;
      if (this.frameEnd >= 0 && this.at >= this.frameEnd) break; // the loop ends the frame
      if (src.i >= src.end || src.buf[src.i] !== Op.EMPTY_DICT) break;
      let ops: number;
      // As hook(), without a closure per event: what the sink throws is the caller's.
      try {
        ops = fast.tryEvent(sink);
      } catch (err) {
        throw new HookFailure(err);
      }
      if (ops === 0) break;
      took += ops;
    }
    return took;
  }

  // ---- errors -------------------------------------------------------------------------

  private fail(code: PickleError['code'], what: string): never {
    throw new PickleError(code, `pickle: ${describeOp(this.op)} at offset ${this.at}: ${what}`, this.at, this.op);
  }

  private crossFrame(): never {
    this.fail('malformed', `opcode runs past the end of its frame (frame ends at offset ${this.frameEnd})`);
  }

  // ---- input --------------------------------------------------------------------------

  /** Make n argument bytes available; returns their index in src.buf. */
  private take(n: number): number {
    const src = this.src;
    if (!src.ensure(n)) {
      const left = src.length - (src.base + src.i);
      this.fail('truncated', `needs ${n} more byte${n === 1 ? '' : 's'} but the input has ${left}`);
    }
    const idx = src.i;
    src.i += n;
    if (this.frameEnd >= 0 && src.base + src.i > this.frameEnd) this.crossFrame();
    return idx;
  }

  // take() may move the window, so src.buf is read only after it returns.
  private u8(): number {
    const i = this.take(1);
    return this.src.buf[i];
  }
  private u16(): number {
    const i = this.take(2);
    return this.src.buf.readUInt16LE(i);
  }
  private u32(): number {
    const i = this.take(4);
    return this.src.buf.readUInt32LE(i);
  }
  private i32(): number {
    const i = this.take(4);
    return this.src.buf.readInt32LE(i);
  }
  private f64(): number {
    const i = this.take(8);
    return this.src.buf.readDoubleBE(i);
  }
  private u64(): number {
    const i = this.take(8);
    const v = this.src.buf.readBigUInt64LE(i);
    if (v > BigInt(Number.MAX_SAFE_INTEGER)) this.fail('limit', `length ${v} is too large`);
    return Number(v);
  }

  /** A length-prefixed payload: checked against limits before anything is read. */
  private payloadLength(n: number, kind: string): number {
    if (n < 0) this.fail('malformed', `negative ${kind} length ${n}`);
    if (n > this.limits.maxStringBytes) {
      this.fail('limit', `${kind} of ${n} bytes exceeds the ${this.limits.maxStringBytes}-byte limit`);
    }
    return n;
  }

  /**
   * Bytes up to (not including) the next newline: the argument of a text opcode. Linear
   * in its length: each byte is scanned once, and a file window that must grow to hold a
   * long argument at least doubles each time (growing it a byte at a time was quadratic).
   */
  private line(): string {
    const src = this.src;
    const max = Math.min(this.limits.maxStringBytes * 10 + 64, src.length);
    let scanned = 0;
    for (;;) {
      const avail = src.end - src.i;
      const nl = src.buf.indexOf(0x0a, src.i + scanned);
      if (nl >= 0 && nl < src.end) {
        const len = nl - src.i;
        const idx = this.take(len + 1);
        return src.buf.toString('latin1', idx, idx + len);
      }
      scanned = avail;
      if (scanned > max) this.fail('limit', `text argument longer than ${max} bytes`);
      const left = src.length - (src.base + src.i);
      if (left <= avail) this.fail('truncated', 'the input ends before the newline that ends this argument');
      if (!src.ensure(Math.min(left, Math.max(avail * 2, avail + 1 + 65536)))) {
        this.fail('truncated', 'the input ends before the newline that ends this argument');
      }
    }
  }

  private str(n: number): string {
    const idx = this.take(this.payloadLength(n, 'string'));
    const buf = this.src.buf;
    let isAscii = true;
    for (let k = idx; k < idx + n; k++) {
      if (buf[k] >= 0x80) {
        isAscii = false;
        break;
      }
    }
    if (isAscii) return buf.toString('latin1', idx, idx + n);
    try {
      return utf8.decode(buf.subarray(idx, idx + n));
    } catch {
      this.fail('malformed', 'string is not valid UTF-8');
    }
  }

  /** Protocol 0/1 byte strings: Python 3 decodes them as ASCII by default. */
  private asciiStr(bytes: Uint8Array): string {
    for (const b of bytes) if (b >= 0x80) this.fail('malformed', 'Python 2 string is not ASCII');
    return ascii.decode(bytes);
  }

  private bytes(n: number): Uint8Array {
    const idx = this.take(this.payloadLength(n, 'bytes object'));
    // A copy: the window is reused, and a small object must not pin a large buffer.
    const out = new Uint8Array(n);
    out.set(this.src.buf.subarray(idx, idx + n));
    return out;
  }

  // ---- stack --------------------------------------------------------------------------

  private get fence(): number {
    return this.marks.length ? this.marks[this.marks.length - 1] : 0;
  }

  private push(v: PickleValue): void {
    if (this.stack.length >= this.limits.maxStack) this.fail('limit', `stack deeper than ${this.limits.maxStack} items`);
    this.stack.push(v);
  }

  private newContainer<T extends Container>(c: T): T {
    if (++this.containers > this.limits.maxContainers) {
      this.fail('limit', `more than ${this.limits.maxContainers} containers`);
    }
    this.charge(shallowCost(c));
    return c;
  }

  /** Counts `bytes` more of decoded values against the heap budget. */
  private charge(bytes: number): void {
    this.heapBytes += bytes;
    if (this.heapBytes > this.limits.maxHeapBytes) {
      this.fail(
        'limit',
        `the decoded values would take more than ${this.limits.maxHeapBytes} bytes of JavaScript heap ` +
          `(estimated per object: ${HEAP_COST.dict} bytes a dict, ${HEAP_COST.list} a list, ...); ` +
          `${this.containers} containers so far`,
      );
    }
  }

  /** Pushes a value just decoded from the input, charging what it takes. */
  private pushNew(v: PickleValue): void {
    this.charge(scalarCost(v));
    this.push(v);
  }

  private pop(): PickleValue {
    if (this.stack.length <= this.fence) this.fail('stack-underflow', 'the stack (above the last MARK) is empty');
    return this.stack.pop()!;
  }

  private top(): PickleValue {
    if (this.stack.length <= this.fence) this.fail('stack-underflow', 'the stack (above the last MARK) is empty');
    return this.stack[this.stack.length - 1];
  }

  /** Items pushed since the last MARK, removed from the stack, and that MARK dropped. */
  private popMark(): PickleValue[] {
    if (!this.marks.length) this.fail('stack-underflow', 'no MARK on the stack');
    const mark = this.marks.pop()!;
    return this.stack.splice(mark);
  }

  /** A container that is about to change: must not have been shared already. */
  private mutable(target: PickleValue, want: 'list' | 'dict' | 'set'): Container {
    const ok =
      (want === 'list' && Array.isArray(target)) ||
      (want === 'dict' && target instanceof Map) ||
      (want === 'set' && target instanceof PySet && !target.frozen);
    if (!ok) this.fail('malformed', `target is ${typeName(target)}, not a ${want}`);
    const c = target as Container;
    if (this.shared.has(c)) {
      this.fail('malformed', `the ${want} was changed after being referenced again (recursive or shared-then-modified value)`);
    }
    return c;
  }

  /** A second (third...) reference to v: a number takes a slot of its own (heap number). */
  private share(v: PickleValue): PickleValue {
    if (isContainer(v)) {
      this.shared.add(v);
      const c = v as Counted;
      if (this.hooks && c[EXTRA_REFS] !== -1) c[EXTRA_REFS] = (c[EXTRA_REFS] ?? 0) + 1;
    } else this.charge(heapNumberCost(v));
    return v;
  }

  private key(k: PickleValue): PickleKey {
    if (!hashable(k)) this.fail('malformed', `dict key of unhashable type ${typeName(k)}`);
    return k as PickleKey;
  }

  private setItems(d: PyDict, items: PickleValue[]): void {
    if (items.length % 2) this.fail('malformed', 'odd number of items (keys and values must pair)');
    this.charge((items.length / 2) * HEAP_COST.dictEntry);
    for (let k = 0; k < items.length; k += 2) {
      if (items[k + 1] === d) this.fail('malformed', 'a dict cannot contain itself');
      d.set(this.key(items[k]), items[k + 1]);
    }
  }

  // ---- opcodes ------------------------------------------------------------------------

  private exec(op: number): void {
    switch (op) {
      case Op.PROTO: {
        const v = this.u8();
        if (v > HIGHEST_PROTOCOL) this.fail('malformed', `unsupported pickle protocol ${v}`);
        return;
      }
      case Op.FRAME: {
        const n = this.u64();
        if (this.frameEnd >= 0) this.fail('malformed', 'a new frame begins before the current frame ends');
        const here = this.src.base + this.src.i;
        if (n > this.src.length - here) {
          this.fail('truncated', `frame of ${n} bytes but only ${this.src.length - here} bytes follow`);
        }
        if (n > 0) this.frameEnd = here + n;
        return;
      }
      case Op.MARK:
        if (this.marks.length >= this.limits.maxStack) this.fail('limit', 'too many open MARKs');
        this.marks.push(this.stack.length);
        return;
      case Op.POP:
        if (this.stack.length > this.fence) this.stack.pop();
        else if (this.marks.length) this.marks.pop();
        else this.fail('stack-underflow', 'nothing to pop');
        return;
      case Op.POP_MARK:
        this.popMark();
        return;
      case Op.DUP:
        this.push(this.share(this.top()));
        return;

      // ints
      case Op.INT: {
        const s = this.line();
        if (s === '00') return this.push(false);
        if (s === '01') return this.push(true);
        return this.pushNew(this.decimal(s));
      }
      case Op.LONG: {
        const s = this.line();
        return this.pushNew(this.decimal(s.endsWith('L') ? s.slice(0, -1) : s));
      }
      case Op.BININT:
        return this.push(this.i32());
      case Op.BININT1:
        return this.push(this.u8());
      case Op.BININT2:
        return this.push(this.u16());
      case Op.LONG1:
        return this.pushNew(this.long(this.u8()));
      case Op.LONG4: {
        const n = this.i32();
        if (n < 0) this.fail('malformed', `negative byte count ${n}`);
        return this.pushNew(this.long(n));
      }

      // floats
      case Op.FLOAT:
        return this.pushNew(this.textFloat(this.line()));
      case Op.BINFLOAT:
        return this.pushNew(this.f64());

      // singletons
      case Op.NONE:
        return this.push(null);
      case Op.NEWTRUE:
        return this.push(true);
      case Op.NEWFALSE:
        return this.push(false);

      // text
      case Op.STRING:
        return this.pushNew(this.asciiStr(this.quoted(this.line())));
      case Op.BINSTRING:
        return this.pushNew(this.asciiStr(this.bytes(this.i32())));
      case Op.SHORT_BINSTRING:
        return this.pushNew(this.asciiStr(this.bytes(this.u8())));
      case Op.UNICODE:
        return this.pushNew(this.rawUnicodeEscape(this.line()));
      case Op.BINUNICODE:
        return this.pushNew(this.str(this.u32()));
      case Op.SHORT_BINUNICODE:
        return this.pushNew(this.str(this.u8()));
      case Op.BINUNICODE8:
        return this.pushNew(this.str(this.u64()));

      // bytes
      case Op.BINBYTES:
        return this.pushNew(this.bytes(this.u32()));
      case Op.SHORT_BINBYTES:
        return this.pushNew(this.bytes(this.u8()));
      case Op.BINBYTES8:
      case Op.BYTEARRAY8:
        return this.pushNew(this.bytes(this.u64()));

      // containers
      case Op.EMPTY_LIST:
        return this.push(this.newContainer([]));
      case Op.EMPTY_DICT:
        return this.push(this.newContainer(new Map()));
      case Op.EMPTY_TUPLE:
        return this.push(this.newContainer(new PyTuple([])));
      case Op.EMPTY_SET:
        return this.push(this.newContainer(new PySet([], false)));
      case Op.LIST:
        return this.push(this.newContainer(this.popMark()));
      case Op.TUPLE:
        return this.push(this.newContainer(new PyTuple(this.popMark())));
      case Op.TUPLE1:
      case Op.TUPLE2:
      case Op.TUPLE3: {
        const n = op - Op.TUPLE1 + 1;
        if (this.stack.length - this.fence < n) this.fail('stack-underflow', `needs ${n} items`);
        return this.push(this.newContainer(new PyTuple(this.stack.splice(this.stack.length - n))));
      }
      case Op.DICT: {
        const d: PyDict = this.newContainer(new Map());
        this.setItems(d, this.popMark());
        return this.push(d);
      }
      case Op.FROZENSET: {
        const items = this.popMark();
        for (const it of items) this.key(it);
        return this.push(this.newContainer(new PySet(items, true)));
      }
      case Op.APPEND: {
        const v = this.pop();
        const list = this.mutable(this.top(), 'list') as PickleValue[];
        if (v === list) this.fail('malformed', 'a list cannot contain itself');
        const append = this.hooks?.append;
        const kept = append ? this.hook(() => append(list, [v], this.hookContext())) : [v];
        this.charge(kept.length * HEAP_COST.element);
        for (const x of kept) list.push(x);
        return;
      }
      case Op.APPENDS: {
        const items = this.popMark();
        const list = this.mutable(this.top(), 'list') as PickleValue[];
        if (items.includes(list)) this.fail('malformed', 'a list cannot contain itself');
        this.appendItems(list, items);
        return;
      }
      case Op.SETITEM: {
        const v = this.pop();
        const k = this.pop();
        this.setItems(this.mutable(this.top(), 'dict') as PyDict, [k, v]);
        return;
      }
      case Op.SETITEMS: {
        const items = this.popMark();
        this.setItems(this.mutable(this.top(), 'dict') as PyDict, items);
        return;
      }
      case Op.ADDITEMS: {
        const items = this.popMark();
        const set = this.mutable(this.top(), 'set') as PySet;
        this.charge(items.length * HEAP_COST.element);
        for (const v of items) set.items.push(this.key(v) as PickleValue);
        return;
      }

      // memo
      case Op.GET:
        return this.get(this.memoIndex(this.line()));
      case Op.BINGET:
        return this.get(this.u8());
      case Op.LONG_BINGET:
        return this.get(this.u32());
      case Op.PUT:
        return this.put(this.memoIndex(this.line()));
      case Op.BINPUT:
        return this.put(this.u8());
      case Op.LONG_BINPUT:
        return this.put(this.u32());
      case Op.MEMOIZE:
        return this.put(this.memoCount);
    }
    const name = opName(op);
    const why = name && REFUSED[name];
    if (why) {
      this.fail(
        'refused-opcode',
        `refused: ${why}. vramlab reads plain data only (dicts, lists, tuples, strings, numbers); this file is not a memory snapshot or was tampered with`,
      );
    }
    this.fail('unknown-opcode', 'not a pickle opcode (damaged file, or not a pickle)');
  }

  /** APPENDS' work once its list is known to take them: the hook first, then the list. */
  private appendItems(list: PickleValue[], given: PickleValue[]): void {
    const append = this.hooks?.append;
    const items = append ? this.hook(() => append(list, given, this.hookContext())) : given;
    this.charge(items.length * HEAP_COST.element);
    for (const v of items) {
      if (v === list) this.fail('malformed', 'a list cannot contain itself');
      list.push(v);
    }
  }

  private stop(): PickleValue {
    const v = this.pop();
    if (this.stack.length || this.marks.length) {
      this.fail('malformed', `${this.stack.length} item(s) and ${this.marks.length} MARK(s) left on the stack at STOP`);
    }
    const after = this.src.base + this.src.i;
    if (!this.allowTrailing && after < this.src.length) {
      this.fail('malformed', `${this.src.length - after} byte(s) of trailing data after STOP`);
    }
    const maxValues = Math.max(this.limits.maxValues, this.limits.maxValuesPerByte * this.src.length);
    checkShape(v, this.limits.maxDepth, maxValues, this.shared, (what) =>
      what === 'depth'
        ? this.fail('limit', `values nested deeper than ${this.limits.maxDepth} levels`)
        : this.fail(
            'limit',
            `the value expands to more than ${maxValues} values (${this.limits.maxValuesPerByte} per input byte): ` +
              'it references the same data over and over (a "billion laughs" file), which no memory snapshot does',
          ),
    );
    return v;
  }

  private get(idx: number): void {
    const v = this.memo.get(idx);
    if (v === undefined) {
      // A value a hook consumed (a streamed trace event) can be referenced once: referencing
      // it again is reference amplification, the same limit checkShape enforces on a plain read.
      if (idx < this.memoCount && this.hooks)
        this.fail(
          'limit',
          `memo index ${idx} refers to a value already consumed (a trace event used twice): ` +
            'a file that references the same events over and over is a "billion laughs" file, which no memory snapshot is',
        );
      this.fail('bad-memo', `memo index ${idx} was never stored`);
    }
    // share() charges the new reference: a number for every slot it reaches, a container
    // like a copy of its slots, so what a hook gives back was always charged first.
    this.push(this.share(v));
  }

  private put(idx: number): void {
    if (this.memo.size >= this.limits.maxMemo && !this.memo.has(idx)) {
      this.fail('limit', `more than ${this.limits.maxMemo} memo entries`);
    }
    if (!this.memo.has(idx)) {
      this.memoCount++;
      this.charge(HEAP_COST.memoEntry);
    } else this.memoEpoch++;
    if (idx >= this.memoHigh) this.memoHigh = idx + 1;
    const old = this.memo.get(idx);
    if (this.hooks && old !== undefined && isContainer(old)) (old as Counted)[MEMO_HOLDS] = ((old as Counted)[MEMO_HOLDS] ?? 1) - 1;
    const v = this.top();
    this.memo.set(idx, v);
    if (this.hooks && isContainer(v)) (v as Counted)[MEMO_HOLDS] = ((v as Counted)[MEMO_HOLDS] ?? 0) + 1;
    const memoized = this.hooks?.memoized;
    if (memoized && isContainer(v)) this.hook(() => memoized(v, idx));
  }

  private memoIndex(s: string): number {
    if (!/^\d{1,15}$/.test(s)) this.fail('malformed', `bad memo index ${JSON.stringify(s.slice(0, 40))}`);
    return Number(s);
  }

  // ---- argument decoding --------------------------------------------------------------

  private decimal(s: string): number | bigint {
    const t = s.trim();
    if (t.length > this.limits.maxIntBytes) this.fail('limit', `integer of ${t.length} digits`);
    if (!/^[+-]?\d+$/.test(t)) this.fail('malformed', `bad integer ${JSON.stringify(t.slice(0, 40))}`);
    return normaliseInt(BigInt(t));
  }

  /** Little-endian two's complement, as LONG1/LONG4 store it. */
  private long(n: number): number | bigint {
    if (n > this.limits.maxIntBytes) this.fail('limit', `integer of ${n} bytes exceeds the ${this.limits.maxIntBytes}-byte limit`);
    if (n === 0) return 0;
    const idx = this.take(n);
    const buf = this.src.buf;
    if (n <= 6) return buf.readIntLE(idx, n);
    let v = 0n;
    for (let k = n - 1; k >= 0; k--) v = (v << 8n) | BigInt(buf[idx + k]);
    if (buf[idx + n - 1] & 0x80) v -= 1n << BigInt(8 * n);
    return normaliseInt(v);
  }

  private textFloat(s: string): number {
    const t = s.trim();
    if (t.length > this.limits.maxTextNumber) this.fail('limit', `float of ${t.length} characters`);
    const low = t.toLowerCase();
    if (low === 'nan' || low === '+nan' || low === '-nan') return NaN;
    if (low === 'inf' || low === '+inf' || low === 'infinity') return Infinity;
    if (low === '-inf' || low === '-infinity') return -Infinity;
    // No nested quantifiers over the same digits: linear, whatever the input.
    if (!/^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$/.test(t)) this.fail('malformed', `bad float ${JSON.stringify(t.slice(0, 40))}`);
    return Number(t);
  }

  /** STRING's argument: a quoted Python 2 repr with backslash escapes. */
  private quoted(s: string): Uint8Array {
    if (s.length < 2 || s[0] !== s[s.length - 1] || (s[0] !== "'" && s[0] !== '"')) {
      this.fail('malformed', 'the STRING argument must be quoted');
    }
    const body = s.slice(1, -1);
    const out: number[] = [];
    for (let k = 0; k < body.length; k++) {
      const c = body.charCodeAt(k);
      if (c !== 0x5c) {
        out.push(c & 0xff);
        continue;
      }
      const e = body[++k];
      if (e === undefined) this.fail('malformed', 'trailing backslash in STRING');
      if (e in ESCAPES) {
        if (ESCAPES[e] >= 0) out.push(ESCAPES[e]);
      } else if (e === 'x') {
        const h = body.slice(k + 1, k + 3);
        if (!/^[0-9a-fA-F]{2}$/.test(h)) this.fail('malformed', 'bad \\x escape in STRING');
        out.push(parseInt(h, 16));
        k += 2;
      } else if (/[0-7]/.test(e)) {
        let oct = e;
        while (oct.length < 3 && /[0-7]/.test(body[k + 1] ?? '')) oct += body[++k];
        out.push(parseInt(oct, 8) & 0xff);
      } else {
        out.push(0x5c, e.charCodeAt(0) & 0xff);
      }
    }
    return Uint8Array.from(out);
  }

  /** UNICODE's argument: latin-1 text where \uXXXX and \UXXXXXXXX stand for code points. */
  private rawUnicodeEscape(s: string): string {
    return s.replace(/\\(u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8})/g, (_m, hex: string) => {
      const cp = parseInt(hex.slice(1), 16);
      if (cp > 0x10ffff) this.fail('malformed', `code point \\U${hex.slice(1)} is out of range`);
      return String.fromCodePoint(cp);
    });
  }
}

function typeName(v: PickleValue): string {
  if (v === null) return 'None';
  if (Array.isArray(v)) return 'a list';
  if (v instanceof Map) return 'a dict';
  if (v instanceof PyTuple) return 'a tuple';
  if (v instanceof PySet) return v.frozen ? 'a frozenset' : 'a set';
  if (v instanceof Uint8Array) return 'bytes';
  return typeof v === 'string' ? 'a str' : typeof v;
}

/** Iterative: a key of tuples nested a million deep must not overflow the call stack. */
function hashable(root: PickleValue): boolean {
  const todo: PickleValue[] = [root];
  while (todo.length) {
    const v = todo.pop()!;
    if (Array.isArray(v) || v instanceof Map || (v instanceof PySet && !v.frozen) || v instanceof Uint8Array) {
      // bytes are hashable in Python, but a Uint8Array key would compare by identity here.
      return false;
    }
    if (v instanceof PyTuple) for (const it of v.items) todo.push(it);
  }
  return true;
}

/**
 * Depth and expanded size of the (acyclic) result, walked without recursion. Shared
 * containers are measured once and their figures reused, so this walk is linear in the
 * input even when the expanded size is astronomical; it stops as soon as either limit is
 * passed. Dict keys count as values (a walker visits them too).
 */
function checkShape(
  root: PickleValue,
  maxDepth: number,
  maxValues: number,
  shared: Set<Container>,
  fail: (code: 'depth' | 'values') => never,
): void {
  if (!isContainer(root)) return;
  const known = new Map<Container, { depth: number; size: number }>(); // per shared container
  type F = { c: Container; kids: readonly PickleValue[]; k: number; below: number; level: number; start: number };
  const kidsOf = (c: Container): readonly PickleValue[] =>
    Array.isArray(c) ? c : c instanceof Map ? [...c.keys(), ...c.values()] : c.items;
  let values = 1; // the root
  const stack: F[] = [{ c: root, kids: kidsOf(root), k: 0, below: 0, level: 1, start: 0 }];
  while (stack.length) {
    const f = stack[stack.length - 1];
    if (f.k < f.kids.length) {
      const kid = f.kids[f.k++];
      if (!isContainer(kid)) {
        if (++values > maxValues) fail('values');
        continue;
      }
      const seen = known.get(kid);
      if (seen !== undefined) {
        if (f.level + seen.depth > maxDepth) fail('depth');
        values += seen.size;
        if (values > maxValues) fail('values');
        f.below = Math.max(f.below, seen.depth);
        continue;
      }
      if (f.level + 1 > maxDepth) fail('depth');
      if (++values > maxValues) fail('values');
      stack.push({ c: kid, kids: kidsOf(kid), k: 0, below: 0, level: f.level + 1, start: values - 1 });
      continue;
    }
    stack.pop();
    const depth = f.below + 1;
    if (shared.has(f.c)) known.set(f.c, { depth, size: values - f.start });
    if (stack.length) {
      const parent = stack[stack.length - 1];
      parent.below = Math.max(parent.below, depth);
    }
  }
}

// A streaming read counts, on each container, the references beyond its first (GET, DUP)
// not dropped yet (-1 once every one was) and the memo entries holding it. Symbol-keyed
// properties: walkers of the value (for-of, Map iteration) never see them.
const EXTRA_REFS = Symbol('extraRefs');
const MEMO_HOLDS = Symbol('memoHolds');
type Counted = Container & { [EXTRA_REFS]?: number; [MEMO_HOLDS]?: number };

/** A container's own estimated heap bytes (its slots; what it holds is counted apart). */
function shallowCost(c: Container): number {
  if (Array.isArray(c)) return HEAP_COST.list + c.length * HEAP_COST.element;
  if (c instanceof Map) return HEAP_COST.dict + c.size * HEAP_COST.dictEntry;
  if (c instanceof PyTuple) return HEAP_COST.tuple + c.items.length * 8;
  return HEAP_COST.set + c.items.length * HEAP_COST.element;
}

const heapNumberCost = (v: PickleValue): number =>
  typeof v !== 'number' || (Number.isInteger(v) && v >= -(2 ** 31) && v < 2 ** 31) ? 0 : HEAP_COST.heapNumber;

/** The heap numbers a container's slots hold (values only: dict keys are rarely numbers). */
function numbersIn(c: Container): number {
  let n = 0;
  for (const v of Array.isArray(c) ? c : c instanceof Map ? c.values() : c.items) n += heapNumberCost(v);
  return n;
}

/** A scalar's estimated heap bytes: 0 for what V8 keeps in the slot itself (small ints, booleans, None). */
function scalarCost(v: PickleValue): number {
  if (typeof v === 'string') return HEAP_COST.string + 2 * v.length;
  if (typeof v === 'number') return heapNumberCost(v);
  if (typeof v === 'bigint') return HEAP_COST.bigint + 8 * Math.ceil(v.toString(16).length / 16);
  if (v instanceof Uint8Array) return HEAP_COST.bytes + v.length;
  return 0;
}
