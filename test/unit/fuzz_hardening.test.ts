// Hostile input never escapes as a crash (fast-check, seeded so a failure reproduces; tens of seconds):
//  - thousands of mutated pickles, from real snapshots and from the hostile shapes of
//    pickle_hostile.test.ts: each parses or fails with PickleError/SnapshotFormatError, quickly;
//  - random specs: checkSpec never throws, and whatever it accepts is within the work
//    and size bounds of limits.ts; the second suite draws the newer keys too (shapes draws
//    and lists, finetune, mode "generate", weights, empty_cache_every) and holds what each
//    promises (its messages short, a draw's lengths within model.seq, one issue per line);
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
import { checkSpec, engineSpec } from '../../main/contract/spec';
import { layerSteps, MAX_ITERATIONS, MAX_LAYER_STEPS, specLimitIssues } from '../../main/contract/limits';
import { histogramTotal, isDraw, shapeCount } from '../../main/contract/shapes';
import { familyOf, MAX_WORLD, modelDims } from '../../main/contract/catalogue';
import { createHost } from '../../main/host/create';
import { startServer, type RunningServer } from '../../main/server/server';
import { rendererDist } from '../../main/paths';
import type { Host } from '../../main/host/host';
import { native } from '../helpers/addon';
import { deepTupleKey, laughsSnapshot, longTextArg } from '../helpers/pickles';
import { parseFrame } from '../helpers/frames';

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
        if (r.spec.mode === 'generate') expect(r.spec.new_tokens * modelDims(r.spec.model).depth).toBeLessThanOrEqual(MAX_LAYER_STEPS);
        if (r.spec.capacity !== null) expect(Number.isSafeInteger(r.spec.capacity) && r.spec.capacity >= 2 ** 20).toBe(true);
      }),
      { seed: SEED, numRuns: 5000 },
    );
  });
});

describe('fuzz: specs with shapes, fine-tuning and generation', () => {
  // Mostly plausible values (so that many specs pass and the accepted side is held too), now
  // and then a hostile one: out of range, not a number, not an option.
  const rare = <T, U>(good: fc.Arbitrary<T>, bad: fc.Arbitrary<U>) =>
    fc.oneof({ weight: 40, arbitrary: good as fc.Arbitrary<T | U> }, { weight: 1, arbitrary: bad as fc.Arbitrary<T | U> });
  const small = (max: number) => rare(fc.integer({ min: 1, max }), fc.constantFrom(0, -1, 1.5, 1e300, NaN, Infinity, 2 ** 53, '8'));
  const weight = rare(fc.double({ min: 0, max: 100, noNaN: true }), fc.constantFrom(1e-300, 1e307, 1e308, -1, NaN, Infinity));
  const seqDraw = fc.oneof(
    { weight: 8, arbitrary: fc.record({ min: small(32), max: small(96) }) },
    { weight: 8, arbitrary: fc.record({ histogram: fc.array(fc.tuple(small(96), weight), { minLength: 1, maxLength: 24 }) }) },
    {
      weight: 1,
      arbitrary: fc.record({
        histogram: fc.constantFrom(
          [],
          [
            [64, 1e308],
            [128, 1e308],
          ],
          Array.from({ length: 5000 }, () => [8, 1]),
        ),
      }),
    },
  );
  const draw = fc.record(
    {
      seq: seqDraw,
      batch: small(64),
      steps: small(64),
      seed: rare(fc.nat(), fc.constantFrom(-1, 2 ** 32, 1e300, 0.5)),
      pad_to: small(128),
      order: rare(fc.constantFrom('drawn', 'longest_first'), fc.constant('x')),
    },
    { requiredKeys: ['seq'] },
  );
  const list = fc.array(fc.record({ batch: small(32), seq: small(96) }), { minLength: 1, maxLength: 12 });
  const targets = fc.subarray(['attn', 'proj', 'fc', 'mlp_proj', 'q', 'k', 'v', 'o', 'gate', 'up', 'down', 'x', 'attn'], {
    minLength: 0,
    maxLength: 5,
  });
  const finetune = fc.oneof(
    { weight: 3, arbitrary: fc.record({ method: fc.constant('full') }) },
    { weight: 3, arbitrary: fc.record({ method: fc.constant('freeze'), blocks: small(8) }, { requiredKeys: ['method'] }) },
    {
      weight: 6,
      arbitrary: fc.record(
        { method: fc.constant('lora'), rank: small(64), alpha: rare(fc.integer({ min: 1, max: 128 }), fc.double()), targets },
        { requiredKeys: ['method'] },
      ),
    },
    { weight: 1, arbitrary: fc.record({ method: fc.constantFrom('qlora', '') }) },
  );
  // Data parallel: mostly absent, else a mix of valid and broken settings.
  const parallel = fc.oneof(
    { weight: 6, arbitrary: fc.constant(undefined) },
    {
      weight: 2,
      arbitrary: fc.record(
        {
          kind: rare(fc.constantFrom('fsdp2', 'ddp'), fc.constant('zero3')),
          world: rare(fc.constantFrom(1, 2, 4, 8, 64), fc.integer({ min: -2, max: 1e6 })),
          reshard_after_forward: fc.boolean(),
          param_dtype: fc.constantFrom(null, 'bf16', 'fp16', 'fp32', 'int4'),
          reduce_dtype: fc.constantFrom(null, 'fp32', 'bf16'),
          bucket_cap_mb: small(100),
        },
        { requiredKeys: ['kind'] },
      ),
    },
  );
  const spec = fc.record(
    {
      parallel,
      model: fc.record(
        {
          kind: rare(fc.constantFrom('gpt', 'llama'), fc.constant('mlp')),
          depth: small(6),
          dim: rare(fc.constantFrom(64, 128, 96), fc.constant(0)),
          heads: rare(fc.constantFrom(1, 2, 4), fc.constant(3)),
          seq: rare(fc.integer({ min: 64, max: 512 }), small(512)),
          vocab: small(1000),
        },
        { requiredKeys: ['kind'] },
      ),
      batch: small(16),
      iterations: small(64),
      mode: fc.constantFrom('train', 'train', 'train', 'train', 'inference', 'generate', 'loss_accumulation'),
      prompt: small(128),
      new_tokens: small(128),
      cache: rare(fc.constantFrom('dynamic', 'static'), fc.constant('paged')),
      weights: rare(fc.constantFrom('fp32', 'bf16', 'fp16'), fc.constant('int8')),
      precision: fc.constantFrom('fp32', 'tf32', 'fp16', 'bf16'),
      empty_cache_every: small(8),
      checkpoint: fc.constantFrom('none', 'block', 'sqrt'),
      finetune,
      shapes: fc.oneof(fc.constant(null), draw, draw, list),
    },
    { requiredKeys: ['model'] },
  );
  // A shapes value sets the iteration count; an explicit one mostly would not match it.
  const specs = fc.tuple(spec, fc.boolean()).map(([s, keep]) => {
    if (s.shapes && !keep) delete s.iterations;
    if (s.mode !== 'train' && !keep) delete s.empty_cache_every;
    if (s.parallel === undefined) delete s.parallel;
    return s;
  });

  it('3000 random specs: checkSpec never throws; what it accepts is bounded and consistent', () => {
    let accepted = 0;
    let drawn = 0;
    let parallelAccepted = 0;
    fc.assert(
      fc.property(specs, (s) => {
        const r = checkSpec(s);
        if (!r.ok) {
          expect(r.issues.length).toBeGreaterThan(0);
          expect(new Set(r.issues).size).toBe(r.issues.length);
          for (const line of r.issues) expect(line.length).toBeLessThan(1200);
          return;
        }
        accepted++;
        const sp = r.spec;
        expect(specLimitIssues(sp)).toEqual([]);
        expect(sp.iterations).toBeLessThanOrEqual(MAX_ITERATIONS);
        expect(layerSteps(sp)).toBeLessThanOrEqual(MAX_LAYER_STEPS);
        const seq = (sp.model as { seq?: number }).seq ?? Infinity;
        if (sp.mode === 'generate') expect(sp.prompt + sp.new_tokens).toBeLessThanOrEqual(seq);
        if (sp.finetune.method === 'lora') {
          const allowed = familyOf(sp.model.kind)!.loraTargets.map((t) => t.value);
          expect(sp.finetune.targets.every((t) => allowed.includes(t))).toBe(true);
          expect(new Set(sp.finetune.targets).size).toBe(sp.finetune.targets.length);
        }
        if (sp.parallel) {
          // Data parallel applies to training, one rank per GPU of a bounded world.
          expect(sp.mode).toBe('train');
          expect(Number.isInteger(sp.parallel.world) && sp.parallel.world >= 1 && sp.parallel.world <= MAX_WORLD).toBe(true);
          parallelAccepted++;
        }
        if (sp.shapes) {
          expect(sp.mode).toBe('train');
          expect(shapeCount(sp.shapes)).toBe(sp.iterations);
          if (isDraw(sp.shapes) && 'histogram' in sp.shapes.seq)
            expect(Number.isFinite(histogramTotal(sp.shapes.seq.histogram))).toBe(true);
          if (isDraw(sp.shapes)) drawn++;
          const steps = engineSpec(sp).shapes as { batch: number; seq: number }[];
          expect(steps).toHaveLength(sp.iterations);
          for (const st of steps) expect(st.seq >= 1 && st.seq <= seq && Number.isInteger(st.seq)).toBe(true);
        }
      }),
      { seed: SEED, numRuns: 3000 },
    );
    // The draws reach the accepted side too, not only the refusals.
    if (process.env.FUZZ_DEBUG) console.log(`accepted ${accepted} of 3000, ${drawn} with a draw`);
    expect(accepted).toBeGreaterThan(150);
    expect(drawn).toBeGreaterThan(20);
    expect(parallelAccepted).toBeGreaterThan(0);
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
    ws.on('message', (d) => replies.push(parseFrame(d)));
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
    const alive = new Promise((r) => ws.once('message', (d) => r(parseFrame(d))));
    ws.send(JSON.stringify({ id: 'last', method: 'devices.list' }));
    expect(await alive).toMatchObject({ id: 'last', ok: true });
    ws.close();
  });
});
