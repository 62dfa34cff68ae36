// What a mode reads of a spec (contract catalogue/applies.ts) decides, in one place, what the
// experiment form sends, what the spec's checks accept for fine-tuning, and which CSV cells
// and JSON keys an exported run carries.
import { describe, expect, it } from 'vitest';
import { checkSpec, parseSpec } from '../../main/contract/spec';
import { MODES, finetuneMethodsFor, familyOf, modeReads } from '../../main/contract/catalogue';
import { chooseFamily, defaultForm, formToSpec } from '../../renderer/src/lib/specForm';
import { specColumns } from '../../main/export/spec_columns';
import { summaryCsv } from '../../main/export/summary_csv';
import { runsJson } from '../../main/export/json';
import type { RunMeta } from '../../main/contract/runs';

const TRAINING_ONLY = ['optimizer', 'accum', 'checkpoint', 'iterations', 'empty_cache_every', 'shapes', 'loss'];
const GENERATION_ONLY = ['prompt', 'new_tokens', 'cache'];

function gptForm(mode: string, finetune: 'full' | 'freeze' | 'lora' = 'lora') {
  const f = defaultForm();
  chooseFamily(f, 'gpt');
  Object.assign(f, { depth: '2', dim: '128', heads: '2', seq: '256', vocab: '512', batch: '2' });
  f.finetune = finetune;
  f.mode = mode;
  return f;
}

describe('what a mode reads', () => {
  it('training reads the optimizer and never the prompt; generation the reverse', () => {
    for (const k of ['optimizer', 'accum', 'set_to_none', 'empty_cache_every', 'shapes']) {
      expect(modeReads('train', k)).toBe(true);
      expect(modeReads('generate', k)).toBe(false);
      expect(modeReads('inference', k)).toBe(false);
    }
    for (const k of GENERATION_ONLY) {
      expect(modeReads('generate', k)).toBe(true);
      expect(modeReads('train', k)).toBe(false);
    }
    // Every mode reads the model, the card and the allocator settings.
    for (const m of MODES)
      for (const k of ['model', 'batch', 'device', 'alloc_conf', 'capacity', 'precision']) expect(modeReads(m, k)).toBe(true);
  });

  it('LoRA outside training only for a family that serves adapters (hf); freezing needs a graph', () => {
    const gpt = familyOf('gpt')!;
    const hf = familyOf('hf')!;
    expect(finetuneMethodsFor('train', gpt)).toEqual(['full', 'freeze', 'lora']);
    expect(finetuneMethodsFor('generate', gpt)).toEqual(['full']);
    expect(finetuneMethodsFor('generate', hf)).toEqual(['full', 'lora']);
    expect(finetuneMethodsFor('train', familyOf('mlp')!)).toEqual(['full']);
  });
});

describe('the form sends only what applies', () => {
  it('generation: no LoRA (gpt), no optimizer, no training fields; the generation fields', () => {
    const { spec, errors } = formToSpec(gptForm('generate'));
    expect(errors).toEqual({});
    const keys = Object.keys(spec!);
    for (const k of [...TRAINING_ONLY, 'finetune']) expect(keys).not.toContain(k);
    for (const k of GENERATION_ONLY) expect(keys).toContain(k);
    expect(checkSpec(spec).ok).toBe(true);
  });

  it('training: LoRA and the optimizer, no generation fields', () => {
    const { spec } = formToSpec(gptForm('train'));
    expect(spec!.finetune).toMatchObject({ method: 'lora' });
    expect(spec!.optimizer).toBe('adam');
    for (const k of GENERATION_ONLY) expect(Object.keys(spec!)).not.toContain(k);
  });

  it('inference: neither optimizer nor accumulation nor LoRA on gpt; the loss (it picks the labels) stays', () => {
    const { spec } = formToSpec(gptForm('inference'));
    for (const k of ['optimizer', 'accum', 'iterations', 'checkpoint', 'finetune', ...GENERATION_ONLY])
      expect(Object.keys(spec!)).not.toContain(k);
    expect(spec!.loss).toBe('cross_entropy');
  });

  it('a hidden field with bad text neither blocks the spec nor reaches it', () => {
    const f = gptForm('generate');
    f.accum = 'abc';
    f.optimizerArgs = { ...f.optimizerArgs, lr: 'x' };
    const { spec, errors } = formToSpec(f);
    expect(errors).toEqual({});
    expect(spec).not.toBeNull();
    f.mode = 'train';
    expect(formToSpec(f).errors.accum).toMatch(/not a whole number/);
  });

  it('hf keeps its LoRA adapters in generation (PEFT generate)', () => {
    const f = defaultForm();
    chooseFamily(f, 'hf');
    f.mode = 'generate';
    f.finetune = 'lora';
    const { spec } = formToSpec(f);
    expect(spec!.finetune).toMatchObject({ method: 'lora' });
    expect(Object.keys(spec!)).not.toContain('optimizer');
  });
});

describe('the spec refuses fine-tuning its mode cannot use', () => {
  it('LoRA in generation on gpt is refused, naming what the mode takes', () => {
    const r = checkSpec({
      model: { kind: 'gpt', depth: 2, dim: 128, heads: 2, seq: 256, vocab: 512 },
      mode: 'generate',
      finetune: { method: 'lora' },
    });
    expect(r.ok).toBe(false);
    if (!r.ok)
      expect(r.issues.join('\n')).toMatch(
        /finetune\.method: mode "generate" with model.kind "gpt" takes finetune.method "full".*model.kind "hf"/,
      );
  });
});

describe('exports carry what applies', () => {
  const meta = (id: string, spec: unknown): RunMeta =>
    ({
      id,
      name: id,
      created: '2026-11-26T10:00:00.000Z',
      updated: '2026-11-26T10:00:01.000Z',
      status: 'done',
      device: 'sim:h100-80gb',
      spec: parseSpec(spec),
      group: null,
      pid: 1,
      hostname: 'h',
      summary: null,
    }) as unknown as RunMeta;
  const model = { kind: 'gpt', depth: 2, dim: 128, heads: 2, seq: 256, vocab: 512 };
  const gen = meta('gen', { model, mode: 'generate', optimizer: 'sgd' });
  const train = meta('train', { model, mode: 'train', optimizer: 'sgd' });

  it('a generation row has no optimizer cells, a training row no prompt', () => {
    const g = specColumns(gen.spec);
    const t = specColumns(train.spec);
    expect(g.optimizer).toBeNull();
    expect(g.optimizer_lr).toBeNull();
    expect(g.accum).toBeNull();
    expect(g.prompt).toBe(128);
    expect(t.optimizer).toBe('sgd');
    expect(t.prompt).toBeNull();
    expect(t.cache).toBeNull();
    const csv = summaryCsv([gen, train]).split('\r\n');
    const header = csv[0].split(',');
    const cell = (row: number, col: string) => csv[row].split(',')[header.indexOf(col)];
    expect(cell(1, 'optimizer')).toBe('');
    expect(cell(2, 'optimizer')).toBe('sgd');
  });

  it('the JSON export drops the keys the mode does not read', () => {
    const [g, t] = JSON.parse(runsJson([gen, train])).runs as { spec: Record<string, unknown> }[];
    for (const k of [...TRAINING_ONLY, 'set_to_none', 'keep_loss_graph', 'parallel']) expect(g.spec).not.toHaveProperty(k);
    expect(g.spec).toMatchObject({ mode: 'generate', prompt: 128, new_tokens: 128, cache: 'dynamic' });
    for (const k of GENERATION_ONLY) expect(t.spec).not.toHaveProperty(k);
    expect(t.spec.optimizer).toMatchObject({ kind: 'sgd' });
  });
});
