// The deepest specs the work limits allow run to the end: freeing a graph of ~100k autograd
// nodes used to recurse once per node and overflow the run thread's stack (SIGSEGV at
// llama depth 4096). Each run is a real `vramlab run` in its own process, so a crash is a
// reported signal; predictions go through the real addon in this process.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { layerSteps, MAX_LAYER_STEPS } from '../../main/contract/limits';
import { modelDims } from '../../main/contract/catalogue';
import { parseSpec, type SpecInput } from '../../main/contract/spec';
import { Predictor } from '../../main/runner/predict';
import { native } from '../helpers/addon';

const root = path.resolve(__dirname, '../..');
let dir = '';
beforeAll(() => void (dir = mkdtempSync(path.join(os.tmpdir(), 'vramlab-deep-'))));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

// Tiny widths: the depth of the graph is what matters. Every family, mode and fine-tune
// method is also run at this depth on a 512 KiB thread by native/tests/runner_deep_graph_test.cpp;
// here, the CLI and the addon as the app uses them.
const LLAMA = { kind: 'llama', depth: 4096, dim: 8, heads: 1, kv_heads: 1, ffn: 8, vocab: 8, seq: 4 } as const;
const GPT = { kind: 'gpt', depth: 4096, dim: 8, heads: 1, vocab: 8, seq: 4 } as const;

const DEEPEST: [string, SpecInput][] = [
  ['llama training', { model: LLAMA, batch: 1, iterations: 1, optimizer: 'sgd' }],
  [
    'gpt bf16 + LoRA + checkpointing every 2 blocks',
    {
      model: GPT,
      batch: 1,
      iterations: 1,
      optimizer: 'sgd',
      precision: 'bf16',
      checkpoint: { every: 2 },
      finetune: { method: 'lora', rank: 2, targets: ['attn', 'fc'] },
    },
  ],
  ['mlp training', { model: { kind: 'mlp', depth: 4096, in: 8, hidden: 8, out: 8 }, batch: 2, iterations: 1, optimizer: 'sgd' }],
];
// A loaded 2-core machine runs a depth-4096 spec in a few seconds; leave room.
const SLOW = 120_000;

describe('the deepest specs the limits allow', () => {
  it('are at the limits', () => {
    for (const [, input] of DEEPEST) {
      const spec = parseSpec(input);
      expect(modelDims(spec.model).depth).toBe(4096);
      expect(layerSteps(spec)).toBeLessThanOrEqual(MAX_LAYER_STEPS);
    }
  });

  it.each(DEEPEST)(
    'run to the end through the CLI: %s',
    (_name, input) => {
      const file = path.join(dir, `${_name.replace(/\W+/g, '_')}.json`);
      writeFileSync(file, JSON.stringify(input));
      const r = spawnSync(process.execPath, [path.join(root, 'bin/vramlab.js'), 'run', file, '--json', '--quiet'], {
        cwd: root,
        encoding: 'utf8',
        env: { ...process.env, VRAMLAB_HOME: path.join(dir, 'home') },
        timeout: SLOW,
      });
      expect(r.signal, r.stderr).toBeNull();
      expect(r.status, r.stderr).toBe(0);
      const out = JSON.parse(r.stdout);
      expect(out.status).toBe('done');
    },
    SLOW,
  );

  it(
    'predicts llama bf16 + LoRA at depth 4096 through the addon',
    async () => {
      const spec = parseSpec({
        model: LLAMA,
        batch: 1,
        iterations: 1,
        optimizer: 'sgd',
        precision: 'bf16',
        finetune: { method: 'lora', rank: 2, targets: ['q', 'v', 'down'] },
      });
      const p = await new Predictor(native).predict(spec);
      expect(p.status, p.message ?? '').toBe('done');
      expect(p.peak_allocated).toBeGreaterThan(0);
    },
    SLOW,
  );
});
