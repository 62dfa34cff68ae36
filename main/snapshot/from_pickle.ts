// Validates a decoded snapshot pickle and converts it to the typed model. Every problem is
// reported with the path of the offending field. Handles the older layouts PyTorch's own
// viewer still reads (blocks with 'history' instead of 'frames', no requested_size).
import {
  ROUNDUP_INTERVALS,
  TRACE_ACTIONS,
  type BlockState,
  type Frame,
  type Frames,
  type Snapshot,
  type SnapshotAllocatorSettings,
  type SnapshotBlock,
  type SnapshotSegment,
  type TraceAction,
  type TraceEvent,
} from './model';
import type { AddressRange, CompactTraceBuilder } from './compact_trace';
import { PyFloat, PyTuple, type PickleValue, type PyDict } from './pickle/values';

export class SnapshotFormatError extends Error {
  override name = 'SnapshotFormatError';
  constructor(
    readonly path: string,
    what: string,
  ) {
    super(`not a valid PyTorch memory snapshot: ${path}: ${what}`);
  }
}

const BLOCK_STATES: ReadonlySet<string> = new Set(['active_allocated', 'active_pending_free', 'inactive']);
const ACTIONS: ReadonlySet<string> = new Set(TRACE_ACTIONS);
const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);
const MAX_ADDRESS = (1n << 64n) - 1n;

function describe(v: PickleValue | undefined): string {
  if (v === undefined) return 'nothing (missing)';
  if (v === null) return 'None';
  if (Array.isArray(v)) return 'a list';
  if (v instanceof Map) return 'a dict';
  if (v instanceof PyTuple) return 'a tuple';
  if (v instanceof Uint8Array) return 'bytes';
  if (typeof v === 'string') return `a str (${JSON.stringify(v.length > 40 ? v.slice(0, 40) + '...' : v)})`;
  if (typeof v === 'object') return 'a ' + v.constructor.name;
  return `${typeof v} ${String(v)}`;
}

interface StackNode {
  next: Map<object, StackNode>;
  frames: Frames | null;
}

export class Converter {
  // Weak: a streamed snapshot lets go of each event's pickle objects once converted.
  private frameCache = new WeakMap<object, Frame>();
  private framesCache = new WeakMap<object, Frames>();
  /** Stacks by content (frame identities): PyTorch writes a new list per allocation. */
  private stackRoot: StackNode = { next: new Map(), frames: null };
  /** Set when any address is above 2^53 (then all are stored relative to it). */
  base = 0n;

  dict(v: PickleValue | undefined, path: string): PyDict {
    if (!(v instanceof Map)) throw new SnapshotFormatError(path, `expected a dict, got ${describe(v)}`);
    return v;
  }

  list(v: PickleValue | undefined, path: string): readonly PickleValue[] {
    if (Array.isArray(v)) return v;
    if (v instanceof PyTuple) return v.items;
    throw new SnapshotFormatError(path, `expected a list, got ${describe(v)}`);
  }

  int(v: PickleValue | undefined, path: string): number {
    if (typeof v === 'number' && Number.isInteger(v)) return v;
    if (typeof v === 'boolean') return v ? 1 : 0;
    if (typeof v === 'bigint') throw new SnapshotFormatError(path, `integer ${v} is too large (above 2^53)`);
    throw new SnapshotFormatError(path, `expected an int, got ${describe(v)}`);
  }

  size(v: PickleValue | undefined, path: string): number {
    const n = this.int(v, path);
    if (n < 0) throw new SnapshotFormatError(path, `expected a size (>= 0), got ${n}`);
    return n;
  }

  /** Timestamps lose sub-microsecond exactness above 2^53 rather than fail. */
  time(v: PickleValue | undefined, path: string): number {
    if (v === undefined) return 0;
    if (typeof v === 'bigint') return Number(v);
    return this.int(v, path);
  }

  address(v: PickleValue | undefined, path: string): number {
    if (typeof v === 'bigint') {
      const rel = v - this.base;
      if (rel < 0n || rel > MAX_SAFE) throw new SnapshotFormatError(path, `address ${v} is outside the range this snapshot spans`);
      return Number(rel);
    }
    const n = this.int(v, path);
    if (n < 0) throw new SnapshotFormatError(path, `expected an address (>= 0), got ${n}`);
    if (this.base === 0n) return n;
    const rel = BigInt(n) - this.base;
    if (rel < 0n || rel > MAX_SAFE) throw new SnapshotFormatError(path, `address ${n} is outside the range this snapshot spans`);
    return Number(rel);
  }

  /** An address as the file holds it (0 to 2^64 - 1), before any base is applied. */
  wholeAddress(v: PickleValue | undefined, path: string): number | bigint {
    if (typeof v === 'bigint') {
      if (v < 0n || v > MAX_ADDRESS) throw new SnapshotFormatError(path, `address ${v} is not a 64-bit address`);
      return v;
    }
    const n = this.int(v, path);
    if (n < 0) throw new SnapshotFormatError(path, `expected an address (>= 0), got ${n}`);
    return n;
  }

  float(v: PickleValue | undefined, path: string): number {
    if (typeof v === 'number') return v;
    if (v instanceof PyFloat) return v.value;
    if (typeof v === 'bigint') return Number(v);
    throw new SnapshotFormatError(path, `expected a number, got ${describe(v)}`);
  }

  bool(v: PickleValue | undefined, path: string): boolean {
    if (typeof v === 'boolean') return v;
    if (v === 0 || v === 1) return v === 1;
    throw new SnapshotFormatError(path, `expected a bool, got ${describe(v)}`);
  }

  str(v: PickleValue | undefined, path: string): string {
    if (typeof v === 'string') return v;
    throw new SnapshotFormatError(path, `expected a str, got ${describe(v)}`);
  }

  frame(v: PickleValue, path: string): Frame {
    const hit = typeof v === 'object' && v !== null ? this.frameCache.get(v) : undefined;
    if (hit) return hit;
    const d = this.dict(v, path);
    const f: Frame = {
      name: this.str(d.get('name'), `${path}.name`),
      filename: this.str(d.get('filename'), `${path}.filename`),
      line: this.int(d.get('line') ?? 0, `${path}.line`),
    };
    if (typeof v === 'object' && v !== null) this.frameCache.set(v, f);
    return f;
  }

  frames(v: PickleValue | undefined, pathOf: string | (() => string)): Frames {
    if (v === undefined || v === null) return EMPTY_FRAMES;
    const hit = typeof v === 'object' ? this.framesCache.get(v) : undefined;
    if (hit) return hit;
    const path = () => (typeof pathOf === 'string' ? pathOf : pathOf());
    const items = Array.isArray(v) ? v : this.list(v, path());
    // One Frames per distinct stack, however many lists spell it: a trie over the frame
    // dicts' identities (PyTorch memoizes each frame dict once), converted on first sight.
    let node = this.stackRoot;
    for (let i = 0; i < items.length; i++) {
      const raw = items[i];
      let next = typeof raw === 'object' && raw !== null ? node.next.get(raw) : undefined;
      if (!next) {
        next = { next: new Map(), frames: null };
        if (typeof raw === 'object' && raw !== null) node.next.set(raw, next);
      }
      node = next;
    }
    const list = node.frames ?? items.map((raw, i) => this.frame(raw, `${path()}[${i}]`));
    node.frames ??= list;
    if (typeof v === 'object') this.framesCache.set(v, node.frames);
    return node.frames;
  }

  /** Makes `stand` (a small placeholder left in the pickle memo) read as the stack of `v`. */
  aliasFrames(stand: object, frames: Frames): void {
    this.framesCache.set(stand, frames);
  }
}

const EMPTY_FRAMES: Frames = Object.freeze([]) as Frames;

/** Addresses the decoded part of the snapshot holds (streamed traces report their own). */
function addressRange(root: PyDict): AddressRange {
  const r: AddressRange = { big: false, min: undefined };
  const see = (v: PickleValue | undefined) => {
    if (typeof v === 'bigint') r.big = true;
    if (typeof v === 'number' || typeof v === 'bigint') {
      const b = BigInt(v);
      if (b > 0n && (r.min === undefined || b < r.min)) r.min = b;
    }
  };
  const segs = root.get('segments');
  if (Array.isArray(segs)) {
    for (const s of segs) {
      if (!(s instanceof Map)) continue;
      see(s.get('address'));
      const blocks = s.get('blocks');
      if (Array.isArray(blocks)) for (const b of blocks) if (b instanceof Map) see(b.get('address'));
    }
  }
  const traces = root.get('device_traces');
  if (Array.isArray(traces)) {
    for (const t of traces) {
      if (!Array.isArray(t)) continue;
      for (const e of t) if (e instanceof Map && e.get('action') !== 'oom' && e.get('action') !== 'snapshot') see(e.get('addr'));
    }
  }
  return r;
}

/**
 * 0 when every address fits a double exactly; else the smallest address (1 MiB aligned, so
 * offsets read naturally), and every address is stored relative to it.
 */
function addressBase(ranges: AddressRange[]): bigint {
  let big = false;
  let min: bigint | undefined;
  for (const r of ranges) {
    big ||= r.big;
    if (r.min !== undefined && (min === undefined || r.min < min)) min = r.min;
  }
  if (!big || min === undefined) return 0n;
  return min & ~0xfffffn;
}

/** Trace lists a streaming read consumed as it went (stream_load.ts): list -> its events. */
export type StreamedTraces = Map<PickleValue[], CompactTraceBuilder>;

export function snapshotFromPickle(value: PickleValue, streamed?: StreamedTraces, converter?: Converter): Snapshot {
  const c = converter ?? new Converter();
  const root = c.dict(value, 'snapshot');
  if (!root.has('segments') && !root.has('device_traces')) {
    throw new SnapshotFormatError('snapshot', "a dict without 'segments' or 'device_traces' (not from torch.cuda.memory._snapshot())");
  }
  // Streamed events kept their whole addresses: the base covers them too, in one pass.
  c.base = addressBase([addressRange(root), ...[...(streamed?.values() ?? [])].map((b) => b.addressRange())]);

  const segments: SnapshotSegment[] = c.list(root.get('segments') ?? [], 'segments').map((s, i) => segment(c, s, `segments[${i}]`));

  const tracesRaw = root.get('device_traces');
  let used = 0;
  const deviceTraces: TraceEvent[][] =
    tracesRaw === undefined
      ? []
      : c.list(tracesRaw, 'device_traces').map((t, d) => {
          const done = Array.isArray(t) ? streamed?.get(t) : undefined;
          if (done) {
            if ((t as PickleValue[]).length)
              throw new SnapshotFormatError(`device_traces[${d}]`, 'a trace list mixes events with other values');
            used++;
            return done.finish(c.base, (i, a) => {
              throw new SnapshotFormatError(`device_traces[${d}][${i}].addr`, `address ${a} is outside the range this snapshot spans`);
            });
          }
          return c.list(t, `device_traces[${d}]`).map((e, i) => event(c, e, `device_traces[${d}][${i}]`));
        });
  if (streamed && used !== streamed.size) {
    throw new SnapshotFormatError('snapshot', 'trace events (dicts with an action) found outside device_traces');
  }

  const settingsRaw = root.get('allocator_settings');
  const allocatorSettings = settingsRaw === undefined ? null : settings(c, settingsRaw);

  const other = new Map<string, PickleValue>();
  for (const [k, v] of root) {
    if (k === 'segments' || k === 'device_traces' || k === 'allocator_settings') continue;
    if (typeof k === 'string') other.set(k, v);
  }
  return { segments, deviceTraces, allocatorSettings, addressBase: c.base, other };
}

function segment(c: Converter, raw: PickleValue, path: string): SnapshotSegment {
  const d = c.dict(raw, path);
  const address = c.address(d.get('address'), `${path}.address`);
  const totalSize = c.size(d.get('total_size'), `${path}.total_size`);
  const type = d.get('segment_type') ?? 'large';
  if (type !== 'large' && type !== 'small') {
    throw new SnapshotFormatError(`${path}.segment_type`, `expected 'large' or 'small', got ${describe(type)}`);
  }
  const poolRaw = d.get('segment_pool_id');
  const pool = poolRaw === undefined ? [0, 0] : c.list(poolRaw, `${path}.segment_pool_id`);
  if (pool.length !== 2) throw new SnapshotFormatError(`${path}.segment_pool_id`, 'expected a pair');

  const blocks: SnapshotBlock[] = [];
  let at = address;
  c.list(d.get('blocks') ?? [], `${path}.blocks`).forEach((b, i) => {
    const blk = block(c, b, `${path}.blocks[${i}]`, at);
    blocks.push(blk);
    at = blk.address + blk.size;
  });
  const covered = blocks.reduce((n, b) => n + b.size, 0);
  if (blocks.length && covered !== totalSize) {
    throw new SnapshotFormatError(`${path}.blocks`, `blocks cover ${covered} bytes but the segment is ${totalSize}`);
  }

  const sumIf = (pred: (b: SnapshotBlock) => boolean, f: (b: SnapshotBlock) => number) => blocks.filter(pred).reduce((n, b) => n + f(b), 0);
  return {
    device: c.int(d.get('device') ?? 0, `${path}.device`),
    address,
    totalSize,
    allocatedSize: d.has('allocated_size')
      ? c.size(d.get('allocated_size'), `${path}.allocated_size`)
      : sumIf(
          (b) => b.state === 'active_allocated',
          (b) => b.size,
        ),
    activeSize: d.has('active_size')
      ? c.size(d.get('active_size'), `${path}.active_size`)
      : sumIf(
          (b) => b.state !== 'inactive',
          (b) => b.size,
        ),
    requestedSize: d.has('requested_size')
      ? c.size(d.get('requested_size'), `${path}.requested_size`)
      : sumIf(
          (b) => b.state !== 'inactive',
          (b) => b.requestedSize,
        ),
    stream: c.int(d.get('stream') ?? 0, `${path}.stream`),
    segmentType: type,
    segmentPoolId: [c.int(pool[0], `${path}.segment_pool_id[0]`), c.int(pool[1], `${path}.segment_pool_id[1]`)],
    isExpandable: c.bool(d.get('is_expandable') ?? false, `${path}.is_expandable`),
    frames: c.frames(d.get('frames'), `${path}.frames`),
    blocks,
  };
}

function block(c: Converter, raw: PickleValue, path: string, expectedAddress: number): SnapshotBlock {
  const d = c.dict(raw, path);
  const size = c.size(d.get('size'), `${path}.size`);
  const state = d.get('state');
  if (typeof state !== 'string' || !BLOCK_STATES.has(state)) {
    throw new SnapshotFormatError(`${path}.state`, `expected one of ${[...BLOCK_STATES].join(', ')}, got ${describe(state)}`);
  }
  // Blocks tile their segment in order; older snapshots omit their address.
  const address = d.has('address') ? c.address(d.get('address'), `${path}.address`) : expectedAddress;
  if (address !== expectedAddress) {
    throw new SnapshotFormatError(`${path}.address`, `expected ${expectedAddress} (blocks must tile the segment), got ${address}`);
  }
  let frames: Frames;
  let requested: number;
  if (d.has('frames')) {
    frames = c.frames(d.get('frames'), `${path}.frames`);
    requested = d.has('requested_size') ? c.size(d.get('requested_size'), `${path}.requested_size`) : size;
  } else {
    // Legacy layout: the allocation's context sits in history[0].
    const history = d.get('history');
    const h0 = history === undefined ? undefined : c.list(history, `${path}.history`)[0];
    const hd = h0 === undefined ? undefined : c.dict(h0, `${path}.history[0]`);
    frames = hd ? c.frames(hd.get('frames'), `${path}.history[0].frames`) : EMPTY_FRAMES;
    requested = d.has('requested_size')
      ? c.size(d.get('requested_size'), `${path}.requested_size`)
      : hd
        ? c.size(hd.get('real_size') ?? size, `${path}.history[0].real_size`)
        : size;
  }
  return { address, size, requestedSize: requested, state: state as BlockState, frames };
}

const isCount = (v: PickleValue | undefined): v is number => typeof v === 'number' && Number.isInteger(v) && v >= 0;

/** Reads an event's addr; the streaming read keeps whole addresses (Converter.wholeAddress). */
export type AddressReader = (v: PickleValue | undefined, path: string) => number;

/** `path` is built only when something is wrong: millions of events are read. */
export function event(c: Converter, raw: PickleValue, path: string | (() => string), addressOf?: AddressReader): TraceEvent {
  // The common, well-formed event without building a path for each field.
  if (raw instanceof Map && c.base === 0n) {
    const action = raw.get('action');
    const addr = raw.get('addr');
    const size = raw.get('size');
    const stream = raw.get('stream') ?? 0;
    const time = raw.get('time_us');
    if (
      typeof action === 'string' &&
      ACTIONS.has(action) &&
      action !== 'oom' &&
      action !== 'snapshot' &&
      isCount(addr) &&
      isCount(size) &&
      typeof stream === 'number' &&
      Number.isInteger(stream) &&
      (time === undefined || (typeof time === 'number' && Number.isInteger(time))) &&
      !raw.has('compile_context') &&
      !raw.has('user_metadata')
    ) {
      return {
        action: action as TraceAction,
        addr,
        size,
        stream,
        timeUs: time ?? 0,
        frames: c.frames(raw.get('frames'), () => `${typeof path === 'string' ? path : path()}.frames`),
      };
    }
  }
  return eventChecked(c, raw, typeof path === 'string' ? path : path(), addressOf ?? ((v, p) => c.address(v, p)));
}

function eventChecked(c: Converter, raw: PickleValue, path: string, addressOf: AddressReader): TraceEvent {
  const d = c.dict(raw, path);
  const action = d.get('action');
  if (typeof action !== 'string' || !ACTIONS.has(action)) {
    throw new SnapshotFormatError(`${path}.action`, `expected one of ${TRACE_ACTIONS.join(', ')}, got ${describe(action)}`);
  }
  const isOom = action === 'oom';
  const e: TraceEvent = {
    action: action as TraceAction,
    addr: isOom || action === 'snapshot' ? 0 : addressOf(d.get('addr'), `${path}.addr`),
    size: c.size(d.get('size') ?? 0, `${path}.size`),
    stream: c.int(d.get('stream') ?? 0, `${path}.stream`),
    timeUs: c.time(d.get('time_us'), `${path}.time_us`),
    frames: c.frames(d.get('frames'), `${path}.frames`),
  };
  if (isOom) e.deviceFree = c.size(d.get('device_free') ?? 0, `${path}.device_free`);
  const cc = d.get('compile_context');
  if (cc !== undefined) e.compileContext = c.str(cc, `${path}.compile_context`);
  const um = d.get('user_metadata');
  if (um !== undefined) e.userMetadata = c.str(um, `${path}.user_metadata`);
  return e;
}

function settings(c: Converter, raw: PickleValue): SnapshotAllocatorSettings {
  const path = 'allocator_settings';
  const d = c.dict(raw, path);
  const known = new Set([
    'PYTORCH_CUDA_ALLOC_CONF',
    'max_split_size',
    'garbage_collection_threshold',
    'expandable_segments',
    'roundup_power2_divisions',
  ]);
  const maxSplit = d.has('max_split_size') ? d.get('max_split_size') : -1;
  // PyTorch writes SIZE_MAX cast to int64 (-1) for "unlimited"; accept the raw SIZE_MAX too.
  const unlimited = maxSplit === -1 || (typeof maxSplit === 'bigint' && maxSplit >= (1n << 63n) - 1n);
  const roundup = new Array<number>(ROUNDUP_INTERVALS).fill(0);
  const rd = d.get('roundup_power2_divisions');
  if (rd !== undefined) {
    if (rd instanceof Map) {
      for (const [k, v] of rd) {
        const mb = Number(k);
        if (!Number.isInteger(mb) || mb <= 0 || (mb & (mb - 1)) !== 0) {
          throw new SnapshotFormatError(`${path}.roundup_power2_divisions`, `key ${String(k)} is not a power of two`);
        }
        const idx = Math.min(Math.log2(mb), ROUNDUP_INTERVALS - 1);
        roundup[idx] = c.size(v, `${path}.roundup_power2_divisions[${String(k)}]`);
      }
    } else {
      c.list(rd, `${path}.roundup_power2_divisions`).forEach((v, i) => {
        if (i < ROUNDUP_INTERVALS) roundup[i] = c.size(v, `${path}.roundup_power2_divisions[${i}]`);
      });
    }
  }
  const other = new Map<string, PickleValue>();
  for (const [k, v] of d) if (typeof k === 'string' && !known.has(k)) other.set(k, v);
  return {
    conf: d.has('PYTORCH_CUDA_ALLOC_CONF') ? c.str(d.get('PYTORCH_CUDA_ALLOC_CONF'), `${path}.PYTORCH_CUDA_ALLOC_CONF`) : '',
    maxSplitSize: unlimited ? null : c.size(maxSplit, `${path}.max_split_size`),
    garbageCollectionThreshold: d.has('garbage_collection_threshold')
      ? c.float(d.get('garbage_collection_threshold'), `${path}.garbage_collection_threshold`)
      : 0,
    expandableSegments: d.has('expandable_segments') ? c.bool(d.get('expandable_segments'), `${path}.expandable_segments`) : false,
    roundupPower2Divisions: roundup,
    other,
  };
}
