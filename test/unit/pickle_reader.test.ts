import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { PickleError } from '../../main/snapshot/pickle/errors';
import { readPickle, readPickleFile } from '../../main/snapshot/pickle/reader';
import { PySet, PyTuple, type PickleValue } from '../../main/snapshot/pickle/values';
import { digest } from './pickle_canon';

const FIX = path.resolve(__dirname, '../fixtures');
const digests: Record<string, string> = JSON.parse(readFileSync(path.join(FIX, 'snapshot/digests.json'), 'utf8'));
const bytes = (...parts: (string | number[])[]) =>
  Buffer.concat(parts.map((p) => (typeof p === 'string' ? Buffer.from(p, 'latin1') : Buffer.from(p))));

function err(data: Uint8Array, opts?: Parameters<typeof readPickle>[1]): PickleError {
  try {
    readPickle(data, opts);
  } catch (e) {
    expect(e).toBeInstanceOf(PickleError);
    return e as PickleError;
  }
  throw new Error('expected a PickleError');
}

describe('pickle reader: Python-made documents, protocols 0-5', () => {
  for (let p = 0; p <= 5; p++) {
    const name = `doc_p${p}.pickle`;
    it(`${name} decodes to exactly what Python decodes`, () => {
      const v = readPickle(readFileSync(path.join(FIX, 'snapshot', name)));
      expect(digest(v)).toBe(digests[name]);
    });
  }

  it('keeps Python types: tuples, int and tuple keys, big ints, bytes, sets', () => {
    const v = readPickle(readFileSync(path.join(FIX, 'snapshot/doc_p5.pickle'))) as Map<unknown, PickleValue>;
    expect(v.get('tuple2')).toEqual(new PyTuple([1, 'b']));
    expect(v.get(7)).toBe('int key');
    const ints = v.get('ints') as PickleValue[];
    expect(ints).toContain(2 ** 53 - 1); // largest exact double stays a number
    expect(ints).toContain(2n ** 53n); // beyond it: bigint
    expect(ints).toContain(2n ** 64n + 5n);
    expect(ints).toContain(-(2n ** 70n));
    expect(ints).toContain(140440607129600); // a CUDA address: a plain number
    expect(v.get('bytes')).toEqual(new Uint8Array([0, 255, 97, 98, 99]));
    expect(v.get('bytearray')).toEqual(new Uint8Array([120, 121, 122]));
    const sets = v.get('sets') as PySet[];
    expect(sets[0].frozen).toBe(false);
    expect(sets[1]).toEqual(new PySet(['a'], true));
    // memo: the same list object twice
    expect(v.get('shared1')).toBe(v.get('shared2'));
  });
});

describe('pickle reader: real torch snapshots', () => {
  for (const name of ['mlp_adam.pickle', 'resnet18_sgd.pickle']) {
    it(`${name} decodes to what Python decodes (in memory and streamed in small chunks)`, () => {
      const file = path.join(FIX, 'torch', name);
      expect(digest(readPickle(readFileSync(file)))).toBe(digests[`torch/${name}`]);
      expect(digest(readPickleFile(file, { chunkBytes: 4096 }))).toBe(digests[`torch/${name}`]);
      expect(digest(readPickleFile(file, { chunkBytes: 7 }))).toBe(digests[`torch/${name}`]);
    });
  }
});

describe('pickle reader: opcodes not in the fixtures', () => {
  it('Python 2 strings: STRING with escapes, BINSTRING, SHORT_BINSTRING', () => {
    expect(readPickle(bytes("S'a\\x41\\n\\'b'\n."))).toBe("aA\n'b");
    expect(readPickle(bytes('S"q"\n.'))).toBe('q');
    expect(readPickle(bytes('T', [3, 0, 0, 0], 'abc.'))).toBe('abc');
    expect(readPickle(bytes('U', [2], 'hi.'))).toBe('hi');
  });

  it('POP, POP_MARK, DUP, LIST, DICT, TUPLE', () => {
    expect(readPickle(bytes('K', [1], 'K', [2], '0.'))).toBe(1);
    expect(readPickle(bytes('K', [1], '(K', [2], 'K', [3], '1.'))).toBe(1);
    expect(readPickle(bytes('K', [1], '2', [0x86], '.'))).toEqual(new PyTuple([1, 1]));
    expect(readPickle(bytes('(K', [1], 'K', [2], 'l.'))).toEqual([1, 2]);
    expect(readPickle(bytes('(X', [1, 0, 0, 0], 'kK', [5], 'd.'))).toEqual(new Map([['k', 5]]));
    expect(readPickle(bytes('(K', [1], 'K', [2], 'K', [3], 'K', [4], 't.'))).toEqual(new PyTuple([1, 2, 3, 4]));
  });

  it('LONG4, BINUNICODE8, BINBYTES8, LONG_BINGET, text INT/LONG/FLOAT/GET', () => {
    expect(readPickle(bytes([0x80, 4, 0x8b, 2, 0, 0, 0, 0xff, 0x7f], '.'))).toBe(32767);
    expect(readPickle(bytes([0x80, 4, 0x8a, 9, 0, 0, 0, 0, 0, 0, 0, 0, 0x80], '.'))).toBe(-(2n ** 71n));
    expect(readPickle(bytes([0x80, 4, 0x8a, 0], '.'))).toBe(0);
    expect(readPickle(bytes([0x80, 4, 0x8d, 2, 0, 0, 0, 0, 0, 0, 0], 'ok.'))).toBe('ok');
    expect(readPickle(bytes([0x80, 4, 0x8e, 1, 0, 0, 0, 0, 0, 0, 0, 7], '.'))).toEqual(new Uint8Array([7]));
    expect(readPickle(bytes('K', [9], 'r', [0, 1, 0, 0], '0j', [0, 1, 0, 0], '.'))).toBe(9);
    expect(readPickle(bytes('I01\n.'))).toBe(true);
    expect(readPickle(bytes('I-42\n.'))).toBe(-42);
    expect(readPickle(bytes('L123456789012345678901234567890L\n.'))).toBe(123456789012345678901234567890n);
    expect(readPickle(bytes('F-1.5e3\n.'))).toBe(-1500);
    expect(readPickle(bytes('I5\np7\n0g7\n.'))).toBe(5);
    expect(readPickle(bytes('Vcaf\\u00e9\n.'))).toBe('café');
  });
});

describe('pickle reader: refuses anything that could run code', () => {
  const evil: Record<string, string> = {
    'evil_global_reduce.pickle': 'GLOBAL',
    'evil_stack_global.pickle': 'STACK_GLOBAL',
    'evil_inst.pickle': 'INST',
    'evil_build.pickle': 'BUILD',
    'evil_newobj.pickle': 'GLOBAL',
    'evil_persid.pickle': 'PERSID',
    'evil_ext1.pickle': 'EXT1',
  };
  for (const [file, op] of Object.entries(evil)) {
    it(`${file}: refused at ${op}, naming the opcode and offset`, () => {
      const data = readFileSync(path.join(FIX, 'snapshot', file));
      const e = err(data);
      expect(e.code).toBe('refused-opcode');
      expect(e.message).toContain(op);
      expect(e.message).toMatch(/at offset \d+/);
      expect(data[e.offset]).toBe(e.opcode);
    });
  }

  it('the classic os.system payload stops at byte 0, before any argument is read', () => {
    const e = err(Buffer.from("cos\nsystem\n(S'echo pwned'\ntR.", 'latin1'));
    expect(e.offset).toBe(0);
    expect(e.message).toMatch(/GLOBAL \(0x63 'c'\) at offset 0: refused/);
  });

  it('each refused opcode is refused even when reached mid-document', () => {
    for (const op of [0x52, 0x62, 0x69, 0x6f, 0x81, 0x92, 0x93, 0x50, 0x51, 0x82, 0x83, 0x84, 0x97, 0x98]) {
      const e = err(bytes([0x80, 4, 0x5d, 0x4b, 1, op], '.'));
      expect(e.code).toBe('refused-opcode');
      expect(e.offset).toBe(5);
    }
  });
});

describe('pickle reader: damaged input ends in a clear error', () => {
  it('truncation', () => {
    const data = readFileSync(path.join(FIX, 'snapshot/doc_p4.pickle'));
    for (const cut of [0, 1, 2, 11, 100, 5000, data.length - 1]) {
      const e = err(data.subarray(0, cut));
      expect(['truncated', 'malformed']).toContain(e.code);
    }
    expect(err(bytes('X', [10, 0, 0, 0], 'abc')).message).toMatch(/needs 10 more bytes but the input has 3/);
    expect(err(bytes('K', [1])).message).toMatch(/without a STOP/);
  });

  it('unknown opcode, bad memo index, stack underflow, odd SETITEMS, trailing data', () => {
    expect(err(bytes([0xff])).code).toBe('unknown-opcode');
    expect(err(bytes('h', [3], '.')).code).toBe('bad-memo');
    expect(err(bytes('h', [3], '.')).message).toMatch(/memo index 3 was never stored/);
    expect(err(bytes('a.')).code).toBe('stack-underflow');
    expect(err(bytes(']', '(', 'a.')).code).toBe('stack-underflow'); // items below a MARK are out of reach
    expect(err(bytes('.')).code).toBe('stack-underflow');
    expect(err(bytes('}(K', [1], 'u.')).message).toMatch(/odd number of items/);
    expect(err(bytes('N.N')).message).toMatch(/trailing data/);
    expect(readPickle(bytes('N.N'), { allowTrailing: true })).toBe(null);
    expect(err(bytes('NN.')).message).toMatch(/left on the stack/);
    expect(err(bytes([0x80, 9], 'N.')).message).toMatch(/unsupported pickle protocol 9/);
  });

  it('frames: an opcode may not straddle a frame; a frame may not outrun the file', () => {
    // FRAME of 2 bytes, then BININT2 (3 bytes) straddling its end.
    expect(err(bytes([0x80, 4, 0x95, 2, 0, 0, 0, 0, 0, 0, 0, 0x4d, 1, 0], '.')).message).toMatch(/past the end of its frame/);
    expect(err(bytes([0x80, 4, 0x95, 0xff, 0, 0, 0, 0, 0, 0, 0], 'N.')).code).toBe('truncated');
    expect(readPickle(bytes([0x80, 4, 0x95, 2, 0, 0, 0, 0, 0, 0, 0], 'N.'))).toBe(null);
  });

  it('wrong types and unhashable keys', () => {
    expect(err(bytes('K', [1], 'K', [2], 'a.')).message).toMatch(/target is number, not a list/);
    expect(err(bytes('}]K', [1], 's.')).message).toMatch(/unhashable/);
    expect(err(bytes("S'abc\n.")).message).toMatch(/must be quoted/);
    expect(err(bytes('X', [2, 0, 0, 0], [0xc3, 0x28], '.')).message).toMatch(/not valid UTF-8/);
  });

  it('recursive values are refused (a list appended into itself)', () => {
    // ] MEMOIZE BINGET 0 APPEND .  -> Python builds l = [l]
    expect(err(bytes([0x80, 4, 0x5d, 0x94, 0x68, 0, 0x61], '.')).message).toMatch(/changed after being referenced again/);
    expect(err(bytes([0x5d, 0x32, 0x61], '.')).code).toBe('malformed'); // via DUP
  });
});

describe('pickle reader: limits', () => {
  it('depth', () => {
    const deep = bytes(']'.repeat(50), 'a'.repeat(49), '.');
    expect(readPickle(deep)).toBeInstanceOf(Array);
    expect(err(deep, { limits: { maxDepth: 20 } }).message).toMatch(/nested deeper than 20/);
  });

  it('depth through shared references is measured once per object (no blow-up)', () => {
    // x0 = [], x(i+1) = [x(i), x(i)]: 2^60 paths, 60 levels, a few hundred bytes.
    const parts: (string | number[])[] = [[0x80, 4], ']', [0x94], '0'];
    for (let i = 0; i < 60; i++) parts.push('](', [0x6a, i, 0, 0, 0, 0x6a, i, 0, 0, 0], 'e', [0x94], '0');
    parts.push([0x6a, 60, 0, 0, 0], '.');
    const t0 = performance.now();
    expect(err(bytes(...parts), { limits: { maxDepth: 30 } }).code).toBe('limit');
    // 2^60 expanded values: refused by default (see pickle_amplify.test.ts), measured in a
    // linear walk when the bound is lifted.
    expect(err(bytes(...parts), { limits: { maxDepth: 100 } }).message).toMatch(/expands to more than/);
    expect(readPickle(bytes(...parts), { limits: { maxDepth: 100, maxValues: Infinity } })).toBeInstanceOf(Array);
    expect(performance.now() - t0).toBeLessThan(2000);
  });

  it('string, integer, container and memo sizes', () => {
    expect(err(bytes('X', [0, 0, 0, 1], '.'), { limits: { maxStringBytes: 1000 } }).code).toBe('limit');
    expect(err(bytes([0x8b, 0, 0, 1, 0], '.')).code).toBe('limit');
    expect(err(bytes(']]]]', '.'), { limits: { maxContainers: 3 } }).code).toBe('limit');
    expect(err(bytes('K', [1], 'q', [0], 'q', [1], '.'), { limits: { maxMemo: 1 } }).code).toBe('limit');
  });
});
