// A pickle writer for plain data, emitting only opcodes that build values (no GLOBAL,
// REDUCE or any object construction), so any unpickler, including PyTorch's own
// MemoryViz.js, can load the output without trusting it. Protocol 2, 3 or 4 (default 4,
// with 64 KiB frames like CPython). Strings and shared containers are memoized, so a
// snapshot's repeated frame names and shared stack lists are written once.
import { PickleError } from './errors';
import { Op } from './opcodes';
import { PyFloat, PySet, PyTuple, type PickleValue } from './values';

export interface WriteOptions {
  protocol?: 2 | 3 | 4;
  /** Protocol 4 framing (default true, as CPython does). */
  frames?: boolean;
}

/** CPython batches APPENDS/SETITEMS by 1000; readers that spread arguments rely on it. */
const BATCH = 1000;
const FRAME_TARGET = 64 * 1024;

/** Every opcode this writer can emit: the contract tests hold it to. */
export const WRITER_OPCODES: ReadonlySet<number> = new Set([
  Op.PROTO,
  Op.FRAME,
  Op.STOP,
  Op.MARK,
  Op.NONE,
  Op.NEWTRUE,
  Op.NEWFALSE,
  Op.BININT1,
  Op.BININT2,
  Op.BININT,
  Op.LONG1,
  Op.LONG4,
  Op.BINFLOAT,
  Op.SHORT_BINUNICODE,
  Op.BINUNICODE,
  Op.BINUNICODE8,
  Op.SHORT_BINBYTES,
  Op.BINBYTES,
  Op.BINBYTES8,
  Op.EMPTY_LIST,
  Op.APPEND,
  Op.APPENDS,
  Op.EMPTY_DICT,
  Op.SETITEM,
  Op.SETITEMS,
  Op.EMPTY_TUPLE,
  Op.TUPLE1,
  Op.TUPLE2,
  Op.TUPLE3,
  Op.TUPLE,
  Op.EMPTY_SET,
  Op.ADDITEMS,
  Op.FROZENSET,
  Op.MEMOIZE,
  Op.BINPUT,
  Op.LONG_BINPUT,
  Op.BINGET,
  Op.LONG_BINGET,
]);

export function writePickle(value: PickleValue, options: WriteOptions = {}): Buffer {
  const w = new Writer(options.protocol ?? 4, options.frames ?? true);
  return w.dump(value);
}

/** Growable output with protocol-4 framing applied as opcodes complete. */
class Out {
  private chunks: Buffer[] = [];
  private cur = Buffer.allocUnsafe(FRAME_TARGET * 2);
  private n = 0;
  /** Index in cur where the open frame's FRAME header sits (-1: not framing). */
  private frameAt = -1;

  constructor(private framing: boolean) {}

  private room(k: number): void {
    if (this.n + k <= this.cur.length) return;
    const next = Buffer.allocUnsafe(Math.max(this.cur.length * 2, this.n + k));
    this.cur.copy(next, 0, 0, this.n);
    this.cur = next;
  }

  byte(b: number): void {
    this.room(1);
    this.cur[this.n++] = b;
  }
  u16(v: number): void {
    this.room(2);
    this.n = this.cur.writeUInt16LE(v, this.n);
  }
  u32(v: number): void {
    this.room(4);
    this.n = this.cur.writeUInt32LE(v, this.n);
  }
  i32(v: number): void {
    this.room(4);
    this.n = this.cur.writeInt32LE(v, this.n);
  }
  u64(v: number): void {
    this.room(8);
    this.n = this.cur.writeBigUInt64LE(BigInt(v), this.n);
  }
  f64be(v: number): void {
    this.room(8);
    this.n = this.cur.writeDoubleBE(v, this.n);
  }
  bytes(b: Uint8Array): void {
    this.room(b.length);
    this.cur.set(b, this.n);
    this.n += b.length;
  }

  /** Start a frame if framing and none is open (called before each opcode). */
  opStart(): void {
    if (!this.framing || this.frameAt >= 0) return;
    this.flush();
    this.frameAt = this.n;
    this.byte(Op.FRAME);
    this.u64(0); // length patched when the frame closes
  }

  /** Close the open frame once it is big enough (called after each opcode). */
  opEnd(force = false): void {
    if (this.frameAt < 0) return;
    const len = this.n - this.frameAt - 9;
    if (len < FRAME_TARGET && !force) return;
    if (len === 0) {
      this.n = this.frameAt; // empty frame: drop the header
    } else {
      this.cur.writeBigUInt64LE(BigInt(len), this.frameAt + 1);
    }
    this.frameAt = -1;
  }

  /** A payload too large for a frame goes between frames, as CPython writes it. */
  large(header: () => void, payload: Uint8Array): void {
    this.opEnd(true);
    header();
    this.flush();
    this.chunks.push(Buffer.from(payload.buffer, payload.byteOffset, payload.byteLength));
  }

  private flush(): void {
    if (this.n === 0) return;
    this.chunks.push(Buffer.from(this.cur.subarray(0, this.n)));
    this.n = 0;
  }

  finish(): Buffer {
    this.opEnd(true);
    this.flush();
    return this.chunks.length === 1 ? this.chunks[0] : Buffer.concat(this.chunks);
  }
}

class Writer {
  private out: Out;
  private memo = new Map<unknown, number>();
  private strings = new Map<string, number>();
  private active = new Set<object>();

  constructor(
    private protocol: 2 | 3 | 4,
    framing: boolean,
  ) {
    if (![2, 3, 4].includes(protocol)) throw new PickleError('malformed', `pickle writer: protocol ${protocol} is not 2, 3 or 4`);
    this.out = new Out(framing && protocol >= 4);
  }

  dump(v: PickleValue): Buffer {
    const o = this.out;
    o.byte(Op.PROTO);
    o.byte(this.protocol);
    this.save(v);
    this.op(() => o.byte(Op.STOP));
    return o.finish();
  }

  private op(write: () => void): void {
    this.out.opStart();
    write();
    this.out.opEnd();
  }

  private remember(key: unknown): void {
    const idx = this.memo.size + this.strings.size;
    if (typeof key === 'string') this.strings.set(key, idx);
    else this.memo.set(key, idx);
    const o = this.out;
    this.op(() => {
      if (this.protocol >= 4) o.byte(Op.MEMOIZE);
      else if (idx < 256) {
        o.byte(Op.BINPUT);
        o.byte(idx);
      } else {
        o.byte(Op.LONG_BINPUT);
        o.u32(idx);
      }
    });
  }

  private recall(idx: number): void {
    const o = this.out;
    this.op(() => {
      if (idx < 256) {
        o.byte(Op.BINGET);
        o.byte(idx);
      } else {
        o.byte(Op.LONG_BINGET);
        o.u32(idx);
      }
    });
  }

  private save(v: PickleValue): void {
    const o = this.out;
    if (v === null) return this.op(() => o.byte(Op.NONE));
    if (v === true) return this.op(() => o.byte(Op.NEWTRUE));
    if (v === false) return this.op(() => o.byte(Op.NEWFALSE));
    if (typeof v === 'number') {
      // Exact ints beyond 2^53 arrive as bigint; a number that large is a float.
      if (Number.isSafeInteger(v) && !Object.is(v, -0)) return this.saveInt(v);
      return this.saveFloat(v);
    }
    if (typeof v === 'bigint') return this.saveInt(v);
    if (v instanceof PyFloat) return this.saveFloat(v.value);
    if (typeof v === 'string') return this.saveStr(v);
    if (v instanceof Uint8Array) return this.saveBytes(v);

    // Checked before the memo: a container being written is already memoized.
    if (this.active.has(v)) throw new PickleError('malformed', 'pickle writer: the value contains itself (cyclic)');
    const seen = this.memo.get(v);
    if (seen !== undefined) return this.recall(seen);
    this.active.add(v);
    if (Array.isArray(v)) this.saveList(v);
    else if (v instanceof PyTuple) this.saveTuple(v);
    else if (v instanceof Map) this.saveDict(v);
    else if (v instanceof PySet) this.saveSet(v);
    else throw new PickleError('malformed', `pickle writer: cannot write a ${typeof v} (${Object.prototype.toString.call(v)})`);
    this.active.delete(v);
  }

  private saveInt(v: number | bigint): void {
    const o = this.out;
    const n = typeof v === 'bigint' && v >= -(2n ** 31n) && v < 2n ** 31n ? Number(v) : v;
    if (typeof n === 'number' && n >= 0 && n < 256) return this.op(() => (o.byte(Op.BININT1), o.byte(n)));
    if (typeof n === 'number' && n >= 0 && n < 65536) return this.op(() => (o.byte(Op.BININT2), o.u16(n)));
    if (typeof n === 'number' && n >= -(2 ** 31) && n < 2 ** 31) return this.op(() => (o.byte(Op.BININT), o.i32(n)));
    const bytes = twosComplement(BigInt(v));
    this.op(() => {
      if (bytes.length < 256) {
        o.byte(Op.LONG1);
        o.byte(bytes.length);
      } else {
        o.byte(Op.LONG4);
        o.i32(bytes.length);
      }
      o.bytes(bytes);
    });
  }

  private saveFloat(v: number): void {
    const o = this.out;
    this.op(() => (o.byte(Op.BINFLOAT), o.f64be(v)));
  }

  private saveStr(s: string): void {
    const seen = this.strings.get(s);
    if (seen !== undefined) return this.recall(seen);
    const data = Buffer.from(s, 'utf8');
    const o = this.out;
    const header = () => {
      if (this.protocol >= 4 && data.length < 256) {
        o.byte(Op.SHORT_BINUNICODE);
        o.byte(data.length);
      } else if (data.length <= 0xffffffff) {
        o.byte(Op.BINUNICODE);
        o.u32(data.length);
      } else if (this.protocol >= 4) {
        o.byte(Op.BINUNICODE8);
        o.u64(data.length);
      } else {
        throw new PickleError('limit', `pickle writer: a string of ${data.length} bytes needs protocol 4`);
      }
    };
    if (data.length >= FRAME_TARGET) this.out.large(header, data);
    else this.op(() => (header(), o.bytes(data)));
    this.remember(s);
  }

  private saveBytes(b: Uint8Array): void {
    if (this.protocol < 3) {
      throw new PickleError('malformed', 'pickle writer: bytes need protocol 3 or later (protocol 2 would need REDUCE)');
    }
    const o = this.out;
    const header = () => {
      if (b.length < 256) {
        o.byte(Op.SHORT_BINBYTES);
        o.byte(b.length);
      } else if (b.length <= 0xffffffff) {
        o.byte(Op.BINBYTES);
        o.u32(b.length);
      } else if (this.protocol >= 4) {
        o.byte(Op.BINBYTES8);
        o.u64(b.length);
      } else {
        throw new PickleError('limit', `pickle writer: bytes of ${b.length} need protocol 4`);
      }
    };
    if (b.length >= FRAME_TARGET) this.out.large(header, b);
    else this.op(() => (header(), o.bytes(b)));
  }

  private saveList(list: readonly PickleValue[]): void {
    const o = this.out;
    this.op(() => o.byte(Op.EMPTY_LIST));
    this.remember(list);
    for (let start = 0; start < list.length; start += BATCH) {
      const end = Math.min(start + BATCH, list.length);
      if (end - start === 1) {
        this.save(list[start]);
        this.op(() => o.byte(Op.APPEND));
        continue;
      }
      this.op(() => o.byte(Op.MARK));
      for (let k = start; k < end; k++) this.save(list[k]);
      this.op(() => o.byte(Op.APPENDS));
    }
  }

  private saveDict(d: Map<unknown, PickleValue>): void {
    const o = this.out;
    this.op(() => o.byte(Op.EMPTY_DICT));
    this.remember(d);
    const entries = [...d.entries()];
    for (let start = 0; start < entries.length; start += BATCH) {
      const end = Math.min(start + BATCH, entries.length);
      if (end - start === 1) {
        this.save(entries[start][0] as PickleValue);
        this.save(entries[start][1]);
        this.op(() => o.byte(Op.SETITEM));
        continue;
      }
      this.op(() => o.byte(Op.MARK));
      for (let k = start; k < end; k++) {
        this.save(entries[k][0] as PickleValue);
        this.save(entries[k][1]);
      }
      this.op(() => o.byte(Op.SETITEMS));
    }
  }

  private saveTuple(t: PyTuple): void {
    const o = this.out;
    const n = t.items.length;
    if (n === 0) {
      this.op(() => o.byte(Op.EMPTY_TUPLE));
      return;
    }
    if (n > 3) this.op(() => o.byte(Op.MARK));
    for (const it of t.items) this.save(it);
    this.op(() => o.byte(n === 1 ? Op.TUPLE1 : n === 2 ? Op.TUPLE2 : n === 3 ? Op.TUPLE3 : Op.TUPLE));
    this.remember(t);
  }

  private saveSet(s: PySet): void {
    if (this.protocol < 4) throw new PickleError('malformed', 'pickle writer: sets need protocol 4 (earlier ones would need REDUCE)');
    const o = this.out;
    if (s.frozen) {
      this.op(() => o.byte(Op.MARK));
      for (const it of s.items) this.save(it);
      this.op(() => o.byte(Op.FROZENSET));
      this.remember(s);
      return;
    }
    this.op(() => o.byte(Op.EMPTY_SET));
    this.remember(s);
    for (let start = 0; start < s.items.length; start += BATCH) {
      this.op(() => o.byte(Op.MARK));
      for (let k = start; k < Math.min(start + BATCH, s.items.length); k++) this.save(s.items[k]);
      this.op(() => o.byte(Op.ADDITEMS));
    }
  }
}

/** Minimal little-endian two's complement bytes of v (CPython's encode_long). */
function twosComplement(v: bigint): Uint8Array {
  if (v === 0n) return new Uint8Array(0);
  const out: number[] = [];
  let x = v;
  for (;;) {
    out.push(Number(x & 0xffn));
    x >>= 8n; // arithmetic shift: keeps the sign
    const signBit = (out[out.length - 1] & 0x80) !== 0;
    if ((x === 0n && !signBit) || (x === -1n && signBit)) break;
  }
  return Uint8Array.from(out);
}
