// Hostile pickles for the hardening tests, built from bytes or with the project's writer
// (which memoizes shared objects, exactly as an attacker's pickler would).
import { writePickle } from '../../main/snapshot/pickle/writer';
import type { PickleValue } from '../../main/snapshot/pickle/values';

/** "Billion laughs": a snapshot whose trace lists reference one list of one event, n x m times. */
export function laughsSnapshot(n = 3000, m = 3000): Buffer {
  const frame = new Map<string, PickleValue>([
    ['name', 'f'],
    ['filename', 'a.py'],
    ['line', 1],
  ]);
  const ev = new Map<string, PickleValue>([
    ['action', 'alloc'],
    ['addr', 1 << 20],
    ['size', 512],
    ['stream', 0],
    ['time_us', 1],
    ['frames', [frame]],
  ]);
  const inner = new Array<PickleValue>(m).fill(ev);
  const traces = new Array<PickleValue>(n).fill(inner);
  return writePickle(
    new Map<string, PickleValue>([
      ['segments', []],
      ['device_traces', traces],
    ]),
    { protocol: 4 },
  );
}

/** A dict whose key is a tuple nested `depth` deep: ((((),),),) ... */
export function deepTupleKey(depth: number): Buffer {
  return Buffer.concat([Buffer.from([0x80, 2, 0x7d, 0x29]), Buffer.alloc(depth, 0x85), Buffer.from('Ns.', 'latin1')]);
}

/** n MEMOIZE opcodes on one None: n memo entries from n bytes. */
export function memoFlood(n: number): Buffer {
  return Buffer.concat([Buffer.from([0x80, 4, 0x4e]), Buffer.alloc(n, 0x94), Buffer.from('.', 'latin1')]);
}

/** A protocol-0 UNICODE opcode whose text argument is `n` bytes long. */
export function longTextArg(n: number): Buffer {
  return Buffer.concat([Buffer.from('V', 'latin1'), Buffer.alloc(n, 0x61), Buffer.from('\np0\n.', 'latin1')]);
}

/** A list of n empty dicts, each 2 bytes (EMPTY_DICT, APPEND): a small file of costly values. */
export function emptyDicts(n: number): Buffer {
  const b = Buffer.alloc(3 + 2 * n + 1);
  b.set([0x80, 4, 0x5d]); // PROTO 4, EMPTY_LIST
  for (let i = 0; i < n; i++) {
    b[3 + 2 * i] = 0x7d; // EMPTY_DICT
    b[4 + 2 * i] = 0x61; // APPEND
  }
  b[b.length - 1] = 0x2e; // STOP
  return b;
}
