// The hf presets against the models' published sizes, and the presets whose rope types
// (llama3, longrope, linear) the engine used to refuse, run through the CLI and the real addon.
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { useTempHome } from '../helpers/temp_home';
import { parseSpec } from '../../main/contract/spec';
import { parameterCount } from '../../main/contract/catalogue';
import { runCli } from '../helpers/io';

// sum(p.numel() for p in model.parameters()) as the model cards / HF report them (tied
// embeddings counted once). Gemma-3-4B's text model has no card of its own: its count is
// computed from Gemma3ForCausalLM's shapes (embed 262208 x 2560; 34 layers of q 2560x2048,
// k and v 2560x1024, o 2048x2560, MLP 3 x 2560x10240, 4 norms of 2560 and q/k norms of
// 256; the final norm), and matches the ~3.88B the Gemma 3 report gives the language model.
const PUBLISHED: Record<string, number> = {
  'llama-3-8b': 8_030_261_248,
  'mistral-7b': 7_241_732_096,
  'qwen2.5-1.5b': 1_543_714_304,
  'gemma-2-2b': 2_614_341_888,
  'gemma-2-9b': 9_241_705_984,
  'gemma-3-1b': 999_885_952,
  'gemma-3-4b': 3_880_263_168,
  'phi-3-mini-4k': 3_821_079_552,
  'gpt2-medium': 354_823_168,
};

describe('hf presets', () => {
  it.each(Object.entries(PUBLISHED))('%s has the published parameter count', (id, count) => {
    expect(parameterCount(parseSpec({ model: { kind: 'hf', preset: id } }).model)).toBe(count);
  });
});

const home = useTempHome('vramlab-hf-presets-');

let n = 0;
async function run(preset: string, extra: Record<string, unknown> = {}) {
  const file = path.join(home.dir, `spec${n++}.json`);
  const spec = {
    model: { kind: 'hf', preset, seq: 256 },
    batch: 1,
    iterations: 1,
    weights: 'bf16',
    precision: 'bf16',
    device: 'sim:h100-80gb',
    ...extra,
  };
  writeFileSync(file, JSON.stringify(spec));
  const r = await runCli(['run', file, '--json', '--quiet']);
  expect(r.err).toBe('');
  expect(r.code).toBe(0);
  return JSON.parse(r.out);
}

describe('hf presets with scaled rope types run', () => {
  it.each([
    ['llama-3.2-1b', 'llama3'],
    ['phi-3.5-mini', 'longrope'],
    ['gemma-3-4b', 'linear'],
  ])('%s (%s rope) trains a LoRA step with the parameters PyTorch counts', async (preset, rope) => {
    const parsed = parseSpec({ model: { kind: 'hf', preset } });
    const cfg = (parsed.model as { config: Record<string, unknown> }).config;
    const rp = (cfg.rope_parameters as Record<string, unknown>).full_attention ?? cfg.rope_parameters;
    expect((rp as Record<string, unknown>).rope_type).toBe(rope);
    const out = await run(preset, {
      finetune: { method: 'lora', rank: 8, targets: preset.startsWith('phi') ? ['qkv_proj'] : ['q_proj', 'v_proj'] },
    });
    expect(out.status).toBe('done');
    expect(out.parameters).toBeGreaterThan(parameterCount(parsed.model));
    expect(out.parameters - out.trainable_parameters).toBe(parameterCount(parsed.model));
    expect(out.readings.it0_after_zero_grad).toBeGreaterThan(0);
  });
});
