// A device trace kept in typed arrays: about 40 bytes an event instead of the ~600 a
// decoded pickle dict and its TraceEvent take, so a 5-million-event snapshot fits in a few
// hundred MB. Views read it through an array-like proxy that builds each TraceEvent when
// indexed (index, length, iteration, slice, filter... all work), so every fold over a trace
// works on either form. Stacks are interned: events that share a stack share one Frames.
//
// While the file is read, addresses are kept whole (two 32-bit words: the same 8 bytes a
// double takes, exact up to 2^64): the base that addresses above 2^53 are stored relative
// to is only known once the whole file has been seen, and finish() applies it in one pass
// over the arrays instead of a second decode of the file.
import { TRACE_ACTIONS, type Frames, type TraceAction, type TraceEvent } from './model';

const ACTION_CODE = new Map<TraceAction, number>(TRACE_ACTIONS.map((a, i) => [a, i]));
/** Actions whose addr is not an address (always 0 in the model). */
const OOM = ACTION_CODE.get('oom')!;
const SNAPSHOT = ACTION_CODE.get('snapshot')!;
const noAddress = (code: number) => code === OOM || code === SNAPSHOT;
const WORD = 2 ** 32;
/** hi word of 2^53: an address at or above it does not fit a double exactly. */
const HI_2_53 = 2 ** 21;

/** What finish() needs to know to pick the base (see from_pickle's addressBase). */
export interface AddressRange {
  /** Some address is above 2^53. */
  big: boolean;
  /** The lowest non-zero address, if any. */
  min: bigint | undefined;
}

export class CompactTraceBuilder {
  length = 0;
  private action = new Uint8Array(1024);
  private addrHi = new Uint32Array(1024);
  private addrLo = new Uint32Array(1024);
  private size = new Float64Array(1024);
  private time = new Float64Array(1024);
  private stream = new Uint16Array(1024);
  private frames = new Uint32Array(1024);
  private readonly streams: number[] = [];
  private readonly streamIndex = new Map<number, number>();
  private readonly stacks: Frames[] = [];
  private readonly stackIndex = new Map<Frames, number>();
  // One-entry caches: consecutive events mostly share a stream and often a stack.
  private lastStream = NaN;
  private lastStreamIdx = 0;
  private lastFrames: Frames | null = null;
  private lastFramesIdx = 0;
  /** compile_context and user_metadata per event: 1 + an index in texts, 0 when absent. */
  private compileContext: Uint32Array | null = null;
  private userMetadata: Uint32Array | null = null;
  private readonly texts: string[] = [];
  private readonly textIndex = new Map<string, number>();
  private lastText: string | null = null;
  private lastTextIdx = 0;
  /** oom events' device_free, by event index (rare). */
  private readonly deviceFree = new Map<number, number>();

  /** `address` is the event's whole address (0 to 2^64 - 1); e.addr is not read. */
  push(e: TraceEvent, address: number | bigint): void {
    const code = ACTION_CODE.get(e.action)!;
    let hi = 0;
    let lo = 0;
    if (noAddress(code)) {
      // oom and snapshot events have no address.
    } else if (typeof address === 'bigint') {
      hi = Number(address >> 32n);
      lo = Number(address & 0xffffffffn);
    } else {
      hi = Math.floor(address / WORD);
      lo = address % WORD;
    }
    const i = this.pushRaw(code, hi, lo, e.size, e.timeUs, e.stream, e.frames, e.compileContext, e.userMetadata);
    if (e.deviceFree !== undefined) this.deviceFree.set(i, e.deviceFree);
  }

  /**
   * One event from its fields (the reader's fast path decodes straight into this): `code`
   * an index in TRACE_ACTIONS, the address as two 32-bit words. Returns its index.
   */
  pushRaw(
    code: number,
    hi: number,
    lo: number,
    size: number,
    time: number,
    stream: number,
    frames: Frames,
    compileContext: string | undefined,
    userMetadata: string | undefined,
  ): number {
    if (this.length === this.action.length) this.grow();
    const i = this.length++;
    this.action[i] = code;
    this.addrHi[i] = hi;
    this.addrLo[i] = lo;
    this.size[i] = size;
    this.time[i] = time;
    let st = stream === this.lastStream ? this.lastStreamIdx : this.streamIndex.get(stream);
    if (st === undefined) {
      // A RangeError: the reader reports it as a limit, with the offset.
      if (this.streams.length >= 0xffff) throw new RangeError('a trace with more than 65535 distinct streams is not supported');
      st = this.streams.length;
      this.streams.push(stream);
      this.streamIndex.set(stream, st);
    }
    this.lastStream = stream;
    this.lastStreamIdx = st;
    this.stream[i] = st;
    let f = frames === this.lastFrames ? this.lastFramesIdx : this.stackIndex.get(frames);
    if (f === undefined) {
      f = this.stacks.length;
      this.stacks.push(frames);
      this.stackIndex.set(frames, f);
    }
    this.lastFrames = frames;
    this.lastFramesIdx = f;
    this.frames[i] = f;
    // PyTorch 2.11 writes both on every event ('N/A' and ''): interned, 4 bytes an event each.
    if (compileContext !== undefined) (this.compileContext ??= new Uint32Array(this.action.length))[i] = this.text(compileContext);
    if (userMetadata !== undefined) (this.userMetadata ??= new Uint32Array(this.action.length))[i] = this.text(userMetadata);
    return i;
  }

  /** 1 + the index of s in texts (0 stands for "absent"). */
  private text(s: string): number {
    if (s === this.lastText) return this.lastTextIdx;
    let k = this.textIndex.get(s);
    if (k === undefined) {
      this.texts.push(s);
      k = this.texts.length;
      this.textIndex.set(s, k);
    }
    this.lastText = s;
    this.lastTextIdx = k;
    return k;
  }

  private grow(): void {
    // 1.5x: the arrays are the trace's whole footprint, and a doubling wastes up to half.
    const n = Math.ceil(this.action.length * 1.5);
    const g = <T extends { length: number; set(a: T): void }>(a: T, make: (n: number) => T) => {
      const b = make(n);
      b.set(a);
      return b;
    };
    this.action = g(this.action, (k) => new Uint8Array(k));
    this.addrHi = g(this.addrHi, (k) => new Uint32Array(k));
    this.addrLo = g(this.addrLo, (k) => new Uint32Array(k));
    this.size = g(this.size, (k) => new Float64Array(k));
    this.time = g(this.time, (k) => new Float64Array(k));
    this.stream = g(this.stream, (k) => new Uint16Array(k));
    this.frames = g(this.frames, (k) => new Uint32Array(k));
    if (this.compileContext) this.compileContext = g(this.compileContext, (k) => new Uint32Array(k));
    if (this.userMetadata) this.userMetadata = g(this.userMetadata, (k) => new Uint32Array(k));
  }

  /** The lowest address and whether any is above 2^53 (one pass over the arrays). */
  addressRange(): AddressRange {
    let big = false;
    let minHi = Infinity;
    let minLo = Infinity;
    for (let i = 0; i < this.length; i++) {
      if (noAddress(this.action[i])) continue;
      const hi = this.addrHi[i];
      const lo = this.addrLo[i];
      if (hi >= HI_2_53) big = true;
      if ((hi !== 0 || lo !== 0) && (hi < minHi || (hi === minHi && lo < minLo))) {
        minHi = hi;
        minLo = lo;
      }
    }
    return { big, min: minHi === Infinity ? undefined : (BigInt(minHi) << 32n) | BigInt(minLo) };
  }

  /**
   * The finished trace as an array-like of TraceEvents (views: no copy at the peak), its
   * addresses relative to `base`. An address the base leaves outside 0..2^53 is reported
   * through `outOfRange` (which throws).
   */
  finish(base: bigint, outOfRange: (index: number, address: bigint) => never): TraceEvent[] {
    const n = this.length;
    const bHi = Number(base >> 32n);
    const bLo = Number(base & 0xffffffffn);
    const addr = new Float64Array(n);
    for (let i = 0; i < n; i++) {
      const hi = this.addrHi[i];
      const lo = this.addrLo[i];
      if (noAddress(this.action[i])) continue;
      // Exact: both differences are integers under 2^33, and a result that is not exact
      // (beyond 2^53) is refused.
      const rel = (hi - bHi) * WORD + (lo - bLo);
      if (rel < 0 || rel > Number.MAX_SAFE_INTEGER) outOfRange(i, (BigInt(hi) << 32n) | BigInt(lo));
      addr[i] = rel;
    }
    this.addrHi = this.addrLo = new Uint32Array(0);
    const data: CompactTraceData = {
      length: n,
      action: this.action.subarray(0, n),
      addr,
      size: this.size.subarray(0, n),
      time: this.time.subarray(0, n),
      stream: this.stream.subarray(0, n),
      frames: this.frames.subarray(0, n),
      streams: this.streams,
      stacks: this.stacks,
      deviceFree: this.deviceFree,
      compileContext: this.compileContext?.subarray(0, n) ?? null,
      userMetadata: this.userMetadata?.subarray(0, n) ?? null,
      texts: this.texts,
    };
    return compactTraceView(data);
  }
}

export interface CompactTraceData {
  length: number;
  action: Uint8Array;
  addr: Float64Array;
  size: Float64Array;
  time: Float64Array;
  stream: Uint16Array;
  frames: Uint32Array;
  streams: number[];
  stacks: Frames[];
  deviceFree: Map<number, number>;
  /** Per event, 1 + an index in texts (0: the event has no such field); null when no event has. */
  compileContext: Uint32Array | null;
  userMetadata: Uint32Array | null;
  texts: string[];
}

const COMPACT = Symbol('compactTrace');

/** The typed arrays behind a trace view, or null for a plain array. */
export function compactData(events: readonly TraceEvent[]): CompactTraceData | null {
  return (events as unknown as { [COMPACT]?: CompactTraceData })[COMPACT] ?? null;
}

function eventAt(d: CompactTraceData, i: number): TraceEvent {
  const e: TraceEvent = {
    action: TRACE_ACTIONS[d.action[i]],
    addr: d.addr[i],
    size: d.size[i],
    stream: d.streams[d.stream[i]],
    timeUs: d.time[i],
    frames: d.stacks[d.frames[i]],
  };
  const free = d.deviceFree.get(i);
  if (free !== undefined) e.deviceFree = free;
  const cc = d.compileContext?.[i];
  if (cc) e.compileContext = d.texts[cc - 1];
  const um = d.userMetadata?.[i];
  if (um) e.userMetadata = d.texts[um - 1];
  return e;
}

/** A read-only array view: `view[i]` builds event i; writes are refused. */
export function compactTraceView(d: CompactTraceData): TraceEvent[] {
  const index = (p: string | symbol): number => {
    if (typeof p !== 'string') return -1;
    const c = p.charCodeAt(0);
    if (c < 48 || c > 57) return -1;
    const i = Number(p);
    return Number.isInteger(i) && i >= 0 && i < d.length ? i : -1;
  };
  return new Proxy([] as TraceEvent[], {
    get(target, p, receiver) {
      if (p === 'length') return d.length;
      if (p === COMPACT) return d;
      const i = index(p);
      if (i >= 0) return eventAt(d, i);
      return Reflect.get(target, p, receiver);
    },
    has(target, p) {
      return index(p) >= 0 || Reflect.has(target, p);
    },
    set() {
      throw new TypeError('a snapshot trace is read-only');
    },
    getOwnPropertyDescriptor(target, p) {
      const i = index(p);
      if (i >= 0) return { value: eventAt(d, i), writable: false, enumerable: true, configurable: true };
      if (p === 'length') return { value: d.length, writable: true, enumerable: false, configurable: false };
      return Reflect.getOwnPropertyDescriptor(target, p);
    },
    ownKeys() {
      return [...Array.from({ length: d.length }, (_, i) => String(i)), 'length'];
    },
  });
}

/** The TRACE_ACTIONS index of an action that has an address, or -1 (oom, snapshot, unknown). */
export function addressedActionCode(action: string): number {
  const code = ACTION_CODE.get(action as TraceAction);
  return code === undefined || noAddress(code) ? -1 : code;
}

/**
 * events[i] for a loop over a whole trace: a trace view's events are built from its typed
 * arrays directly, without the view's Proxy trap on every index (most of a walk's time).
 */
export function eventReader(events: readonly TraceEvent[]): (i: number) => TraceEvent {
  const d = compactData(events);
  return d ? (i: number) => eventAt(d, i) : (i: number) => events[i];
}

/**
 * As eventReader, for a walk that reads an event's fields and keeps none of the event:
 * one object is refilled on every call (action, addr, size, stream, timeUs, frames,
 * deviceFree), so a walk over millions of events allocates nothing per event.
 */
export function eventCursor(events: readonly TraceEvent[]): (i: number) => TraceEvent {
  const d = compactData(events);
  if (!d) return (i: number) => events[i];
  const cur: TraceEvent = { action: 'alloc', addr: 0, size: 0, stream: 0, timeUs: 0, frames: [], deviceFree: undefined };
  return (i: number) => {
    cur.action = TRACE_ACTIONS[d.action[i]];
    cur.addr = d.addr[i];
    cur.size = d.size[i];
    cur.stream = d.streams[d.stream[i]];
    cur.timeUs = d.time[i];
    cur.frames = d.stacks[d.frames[i]];
    cur.deviceFree = d.deviceFree.size ? d.deviceFree.get(i) : undefined;
    return cur;
  };
}

/** Addresses of the trace's segment_alloc events, in order. */
export function segmentAllocAddresses(events: readonly TraceEvent[]): number[] {
  const out: number[] = [];
  const d = compactData(events);
  if (d) {
    const code = ACTION_CODE.get('segment_alloc')!;
    for (let i = 0; i < d.length; i++) if (d.action[i] === code) out.push(d.addr[i]);
  } else for (const e of events) if (e.action === 'segment_alloc') out.push(e.addr);
  return out;
}
