// Wall time of simulating Hugging Face models through the CLI, as a user runs them:
//   - one LoRA training step of an 8B Llama from its config.json (Llama-3.1-8B's, the Llama-3-8B
//     config.json itself was not found: same layers) at batch 1 x seq 8192 in bf16. Target: under 1 s.
//   - `vramlab fit --param batch` for Qwen2.5-7B (seq 2048) with LoRA and per-block
//     checkpointing on a 24 GiB card. Target: under 5 s.
//   - `vramlab fit --param seq` for Llama-3-8B LoRA r16 on q/k/v/o with checkpointing, batch 1,
//     under issue 21's 24 GB cap (23,344 MiB: an RTX 4090 less its context), from seq 2048: the
//     longest length that fits, the allocated bound and how many lengths up to it stayed
//     unprobed with the default budget, and the probes it took (no target: reported).
//   node bench/engine/hf_time.mjs        (needs the addon and `npm run build:main`)
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

const root = path.resolve(import.meta.dirname, '../..');
const home = mkdtempSync(path.join(tmpdir(), 'vramlab-hf-bench-'));
// The llama-3.1-8b preset's config.json without its rope_scaling (the engine builds only the
// default rope so far; the rope type changes no tensor's size): Llama-3-8B's own layers.
const LLAMA_8B = {
  architectures: ['LlamaForCausalLM'],
  hidden_size: 4096,
  intermediate_size: 14336,
  max_position_embeddings: 131072,
  num_attention_heads: 32,
  num_hidden_layers: 32,
  num_key_value_heads: 8,
  rms_norm_eps: 1e-5,
  rope_theta: 500000.0,
  tie_word_embeddings: false,
  vocab_size: 128256,
};
const bf16Lora = { weights: 'bf16', precision: 'bf16', optimizer: 'adamw', finetune: { method: 'lora', rank: 16 } };
const cases = [
  {
    name: 'Llama-3-8B layers LoRA r16, 1 step, b1 x 8192',
    spec: { model: { kind: 'hf', config: LLAMA_8B, seq: 8192 }, batch: 1, iterations: 1, ...bf16Lora },
    args: ['run'],
    target: 1,
    answer: (out) => `${(out.peak_reserved / 2 ** 30).toFixed(1)} GiB`,
  },
  {
    name: 'Qwen2.5-7B LoRA r16 ckpt fit batch, 24 GiB',
    spec: { model: { kind: 'hf', preset: 'qwen2.5-7b' }, checkpoint: 'block', ...bf16Lora },
    args: ['fit', '--param', 'batch', '--capacity', '24GiB'],
    target: 5,
    answer: (out) => `batch ${out.value}`,
  },
  {
    name: 'Llama-3-8B LoRA q/k/v/o ckpt fit seq, 24 GB (1 run)',
    spec: {
      model: { kind: 'hf', preset: 'llama-3-8b', seq: 2048 },
      batch: 1,
      checkpoint: 'block',
      ...bf16Lora,
      finetune: { method: 'lora', rank: 16, alpha: 32, targets: ['q_proj', 'k_proj', 'v_proj', 'o_proj'] },
    },
    args: ['fit', '--param', 'seq', '--capacity', '24477958144'],
    target: '-',
    runs: 1,
    answer: (out) => {
      const unprobed = out.unexplored.reduce((n, [a, b]) => n + b - a + 1, 0);
      return `seq ${out.value} (bisection ${out.bisected}; bound ${out.bound}, ${unprobed} unprobed; ${out.probes.length} probes)`;
    },
  },
];
try {
  console.log(`${'case'.padEnd(52)} ${'answer'.padStart(12)} ${'wall s (best of 3)'.padStart(19)} ${'target s'.padStart(9)}`);
  for (const c of cases) {
    const file = path.join(home, 'spec.json');
    writeFileSync(file, JSON.stringify(c.spec));
    let best = Infinity;
    let answer = '';
    for (let i = 0; i < (c.runs ?? 3); i++) {
      const t0 = performance.now();
      const r = spawnSync(
        process.execPath,
        [path.join(root, 'bin/vramlab.js'), ...c.args.slice(0, 1), file, ...c.args.slice(1), '--json', '-q'],
        {
          env: { ...process.env, VRAMLAB_HOME: path.join(home, 'store') },
          encoding: 'utf8',
        },
      );
      if (r.status !== 0) {
        answer = `error: ${(r.stderr || r.stdout).trim().split('\n').at(-1)}`;
        break;
      }
      best = Math.min(best, (performance.now() - t0) / 1000);
      answer = c.answer(JSON.parse(r.stdout));
    }
    const wall = Number.isFinite(best) ? best.toFixed(2) : '-';
    console.log(`${c.name.padEnd(52)} ${answer.padStart(12)} ${wall.padStart(19)} ${String(c.target).padStart(9)}`);
  }
} finally {
  rmSync(home, { recursive: true, force: true });
}
