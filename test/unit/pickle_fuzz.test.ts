// 1,000 damaged or forged copies of real snapshots: every one must end in a PickleError or
// SnapshotFormatError (or parse, when the damage is harmless), quickly, with nothing else
// thrown and nothing run. Seeded, so a failure reproduces.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { SnapshotFormatError, snapshotFromPickle } from '../../main/snapshot/from_pickle';
import { PickleError } from '../../main/snapshot/pickle/errors';
import { readPickle } from '../../main/snapshot/pickle/reader';
import { snapshotToBytes, buildSnapshot } from '../../main/snapshot/export';
import { loadSnapshotBuffer } from '../../main/snapshot/import';

const FIX = path.resolve(__dirname, '../fixtures');

function mulberry32(seed: number) {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = seed;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const EVIL = [
  Buffer.from("cos\nsystem\n(S'echo pwned'\ntR.", 'latin1'),
  Buffer.from([0x8c, 2, 0x6f, 0x73, 0x8c, 6, 0x73, 0x79, 0x73, 0x74, 0x65, 0x6d, 0x93]), // STACK_GLOBAL os.system
  Buffer.from('R'),
  Buffer.from('b'),
  Buffer.from([0x81]),
  Buffer.from([0x92]),
  Buffer.from('Q'),
  Buffer.from([0x82, 1]),
];

describe('pickle fuzz', () => {
  const mlp = readFileSync(path.join(FIX, 'torch/mlp_adam.pickle'));
  // A small real snapshot too (first 40 events of mlp_adam, through our own writer), so most
  // cases run fast and reach deep into the structure.
  const full = loadSnapshotBuffer(mlp);
  const small = snapshotToBytes(buildSnapshot({ events: full.deviceTraces[0].slice(0, 40).map((e) => ({ ...e })) }));
  const doc = readFileSync(path.join(FIX, 'snapshot/doc_p4.pickle'));
  const sources = [small, small, small, doc, mlp];

  it('1,000 mutated, truncated and forged copies end in a clear error or a valid parse', () => {
    const rand = mulberry32(0x5eed);
    const int = (n: number) => Math.floor(rand() * n);
    const outcomes = { parsed: 0, pickle: 0, format: 0 };
    let slowest = 0;
    for (let c = 0; c < 1000; c++) {
      const src = sources[c % sources.length];
      let data = Buffer.from(src);
      const kind = c % 5;
      if (kind === 0) {
        for (let k = 1 + int(8); k > 0; k--) data[int(data.length)] ^= 1 << int(8); // bit flips
      } else if (kind === 1) {
        data = data.subarray(0, int(data.length)); // truncation
      } else if (kind === 2) {
        const at = int(data.length); // a forged or random opcode byte spliced in
        const forged = rand() < 0.5 ? EVIL[int(EVIL.length)] : Buffer.from([int(256)]);
        data = Buffer.concat([data.subarray(0, at), forged, data.subarray(at)]);
      } else if (kind === 3) {
        const at = int(data.length); // an evil payload overwriting the middle
        const e = EVIL[int(EVIL.length)];
        data = Buffer.concat([data.subarray(0, at), e, data.subarray(Math.min(data.length, at + e.length))]);
      } else {
        for (let k = 1 + int(4); k > 0; k--) data[int(data.length)] = int(256); // random bytes
      }
      const t0 = performance.now();
      try {
        snapshotFromPickle(readPickle(data));
        outcomes.parsed++;
      } catch (e) {
        if (e instanceof PickleError) {
          outcomes.pickle++;
          expect(e.message).toMatch(/^pickle: /);
        } else if (e instanceof SnapshotFormatError) {
          outcomes.format++;
        } else {
          throw new Error(`case ${c} (kind ${kind}) threw something unclear: ${String(e)}`, { cause: e });
        }
      }
      const dt = performance.now() - t0;
      slowest = Math.max(slowest, dt);
      // A bound against pathological inputs (a quadratic case takes minutes), not a speed target.
      expect(dt, `case ${c}`).toBeLessThan(5000);
    }
    expect(outcomes.parsed + outcomes.pickle + outcomes.format).toBe(1000);
    expect(outcomes.pickle).toBeGreaterThan(500);
    expect(outcomes.format).toBeGreaterThan(0);
    expect(outcomes.parsed).toBeGreaterThan(0);
    console.log('fuzz outcomes', outcomes, 'slowest case', slowest.toFixed(1), 'ms');
  });
});
