// The hf model kind against PyTorch (test/refs/hf_reference.json: transformers 5.17 + PEFT 0.21
// on an H200, hf_protocol.py), each protocol spec converted to our spec by the contract's rules
// and run through the CLI and the real addon on the simulated H200.
// What holds today: Llama training, full and LoRA, and Mixtral training (4 experts, top 2: the
// router, the sort by expert, the grouped_mm experts) exact at every reading (runs 0, 1, 4);
// parameter and trainable counts exact for every run the engine builds. Not yet: Qwen2's
// readings after the first backward (within 2.5 MiB), GPT-2 (run 2: the engine does not build
// it yet), and generation's readings (PyTorch's peak_generate; the engine reports
// peak_prefill / peak_decode, and holds the cache after generate()).
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { useTempHome } from '../helpers/temp_home';
import { main } from '../../main/cli/main';
import type { CliIO } from '../../main/cli/io';
import { hfReference, protocolToSpec, type ReferenceRun } from '../helpers/hf_reference';

const home = useTempHome('vramlab-hf-ref-');

let n = 0;
async function runReference(ref: ReferenceRun) {
  const file = path.join(home.dir, `spec${n++}.json`);
  writeFileSync(file, JSON.stringify({ ...protocolToSpec(ref.spec), device: 'sim:h200-141gb' }));
  let out = '';
  let err = '';
  const io: CliIO = { out: (t) => (out += t), err: (t) => (err += t) };
  const code = await main(['run', file, '--json', '--quiet'], io);
  expect(err).toBe('');
  expect(code).toBe(0);
  return JSON.parse(out);
}

const runs = hfReference().runs;
const label = (i: number) => {
  const s = runs[i].spec;
  const ft = s.finetune && s.finetune !== 'full' ? ` LoRA r${s.finetune.rank}` : '';
  return `${s.hf.arch} b${s.batch} seq ${s.seq} ${s.weights ?? 'fp32'}${ft} ${s.mode ?? 'train'}`;
};

describe('hf models against the PyTorch reference runs', () => {
  it.each([0, 1, 3, 4, 5].map((i) => [label(i), i] as const))('%s: the parameters PyTorch counted', async (_name, i) => {
    const result = await runReference(runs[i]);
    expect(result.status).toBe('done');
    expect(result.parameters).toBe(runs[i].total);
    expect(result.trainable_parameters).toBe(runs[i].trainable);
  });

  it.each([0, 1, 4].map((i) => [label(i), i] as const))('%s: every reading exact, byte for byte', async (_name, i) => {
    const result = await runReference(runs[i]);
    expect(result.readings).toEqual(runs[i].readings);
  });
});
