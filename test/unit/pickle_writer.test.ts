import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { PickleError } from '../../main/snapshot/pickle/errors';
import { Op, opName } from '../../main/snapshot/pickle/opcodes';
import { readPickle } from '../../main/snapshot/pickle/reader';
import { WRITER_OPCODES, writePickle } from '../../main/snapshot/pickle/writer';
import { PyFloat, PySet, PyTuple, type PickleValue } from '../../main/snapshot/pickle/values';
import { digest } from './pickle_canon';

const FIX = path.resolve(__dirname, '../fixtures');
const digests: Record<string, string> = JSON.parse(readFileSync(path.join(FIX, 'snapshot/digests.json'), 'utf8'));

/** The opcodes of a pickle this writer produced (argument lengths for its own opcode set). */
function opcodes(buf: Buffer): number[] {
  const ops: number[] = [];
  let i = 0;
  const fixed: Record<number, number> = {
    [Op.PROTO]: 1,
    [Op.FRAME]: 8,
    [Op.BININT1]: 1,
    [Op.BININT2]: 2,
    [Op.BININT]: 4,
    [Op.BINFLOAT]: 8,
    [Op.BINPUT]: 1,
    [Op.LONG_BINPUT]: 4,
    [Op.BINGET]: 1,
    [Op.LONG_BINGET]: 4,
  };
  while (i < buf.length) {
    const op = buf[i++];
    ops.push(op);
    if (!WRITER_OPCODES.has(op)) throw new Error(`unexpected opcode ${op}`);
    if (op in fixed) i += fixed[op];
    else if (op === Op.LONG1 || op === Op.SHORT_BINUNICODE || op === Op.SHORT_BINBYTES) i += 1 + buf[i];
    else if (op === Op.LONG4 || op === Op.BINUNICODE || op === Op.BINBYTES) i += 4 + buf.readUInt32LE(i);
    else if (op === Op.BINUNICODE8 || op === Op.BINBYTES8) i += 8 + Number(buf.readBigUInt64LE(i));
    if (op === Op.STOP) break;
  }
  expect(i).toBe(buf.length);
  return ops;
}

// What torch/utils/viz/MemoryViz.js's unpickle() understands (it throws on anything else).
const MEMORYVIZ_OPCODES = new Set<number>([
  Op.PROTO,
  Op.FRAME,
  Op.STOP,
  Op.MARK,
  Op.NONE,
  Op.NEWTRUE,
  Op.NEWFALSE,
  Op.BININT,
  Op.BININT1,
  Op.BININT2,
  Op.LONG1,
  Op.BINFLOAT,
  Op.SHORT_BINUNICODE,
  Op.BINUNICODE,
  Op.EMPTY_LIST,
  Op.APPEND,
  Op.APPENDS,
  Op.LIST,
  Op.EMPTY_DICT,
  Op.SETITEM,
  Op.SETITEMS,
  Op.DICT,
  Op.EMPTY_TUPLE,
  Op.TUPLE,
  Op.TUPLE1,
  Op.TUPLE2,
  Op.TUPLE3,
  Op.MEMOIZE,
  Op.BINPUT,
  Op.LONG_BINPUT,
  Op.BINGET,
  Op.LONG_BINGET,
]);

describe('pickle writer', () => {
  for (const proto of [2, 3, 4] as const) {
    it(`round-trips Python's document at protocol ${proto} to the identical value`, () => {
      const src = proto === 2 ? 'doc_p2.pickle' : 'doc_p4.pickle';
      const v = readPickle(readFileSync(path.join(FIX, 'snapshot', src)));
      if (proto < 4) (v as Map<unknown, PickleValue>).delete('sets'); // sets need protocol 4
      const out = writePickle(v, { protocol: proto });
      const back = readPickle(out);
      expect(digest(back)).toBe(digest(v));
      if (proto !== 3) expect(digest(back)).toBe(digests[src]);
      for (const op of opcodes(out)) expect(WRITER_OPCODES.has(op), opName(op)).toBe(true);
    });
  }

  it('round-trips both torch snapshots exactly, with only opcodes MemoryViz.js reads', () => {
    for (const name of ['mlp_adam.pickle', 'resnet18_sgd.pickle']) {
      const v = readPickle(readFileSync(path.join(FIX, 'torch', name)));
      const out = writePickle(v);
      expect(digest(readPickle(out))).toBe(digests[`torch/${name}`]);
      const used = new Set(opcodes(out));
      for (const op of used) expect(MEMORYVIZ_OPCODES.has(op), opName(op)).toBe(true);
      expect(used.has(Op.FRAME)).toBe(true);
    }
  });

  it('memoizes repeated strings and shared objects', () => {
    const shared = new Map<string, PickleValue>([['name', 'f']]);
    const out = writePickle(['abc', 'abc', shared, shared]);
    const back = readPickle(out) as PickleValue[];
    expect(back[2]).toBe(back[3]);
    expect(out.toString('latin1').split('abc').length - 1).toBe(1);
  });

  it('ints, floats and their edges', () => {
    const values: PickleValue[] = [
      0,
      255,
      256,
      65535,
      65536,
      -1,
      2 ** 31 - 1,
      -(2 ** 31),
      2 ** 31,
      2 ** 53 - 1,
      2n ** 63n,
      -(2n ** 63n),
      2n ** 2100n,
      -128n,
      127n,
      128n,
      0.5,
      -0,
      Infinity,
      NaN,
    ];
    const back = readPickle(writePickle(values)) as PickleValue[];
    expect(back).toEqual(values.map((v) => (typeof v === 'bigint' && v >= -(2n ** 53n) && v <= 2n ** 53n ? Number(v) : v)));
    expect(Object.is(back[17], -0)).toBe(true);
    // A whole-number float stays a float on the wire (Python reads 0.0, not 0).
    const f = writePickle(new PyFloat(0));
    expect(f.includes(Op.BINFLOAT)).toBe(true);
  });

  it('large strings go outside frames, as CPython writes them', () => {
    const big = 'x'.repeat(200_000);
    const v = [big, 'tail', new PyTuple([1, 2, 3, 4]), new PySet([1], true)];
    expect(readPickle(writePickle(v))).toEqual(v);
  });

  it('refuses cycles and values pickle cannot hold safely', () => {
    const a: PickleValue[] = [];
    a.push(a);
    expect(() => writePickle(a)).toThrow(PickleError);
    expect(() => writePickle(new Uint8Array([1]), { protocol: 2 })).toThrow(/protocol 3/);
    expect(() => writePickle(new PySet([], false), { protocol: 3 })).toThrow(/protocol 4/);
    expect(() => writePickle({} as unknown as PickleValue)).toThrow(/cannot write/);
  });
});
