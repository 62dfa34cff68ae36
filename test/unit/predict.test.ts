// The prediction is a simulated run: for the default spec it equals the run's own peak and
// readings exactly, it follows every family, and a newer request on a channel cancels the
// older one.
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { native } from '../helpers/addon';
import { Predictor, simDevice } from '../../main/runner/predict';
import { RunManager } from '../../main/runner/manager';
import { RunStore } from '../../main/store/store';
import { parseSpec, type SpecInput } from '../../main/contract/spec';

const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));
async function manager() {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'vramlab-predict-'));
  dirs.push(dir);
  return new RunManager(native, await RunStore.open(dir));
}
const SMALL_GPT = { kind: 'gpt', vocab: 8192, seq: 256, dim: 256, depth: 4, heads: 4 } as const;

describe('run.predict', () => {
  it.each<[string, SpecInput]>([
    ['the default spec', {}],
    ['a residual stack with checkpointing', { model: { kind: 'residual', depth: 8 }, checkpoint: 'sqrt', batch: 64 }],
    ['a small GPT', { model: SMALL_GPT, batch: 4 }],
    ['a small GPT with LoRA', { model: SMALL_GPT, batch: 4, finetune: { method: 'lora', targets: ['attn', 'fc'] } }],
    ['a small GPT generating', { model: SMALL_GPT, batch: 4, mode: 'generate', prompt: 64, new_tokens: 32 }],
  ])('equals the run for %s', async (_name, input) => {
    const spec = parseSpec(input);
    const predicted = await new Predictor(native).predict(spec);
    const meta = await (await (await manager()).start(spec)).done;
    expect(predicted.status).toBe('done');
    expect(predicted.device).toBe(spec.device);
    expect(predicted.peak_allocated).toBe(meta.summary!.peak_allocated);
    expect(predicted.peak_reserved).toBe(meta.summary!.peak_reserved);
    expect(predicted.baseline).toBe(meta.summary!.baseline);
    expect(predicted.readings).toEqual(meta.summary!.readings);
    expect(predicted.parameters).toBe(meta.summary!.parameters);
    expect(predicted.trainable_parameters).toBe(meta.summary!.trainable_parameters);
  });

  it("predicts an OOM under a capacity, with PyTorch's message", async () => {
    const p = await new Predictor(native).predict(parseSpec({ batch: 65536, capacity: '512MiB' }));
    expect(p.status).toBe('oom');
    expect(p.capacity).toBe(512 * 2 ** 20);
    expect(p.message).toMatch(/^CUDA out of memory/);
  });

  it('cancels the request a newer one on the same channel supersedes', async () => {
    const predictor = new Predictor(native);
    const long = predictor.predict(parseSpec({ model: { kind: 'residual', dim: 64, depth: 4 }, batch: 8, iterations: 10_000 }), 'panel');
    const other = predictor.predict(parseSpec({}), 'elsewhere');
    await new Promise((r) => setTimeout(r, 50));
    const next = predictor.predict(parseSpec({}), 'panel');
    expect((await long).status).toBe('cancelled');
    expect((await next).status).toBe('done');
    expect((await other).status).toBe('done');
  });

  it("runs a CUDA card's spec on a simulated card of the same size", () => {
    expect(simDevice(native, 'sim:t4-16gb')).toBe('sim:t4-16gb');
    expect(() => simDevice(native, 'cuda:9')).toThrow(/no CUDA device cuda:9/);
  });
});
