// The CLI with the transformer families: `run` with a GPT spec, `fit --param seq` (the
// longest sequence that fits), a sweep over seq and over the LoRA rank, and the help that
// the catalogue writes. Relations only: transformer bytes may still move while parity work goes on.
import { describe, expect, it } from 'vitest';
import { useTempHome } from '../helpers/temp_home';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { runCli } from '../helpers/io';

const home = useTempHome('vramlab-cli-tf-');

const cli = runCli;
let n = 0;
function specFile(spec: unknown): string {
  const f = path.join(home.dir, `spec${n++}.json`);
  writeFileSync(f, JSON.stringify(spec));
  return f;
}
const SMALL_GPT = { kind: 'gpt', vocab: 8192, seq: 256, dim: 256, depth: 4, heads: 4 };

describe('vramlab with transformer specs', () => {
  it('runs a GPT spec: protocol readings, parameter counts, the attention backend', async () => {
    const { code, out, err } = await cli(['run', specFile({ model: SMALL_GPT, batch: 4 }), '--json']);
    expect(err).toBe('');
    expect(code).toBe(0);
    const r = JSON.parse(out);
    expect(r.status).toBe('done');
    expect(r.spec).toMatchObject({ model: SMALL_GPT, batch: 4, loss: 'cross_entropy', finetune: { method: 'full' } });
    expect(Object.keys(r.readings)).toEqual(expect.arrayContaining(['params', 'input', 'after_forward', 'it1_peak_step', 'reserved_peak']));
    expect(r.parameters).toBe(5_322_240);
    expect(r.trainable_parameters).toBe(r.parameters);
    expect(r.sdpa_backend).toBeTruthy();
    // fp32 weights: 4 bytes per parameter, rounded into the allocator's blocks.
    expect(r.readings.params).toBeGreaterThanOrEqual(4 * r.parameters);
    const text = await cli(['run', specFile({ model: SMALL_GPT, batch: 4, finetune: { method: 'lora' } })]);
    expect(text.out).toMatch(/5,\d{3},\d{3} parameters, \d[\d,]* trainable; attention backend \w+/);
  });

  it('rejects a transformer spec naming the field, the rule and the value', async () => {
    const r = await cli(['run', specFile({ model: { ...SMALL_GPT, heads: 3 } })]);
    expect(r.code).toBe(2);
    expect(r.err).toContain('model.heads: must divide model.dim (256) evenly (got 3)');
  });

  it('fit --param seq finds the longest sequence that fits', async () => {
    const { code, out } = await cli([
      'fit',
      specFile({ model: SMALL_GPT, batch: 4, capacity: '1GiB' }),
      '--param',
      'seq',
      '--max',
      '8192',
      '--json',
      '-q',
    ]);
    expect(code).toBe(0);
    const f = JSON.parse(out);
    expect(f.param).toBe('seq');
    const ok = f.probes.filter((p: { ok: boolean }) => p.ok).map((p: { value: number }) => p.value);
    const no = f.probes.filter((p: { ok: boolean }) => !p.ok).map((p: { value: number }) => p.value);
    expect(ok.length).toBeGreaterThan(0);
    expect(no.length).toBeGreaterThan(0);
    expect(f.value).toBe(Math.max(...ok));
    // Under the cap "fits" is not monotone: lengths below the answer may run out (named), and
    // the next length up runs out or is past the allocated bound.
    expect(f.runsOutBelow).toEqual(no.filter((v: number) => v < f.value).sort((a: number, b: number) => a - b));
    expect(no.includes(f.value + 1) || f.bound === f.value).toBe(true);
    expect(f.batch).toBe(4);
    const bad = await cli(['fit', specFile({ batch: 4 }), '--param', 'seq']);
    expect(bad.code).toBe(2);
    expect(bad.err).toMatch(/seq applies to the transformer families; model.kind is "mlp"/);
  }, 120_000);

  it('fit --param new_tokens finds the longest generation that fits, and sweeps it', async () => {
    // A dynamic cache grows by torch.cat each step; batch 64 x (prompt + new tokens) under 256 MiB.
    const gen = { model: { ...SMALL_GPT, seq: 1024 }, batch: 64, mode: 'generate', prompt: 64, cache: 'dynamic', capacity: '256MiB' };
    const { code, out } = await cli(['fit', specFile(gen), '--param', 'new_tokens', '--max', '900', '--json', '-q']);
    expect(code).toBe(0);
    const f = JSON.parse(out);
    expect(f.param).toBe('new_tokens');
    const ok = f.probes.filter((p: { ok: boolean }) => p.ok).map((p: { value: number }) => p.value);
    const no = f.probes.filter((p: { ok: boolean }) => !p.ok).map((p: { value: number }) => p.value);
    expect(ok.length).toBeGreaterThan(0);
    expect(no.length).toBeGreaterThan(0);
    expect(f.value).toBe(Math.max(...ok));
    expect(f.value).toBeGreaterThan(64);
    expect(no.includes(f.value + 1) || f.bound === f.value).toBe(true);
    const sweep = JSON.parse(
      (await cli(['sweep', specFile({ ...gen, capacity: null }), '--param', 'new_tokens', '--values', '16,64', '--json', '-q'])).out,
    );
    const peaks = sweep.runs.map((r: { readings: Record<string, number> }) => r.readings.peak_decode);
    expect(peaks[1]).toBeGreaterThan(peaks[0]); // the cache grows with the tokens generated
  }, 120_000);

  it('sweeps seq and the LoRA rank: memory grows with each', async () => {
    const base = specFile({ model: SMALL_GPT, batch: 4 });
    const seq = JSON.parse((await cli(['sweep', base, '--param', 'seq', '--values', '64,128,256', '--json', '-q'])).out);
    const peaks = seq.runs.map((r: { peak_allocated: number }) => r.peak_allocated);
    expect(peaks[1]).toBeGreaterThan(peaks[0]);
    expect(peaks[2]).toBeGreaterThan(peaks[1]);
    const rank = JSON.parse((await cli(['sweep', base, '--param', 'rank', '--values', '4,64', '--json', '-q'])).out);
    const p = rank.runs.map((r: { readings: Record<string, number> }) => r.readings.params);
    expect(p[1]).toBeGreaterThan(p[0]); // bigger adapters
  }, 120_000);

  it('prints the spec keys the catalogue describes', async () => {
    const { out } = await cli(['run', '--help']);
    for (const s of ['gpt:', 'llama:', 'kv_heads', '= heads', 'GPT-2 medium (350M)', 'Llama-3-8B', 'finetune', 'nesterov', 'cache'])
      expect(out).toContain(s);
  });
});

describe('OOM advice for transformers', () => {
  it('offers only the changes the simulator finds to fit, and says what the run needs', async () => {
    const { code, out } = await cli([
      'run',
      specFile({ model: { kind: 'gpt', vocab: 50257, seq: 1024, dim: 256, depth: 2, heads: 4 }, batch: 16, capacity: '2GiB' }),
      '--json',
    ]);
    expect(code).toBe(0);
    const r = JSON.parse(out);
    expect(r.status).toBe('oom');
    // Under a 2 GiB cap the logits dominate: removing the cap fits, checkpointing the blocks does not.
    expect(r.oom.suggestions.some((x: string) => x.startsWith('capacity: none'))).toBe(true);
    expect(r.oom.suggestions.some((x: string) => x.startsWith('checkpoint:'))).toBe(false);
    expect(r.verdict.fits).toBe(false);
    expect(r.verdict.margin).toBeLessThan(0);
    expect(r.parameters).toBeGreaterThan(0);
  });
});
