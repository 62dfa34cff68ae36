// Gradients by what they are: a parameter's .grad is "gradients", what backward makes on the
// way (the logits' gradient, each layer output's) is "activation_gradients". Only the split
// changes: the categories add up to the allocator's count at every sample. The
// transformer-memory lesson's claim is held here on its own experiments.
import { afterEach, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { native } from '../helpers/addon';
import { RunStore } from '../../main/store/store';
import { RunManager } from '../../main/runner/manager';
import { parseSpec, type SpecInput } from '../../main/contract/spec';
import { CATEGORIES, type Category, type MemorySample } from '../../main/contract/runs';
import { lessons } from '../../renderer/src/lessons/lessons';

const MiB = 2 ** 20;
const GiB = 2 ** 30;
const at = (s: MemorySample, c: Category) => s.by[CATEGORIES.indexOf(c)];
const homes: string[] = [];
afterEach(() => {
  while (homes.length) rmSync(homes.pop()!, { recursive: true, force: true });
});

async function timeline(spec: SpecInput): Promise<MemorySample[]> {
  const home = mkdtempSync(path.join(os.tmpdir(), 'vramlab-grads-'));
  homes.push(home);
  const store = await RunStore.open(home);
  const manager = new RunManager(native, store, { progress: () => {}, done: () => {}, error: () => {} });
  const run = await manager.start(parseSpec({ ...spec, history: false }));
  expect((await run.done).status).toBe('done');
  return (await store.get(run.runId)).timeline;
}
const peakSample = (t: MemorySample[]) => t.reduce((a, b) => (b.allocated > a.allocated ? b : a));

describe('gradient categories', () => {
  it('parameter gradients are the weights over again; the logits gradient is an activation gradient', async () => {
    // Every .grad is alive between backward and the step: then gradients == parameters.
    const t = await timeline({ model: { kind: 'gpt', vocab: 8192, seq: 256, dim: 256, depth: 2, heads: 4 }, batch: 4, optimizer: 'sgd' });
    for (const s of t) expect(s.by.reduce((a, b) => a + b, 0)).toBe(s.allocated);
    const params = at(t[t.length - 1], 'parameters');
    expect(Math.max(...t.map((s) => at(s, 'gradients')))).toBe(params);
    // batch x seq x vocab fp32: 4 x 256 x 8192 x 4 bytes.
    expect(Math.max(...t.map((s) => at(s, 'activation_gradients')))).toBeGreaterThanOrEqual(32 * MiB);
    expect(at(t[t.length - 1], 'activation_gradients')).toBe(0);
  });

  it('transformer-memory: at the peak no parameter has a gradient yet; the logits gradient is ~1.5 GiB, 256 MiB at vocab 8192', async () => {
    const lesson = lessons().find((l) => l.id === 'transformer-memory')!;
    const [base, small] = lesson.steps.filter((s) => s.action?.kind === 'experiment').map((s) => (s.action as { spec: SpecInput }).spec);
    const p = peakSample(await timeline(base));
    expect(at(p, 'gradients')).toBe(0);
    expect(Math.abs(at(p, 'activation_gradients') - 1.5 * GiB)).toBeLessThan(0.1 * GiB);
    const q = peakSample(await timeline(small));
    // The logits gradient (8 x 1024 x 8192 fp32) and the loss's own 512-byte gradient.
    expect(at(q, 'activation_gradients')).toBe(256 * MiB + 512);
  });
  it("lora-vs-full: LoRA leaves only the adapters' parameter gradients; backward's activation gradients stay", async () => {
    const lesson = lessons().find((l) => l.id === 'lora-vs-full')!;
    const [full, lora] = lesson.steps.filter((s) => s.action?.kind === 'experiment').map((s) => (s.action as { spec: SpecInput }).spec);
    const max = (t: MemorySample[], c: Category) => Math.max(...t.map((s) => at(s, c)));
    const [f, l] = [await timeline(full), await timeline(lora)];
    expect(max(f, 'gradients')).toBe(at(f[f.length - 1], 'parameters'));
    expect(max(l, 'gradients')).toBeLessThan(4 * MiB); // 786,432 fp32 adapter weights
    expect(max(l, 'activation_gradients')).toBeGreaterThan(512 * MiB);
  });
});
