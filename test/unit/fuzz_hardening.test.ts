// Issue 15's fuzz suite (fast-check, seeded so a failure reproduces; tens of seconds):
//  - thousands of mutated pickles, from real snapshots and from the hostile shapes of
//    items 1-3: each parses or fails with PickleError/SnapshotFormatError, quickly;
//  - random specs: checkSpec never throws, and whatever it accepts is within the work
//    and size bounds of limits.ts;
//  - random WebSocket frames against a real serve with small limits: every request gets
//    a well-formed reply (or "busy"), and serve keeps answering.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import WebSocket from 'ws';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import { PickleError } from '../../main/snapshot/pickle/errors';
import { SnapshotFormatError } from '../../main/snapshot/from_pickle';
import { loadSnapshotBuffer } from '../../main/snapshot/import';
import { checkSpec } from '../../main/contract/spec';
import { modelSizes } from '../../main/contract/catalogue';
import { layerSteps, MAX_ITERATIONS, MAX_LAYER_STEPS } from '../../main/contract/limits';
import { createHost } from '../../main/host/create';
import { startServer, type RunningServer } from '../../main/server/server';
import { rendererDist } from '../../main/paths';
import type { Host } from '../../main/host/host';
import { native } from '../helpers/addon';
import { deepTupleKey, laughsSnapshot, longTextArg } from '../helpers/pickles';

const SEED = 15;
const FIX = path.resolve(__dirname, '../fixtures');
const SEEDS = [
  readFileSync(path.join(FIX, 'torch/mlp_adam.pickle')),
  readFileSync(path.join(FIX, 'snapshot/doc_p2.pickle')),
  readFileSync(path.join(FIX, 'snapshot/doc_p5.pickle')),
  laughsSnapshot(200, 200),
  deepTupleKey(3000),
  longTextArg(3000),
];

/** A mutation: overwrite, insert, delete or duplicate a run of bytes. */
const mutation = fc.record({
  kind: fc.constantFrom('set', 'insert', 'delete', 'dup', 'truncate'),
  at: fc.double({ min: 0, max: 1, noNaN: true }),
  bytes: fc.uint8Array({ minLength: 1, maxLength: 8 }),
  len: fc.integer({ min: 1, max: 64 }),
});

function mutate(src: Buffer, ms: { kind: string; at: number; bytes: Uint8Array; len: number }[]): Buffer {
  let b = Buffer.from(src);
  for (const m of ms) {
    const i = Math.min(b.length, Math.floor(m.at * b.length));
    if (m.kind === 'set') b = Buffer.concat([b.subarray(0, i), m.bytes, b.subarray(i + m.bytes.length)]);
    else if (m.kind === 'insert') b = Buffer.concat([b.subarray(0, i), m.bytes, b.subarray(i)]);
    else if (m.kind === 'delete') b = Buffer.concat([b.subarray(0, i), b.subarray(i + m.len)]);
    else if (m.kind === 'dup') b = Buffer.concat([b.subarray(0, i + m.len), b.subarray(i, i + m.len), b.subarray(i + m.len)]);
    else b = b.subarray(0, i);
  }
  return b;
}

describe('fuzz: pickles', () => {
  it('3000 mutated pickles: each parses or fails typed, none slowly', () => {
    let typed = 0;
    fc.assert(
      fc.property(fc.integer({ min: 0, max: SEEDS.length - 1 }), fc.array(mutation, { minLength: 1, maxLength: 4 }), (s, ms) => {
        const data = mutate(SEEDS[s], ms);
        const t0 = performance.now();
        try {
          loadSnapshotBuffer(data);
        } catch (err) {
          if (!(err instanceof PickleError || err instanceof SnapshotFormatError)) throw err;
          if (err instanceof PickleError) expect(err.message).toMatch(/offset -?\d+|pickle:/);
          typed++;
        }
        expect(performance.now() - t0).toBeLessThan(2000);
      }),
      { seed: SEED, numRuns: 3000 },
    );
    expect(typed).toBeGreaterThan(1000);
  });
});

describe('fuzz: specs', () => {
  const num = fc.oneof(
    fc.integer({ min: -10, max: 2 ** 31 }),
    fc.double(),
    fc.constantFrom(0, 1, 2 ** 53, 2 ** 64, -0, 1e308, NaN, Infinity),
  );
  const spec = fc.record(
    {
      iterations: num,
      accum: num,
      batch: num,
      capacity: fc.oneof(num, fc.string(), fc.constantFrom('NaN', '-1GiB', '1e30', '0.5B', '16 EiB')),
      device: fc.oneof(
        fc.string(),
        fc.constantFrom('sim:custom:0', 'sim:custom:.', 'sim:custom:99999999TiB', 'sim:custom:24GiB', 'sim:h100-80gb'),
      ),
      mode: fc.constantFrom('train', 'inference', 'generate'),
      prompt: num,
      new_tokens: num,
      model: fc.record(
        {
          kind: fc.constantFrom('mlp', 'residual', 'gpt', 'llama', 'x'),
          depth: num,
          in: num,
          hidden: num,
          out: num,
          dim: num,
          vocab: num,
          seq: num,
          ffn: num,
        },
        { requiredKeys: ['kind'] },
      ),
    },
    { requiredKeys: [] },
  );
  it('5000 random specs: checkSpec never throws; what it accepts is bounded', () => {
    fc.assert(
      fc.property(spec, (s) => {
        const r = checkSpec(s);
        if (!r.ok) {
          expect(r.issues.length).toBeGreaterThan(0);
          return;
        }
        expect(r.spec.iterations).toBeLessThanOrEqual(MAX_ITERATIONS);
        expect(layerSteps(r.spec)).toBeLessThanOrEqual(MAX_LAYER_STEPS);
        if (r.spec.mode === 'generate') expect(r.spec.new_tokens * modelSizes(r.spec.model).depth).toBeLessThanOrEqual(MAX_LAYER_STEPS);
        if (r.spec.capacity !== null) expect(Number.isSafeInteger(r.spec.capacity) && r.spec.capacity >= 2 ** 20).toBe(true);
      }),
      { seed: SEED, numRuns: 5000 },
    );
  });
});

describe('fuzz: WebSocket frames', () => {
  let dir = '';
  let host: Host;
  let server: RunningServer;
  beforeAll(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'vramlab-fuzzws-'));
    host = createHost(native, { home: dir });
    server = await startServer({ host, rendererDir: rendererDist(), limits: { maxInFlight: 4 } });
  });
  afterAll(async () => {
    await server.close();
    host.dispose();
    rmSync(dir, { recursive: true, force: true });
  });

  it('2000 random frames: every reply is well formed and serve keeps answering', async () => {
    const ws = new WebSocket(server.wsUrl);
    await new Promise((r) => ws.once('open', r));
    const replies: unknown[] = [];
    ws.on('message', (d) => replies.push(JSON.parse(d.toString())));
    const method = fc.constantFrom(
      'devices.list',
      'runs.list',
      'runs.get',
      'run.start',
      'snapshot.upload',
      'snapshot.whatIf',
      'playground.eval',
      'app.info',
      'nope',
    );
    const frame = fc.oneof(
      fc.string({ maxLength: 200 }),
      fc
        .record({ id: fc.oneof(fc.nat(), fc.string({ maxLength: 80 })), method, params: fc.anything({ maxDepth: 3 }) })
        .map((m) => JSON.stringify(m) ?? 'null'),
      fc.jsonValue({ maxDepth: 4 }).map((v) => JSON.stringify(v)),
    );
    const frames = fc.sample(frame, { seed: SEED, numRuns: 2000 });
    for (const f of frames) ws.send(f);
    const ok = await new Promise<boolean>((resolve) => {
      const t0 = Date.now();
      const poll = setInterval(() => {
        if (replies.length >= frames.length || Date.now() - t0 > 20_000) {
          clearInterval(poll);
          resolve(replies.length >= frames.length);
        }
      }, 20);
    });
    expect(ok).toBe(true);
    for (const r of replies as { type: string; ok?: boolean; error?: { code: string; message: string } }[]) {
      if (r.type === 'event') continue;
      expect(r.type).toBe('response');
      expect(typeof r.ok).toBe('boolean');
      if (!r.ok) expect(typeof r.error!.message).toBe('string');
    }
    const alive = new Promise((r) => ws.once('message', (d) => r(JSON.parse(d.toString()))));
    ws.send(JSON.stringify({ id: 'last', method: 'devices.list' }));
    expect(await alive).toMatchObject({ id: 'last', ok: true });
    ws.close();
  });
});
