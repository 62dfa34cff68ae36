// `run.progress` as one binary frame, the shape both transports carry (a WebSocket binary
// frame, an Electron IPC Uint8Array): the samples and allocator events as typed columns, the
// few scalars and the strings they use as a short JSON header. A run with history streams
// tens of thousands of events; as JSON (~170 bytes an event) encoding and parsing them cost
// the app more than the run. The page decodes a frame once, checking every bound: a frame
// that is short, long, inconsistent or out of range is refused with a PackedFrameError.
//
// Layout (little-endian; the column blocks start at multiples of 8):
//   0 u32 magic 'VLPK' · 4 u16 version · 6 u16 categories C · 8 u32 header bytes H
//   12 u32 samples S · 16 u32 events E · 20 u32 zero
//   24 header: UTF-8 JSON {runId, dropped, phase, iteration, seq, strings}, zero-padded to 8
//   f64 columns: t, allocated, reserved, active, requested, by[0..C) (S each); t, addr, size,
//                blockSize (E each; blockSize NaN when absent)
//   i32 columns (E each): kind (0 phase, 1 alloc), text (action | name), module, tag (op or
//                -1 | edge 0 begin, 1 end), n0 (category or -1 | iteration), n1 (0 | micro_batch)
import { CATEGORIES, type MemorySample, type RunEvent, type RunProgress } from './runs';
import type { EventMessage } from './messages';
import { MAX_FRAME_CHARS } from './frame_limits';

export const PACKED_MAGIC = 0x4b504c56; // "VLPK" read as a little-endian u32
export const PACKED_VERSION = 1;
/** The most bytes a packed frame may have: the bound on any one frame the server sends. */
export const MAX_PACKED_BYTES = MAX_FRAME_CHARS;
const HEAD = 24;
const SAMPLE_HEAD = 5;
const EVENT_F64 = 4;
const EVENT_I32 = 6;
const C = CATEGORIES.length;
const CATEGORY_INDEX = new Map<string, number>(CATEGORIES.map((c, i) => [c, i]));

export class PackedFrameError extends Error {
  constructor(message: string) {
    super(`malformed run.progress frame: ${message}`);
    this.name = 'PackedFrameError';
  }
}

interface Header {
  runId: string;
  dropped: number;
  phase: string;
  iteration: number;
  seq: number;
  strings: string[];
}

const pad8 = (n: number) => (n + 7) & ~7;

function sizeOf(headerBytes: number, samples: number, events: number): number {
  return HEAD + pad8(headerBytes) + 8 * ((SAMPLE_HEAD + C) * samples + EVENT_F64 * events) + 4 * EVENT_I32 * events;
}

/** The batch as one frame, or null when it would be larger than MAX_PACKED_BYTES (the
 *  sender then falls back to JSON) or holds a value the columns cannot carry. */
export function packProgress(p: RunProgress): Uint8Array | null {
  const S = p.samples.length;
  const E = p.events.length;
  const strings: string[] = [];
  const ids = new Map<string, number>();
  const intern = (s: string): number => {
    let i = ids.get(s);
    if (i === undefined) {
      ids.set(s, (i = strings.length));
      strings.push(s);
    }
    return i;
  };
  const i32 = new Int32Array(EVENT_I32 * E);
  for (let k = 0; k < E; k++) {
    const e = p.events[k];
    if (e.type === 'alloc') {
      const cat = e.category === '' ? -1 : CATEGORY_INDEX.get(e.category);
      if (cat === undefined) return null;
      i32[k] = 1;
      i32[E + k] = intern(e.action);
      i32[2 * E + k] = intern(e.module);
      i32[3 * E + k] = e.op === undefined ? -1 : intern(e.op);
      i32[4 * E + k] = cat;
    } else {
      if (!Number.isInteger(e.iteration) || !Number.isInteger(e.micro_batch)) return null;
      i32[E + k] = intern(e.name);
      i32[2 * E + k] = intern(e.module);
      i32[3 * E + k] = e.edge === 'begin' ? 0 : 1;
      i32[4 * E + k] = e.iteration;
      i32[5 * E + k] = e.micro_batch;
    }
  }
  const header: Header = { runId: p.runId, dropped: p.dropped, phase: p.phase, iteration: p.iteration, seq: p.seq, strings };
  const text = new TextEncoder().encode(JSON.stringify(header));
  const total = sizeOf(text.length, S, E);
  if (total > MAX_PACKED_BYTES) return null;
  const buf = new ArrayBuffer(total);
  const u32 = new Uint32Array(buf, 0, HEAD / 4);
  u32[0] = PACKED_MAGIC;
  u32[1] = PACKED_VERSION | (C << 16);
  u32[2] = text.length;
  u32[3] = S;
  u32[4] = E;
  new Uint8Array(buf, HEAD, text.length).set(text);
  const f64 = new Float64Array(buf, HEAD + pad8(text.length), (SAMPLE_HEAD + C) * S + EVENT_F64 * E);
  for (let k = 0; k < S; k++) {
    const s = p.samples[k];
    f64[k] = s.t;
    f64[S + k] = s.allocated;
    f64[2 * S + k] = s.reserved;
    f64[3 * S + k] = s.active;
    f64[4 * S + k] = s.requested;
    for (let c = 0; c < C; c++) f64[(SAMPLE_HEAD + c) * S + k] = s.by[c] ?? 0;
  }
  const o = (SAMPLE_HEAD + C) * S;
  for (let k = 0; k < E; k++) {
    const e = p.events[k];
    f64[o + k] = e.t;
    if (e.type === 'alloc') {
      f64[o + E + k] = e.addr;
      f64[o + 2 * E + k] = e.size;
      f64[o + 3 * E + k] = e.blockSize ?? Number.NaN;
    }
  }
  new Int32Array(buf, f64.byteOffset + f64.byteLength, EVENT_I32 * E).set(i32);
  return new Uint8Array(buf);
}

/** The binary frame of an event that has one (`run.progress`), else null: the sender sends JSON. */
export function packEvent(msg: EventMessage): Uint8Array | null {
  return msg.event === 'run.progress' ? packProgress(msg.data as RunProgress) : null;
}

/** The event a binary frame carries; throws PackedFrameError for a malformed one. */
export function unpackEvent(data: ArrayBuffer | ArrayBufferView): EventMessage {
  return { event: 'run.progress', data: unpackProgress(data) };
}

/** True when `data` is a frame this codec would read (binary); JSON text frames are not. */
export function isPacked(data: unknown): data is ArrayBuffer | ArrayBufferView {
  return isArrayBuffer(data) || ArrayBuffer.isView(data);
}

/** An ArrayBuffer of any realm (a page's WebSocket may hand over another window's). */
const isArrayBuffer = (x: unknown): x is ArrayBuffer => Object.prototype.toString.call(x) === '[object ArrayBuffer]';

/** Reads one frame; throws PackedFrameError naming what is wrong with it. */
export function unpackProgress(data: ArrayBuffer | ArrayBufferView): RunProgress {
  const len = data.byteLength;
  if (len > MAX_PACKED_BYTES) throw new PackedFrameError(`${len} bytes, more than the ${MAX_PACKED_BYTES} a frame may have`);
  if (len < HEAD) throw new PackedFrameError(`${len} bytes, shorter than its ${HEAD}-byte head`);
  // Typed views need aligned offsets: a frame inside a larger buffer (Node's pooled Buffers) is copied once.
  let buf: ArrayBuffer;
  if (isArrayBuffer(data)) buf = data;
  else if (data.byteOffset === 0 && isArrayBuffer(data.buffer) && data.buffer.byteLength === len) buf = data.buffer;
  else buf = new Uint8Array(data.buffer, data.byteOffset, len).slice().buffer;
  const u32 = new Uint32Array(buf, 0, HEAD / 4);
  if (u32[0] !== PACKED_MAGIC) throw new PackedFrameError('it does not start with the VLPK magic');
  const version = u32[1] & 0xffff;
  if (version !== PACKED_VERSION) throw new PackedFrameError(`version ${version}, this page reads version ${PACKED_VERSION}`);
  const cats = u32[1] >>> 16;
  if (cats !== C) throw new PackedFrameError(`${cats} memory categories per sample, the contract has ${C}`);
  if (u32[5] !== 0) throw new PackedFrameError('its reserved head word is not zero');
  const H = u32[2];
  const S = u32[3];
  const E = u32[4];
  // Each count is bounded by the length before the sizes are multiplied (no overflow, no huge allocation).
  if (H > len || S > len || E > len || sizeOf(H, S, E) !== len)
    throw new PackedFrameError(`its head says ${H} header bytes, ${S} samples and ${E} events, which do not make ${len} bytes`);
  const header = readHeader(new Uint8Array(buf, HEAD, H));
  const f64 = new Float64Array(buf, HEAD + pad8(H), (SAMPLE_HEAD + C) * S + EVENT_F64 * E);
  const i32 = new Int32Array(buf, f64.byteOffset + f64.byteLength, EVENT_I32 * E);
  const samples: MemorySample[] = new Array(S);
  for (let k = 0; k < S; k++) {
    const by = new Array<number>(C);
    for (let c = 0; c < C; c++) by[c] = finite(f64[(SAMPLE_HEAD + c) * S + k], 'a sample');
    samples[k] = {
      t: finite(f64[k], 'a sample'),
      allocated: finite(f64[S + k], 'a sample'),
      reserved: finite(f64[2 * S + k], 'a sample'),
      active: finite(f64[3 * S + k], 'a sample'),
      requested: finite(f64[4 * S + k], 'a sample'),
      by,
    };
  }
  const str = header.strings;
  const text = (i: number, what: string): string => {
    if (i < 0 || i >= str.length) throw new PackedFrameError(`${what} names string ${i} of ${str.length}`);
    return str[i];
  };
  const o = (SAMPLE_HEAD + C) * S;
  const events: RunEvent[] = new Array(E);
  for (let k = 0; k < E; k++) {
    const t = finite(f64[o + k], 'an event');
    const kind = i32[k];
    if (kind === 1) {
      const cat = i32[4 * E + k];
      if (cat < -1 || cat >= C) throw new PackedFrameError(`an event's category ${cat} is not one of the ${C}`);
      if (i32[5 * E + k] !== 0) throw new PackedFrameError('an allocator event has a micro-batch');
      const action = text(i32[E + k], 'an event');
      const addr = finite(f64[o + E + k], 'an event');
      const size = finite(f64[o + 2 * E + k], 'an event');
      const blockSize = f64[o + 3 * E + k];
      const category = cat < 0 ? '' : CATEGORIES[cat];
      const module = text(i32[2 * E + k], 'an event');
      // Keys in the order addon/packed.ts gives them (stored runs and exports keep their shape).
      const a: Extract<RunEvent, { type: 'alloc' }> = Number.isNaN(blockSize)
        ? { type: 'alloc', t, action, addr, size, category, module }
        : { type: 'alloc', t, action, addr, size, blockSize: finite(blockSize, 'an event'), category, module };
      const tag = i32[3 * E + k];
      if (tag !== -1) a.op = text(tag, 'an event');
      events[k] = a;
    } else if (kind === 0) {
      if (f64[o + E + k] !== 0 || f64[o + 2 * E + k] !== 0 || f64[o + 3 * E + k] !== 0)
        throw new PackedFrameError('a phase marker has allocator fields');
      const edge = i32[3 * E + k];
      if (edge !== 0 && edge !== 1) throw new PackedFrameError(`a phase marker's edge is ${edge}, not 0 or 1`);
      events[k] = {
        type: 'phase',
        t,
        edge: edge === 0 ? 'begin' : 'end',
        name: text(i32[E + k], 'a phase marker'),
        iteration: i32[4 * E + k],
        micro_batch: i32[5 * E + k],
        module: text(i32[2 * E + k], 'a phase marker'),
      };
    } else throw new PackedFrameError(`an event's kind is ${kind}, not 0 (phase) or 1 (alloc)`);
  }
  return {
    runId: header.runId,
    samples,
    events,
    dropped: header.dropped,
    latest: S ? samples[S - 1] : null,
    phase: header.phase,
    iteration: header.iteration,
    seq: header.seq,
  };
}

function finite(x: number, what: string): number {
  if (!Number.isFinite(x)) throw new PackedFrameError(`${what} holds ${x}`);
  return x;
}

function readHeader(bytes: Uint8Array): Header {
  let h: unknown;
  try {
    h = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes));
  } catch {
    throw new PackedFrameError('its header is not UTF-8 JSON');
  }
  const o = h as Partial<Header> | null;
  const count = (x: unknown) => typeof x === 'number' && Number.isInteger(x) && x >= 0;
  if (typeof o !== 'object' || o === null || Array.isArray(o)) throw new PackedFrameError('its header is not an object');
  if (typeof o.runId !== 'string' || o.runId.length === 0 || o.runId.length > 128)
    throw new PackedFrameError('its header has no run id (a string of 1 to 128 characters)');
  if (!count(o.dropped) || !count(o.seq)) throw new PackedFrameError('its header lacks a whole dropped count or seq');
  if (typeof o.phase !== 'string' || typeof o.iteration !== 'number' || !Number.isInteger(o.iteration))
    throw new PackedFrameError('its header lacks the phase and iteration');
  if (!Array.isArray(o.strings) || !o.strings.every((s) => typeof s === 'string'))
    throw new PackedFrameError('its header lacks the list of strings');
  return o as Header;
}
