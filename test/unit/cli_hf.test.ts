// `vramlab run` with an hf spec naming a preset, as a user runs it (the built CLI in its own
// process, the real addon): the preset's config is completed and run, the run's name says the
// model and LoRA, and a config the contract refuses exits 2 naming the field.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const root = path.resolve(import.meta.dirname, '../..');
const bin = path.join(root, 'bin/vramlab.js');
let dir = '';
beforeAll(() => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'vramlab-cli-hf-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function vramlab(spec: unknown, ...args: string[]) {
  const file = path.join(dir, `spec-${Math.random().toString(36).slice(2)}.json`);
  writeFileSync(file, JSON.stringify(spec));
  return spawnSync(process.execPath, [bin, 'run', file, ...args], {
    env: { ...process.env, VRAMLAB_HOME: path.join(dir, 'home') },
    encoding: 'utf8',
  });
}

describe('vramlab run with an hf spec', () => {
  it('lists the hf keys and the preset ids in its help', () => {
    const r = spawnSync(process.execPath, [bin, 'run', '--help'], { encoding: 'utf8' });
    expect(r.status).toBe(0);
    expect(r.stdout).toContain("config: the model's config.json");
    expect(r.stdout).toContain('qwen2.5-0.5b (Qwen2.5-0.5B)');
  });

  it('runs a preset with LoRA: done, named for the model, its config completed', () => {
    const r = vramlab(
      {
        model: { kind: 'hf', preset: 'qwen2.5-0.5b', seq: 256 },
        batch: 2,
        iterations: 1,
        weights: 'bf16',
        precision: 'bf16',
        optimizer: 'adamw',
        finetune: { method: 'lora', rank: 16 },
      },
      '--json',
      '--quiet',
    );
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    const out = JSON.parse(r.stdout);
    expect(out.status).toBe('done');
    expect(out.name).toBe('Qwen2.5-0.5B seq 256 LoRA r16 b2 adamw bf16');
    expect(out.parameters).toBe(494_032_768 + 16 * 24 * (896 + 896 + 896 + 128));
    expect(out.spec.model.config).toMatchObject({ architectures: ['Qwen2ForCausalLM'], head_dim: 64, num_key_value_heads: 2 });
    expect(out.readings.params).toBeGreaterThan(0);
  });

  it('refuses an unsupported architecture before anything runs, naming it', () => {
    const r = vramlab({ model: { kind: 'hf', config: { architectures: ['BertForMaskedLM'] } } });
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('model.config.architectures.0: architecture "BertForMaskedLM" is not supported');
  });

  // Eager attention keeps the (batch, heads, seq, seq) weights SDPA never materialises, and
  // LoRA dropout keeps a mask and a dropped copy of each adapter input: both cost memory.
  it('runs eager attention and LoRA dropout, each above its sdpa / no-dropout twin', () => {
    const peak = (model: Record<string, unknown>, dropout: number) => {
      const r = vramlab(
        {
          model: { kind: 'hf', preset: 'qwen2.5-0.5b', seq: 256, ...model },
          batch: 2,
          iterations: 1,
          weights: 'bf16',
          precision: 'bf16',
          optimizer: 'adamw',
          finetune: { method: 'lora', rank: 16, dropout },
        },
        '--json',
        '--quiet',
      );
      expect(r.stderr).toBe('');
      expect(r.status).toBe(0);
      return JSON.parse(r.stdout).readings.it0_peak_fwd_bwd as number;
    };
    const sdpa = peak({}, 0);
    expect(peak({ attn_implementation: 'eager' }, 0)).toBeGreaterThan(sdpa);
    expect(peak({}, 0.1)).toBeGreaterThan(sdpa);
  });

  it('generates with GPT-2 (the dynamic cache)', () => {
    const r = vramlab(
      { model: { kind: 'hf', preset: 'gpt2', seq: 64 }, mode: 'generate', prompt: 32, new_tokens: 8, batch: 2, weights: 'bf16' },
      '--json',
      '--quiet',
    );
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    const out = JSON.parse(r.stdout);
    expect(out.status).toBe('done');
    expect(out.readings.peak_generate).toBeGreaterThan(out.readings.params);
  });

  it('refuses an unknown preset, listing the presets', () => {
    const r = vramlab({ model: { kind: 'hf', preset: 'llama-9' } });
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('model.preset: unknown preset (presets: "gpt2", "gpt2-large", "llama-3.2-1b"');
  });
});
