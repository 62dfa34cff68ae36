// The transformer families, fine-tuning, generation and per-iteration shapes in the spec:
// defaults from the catalogue and every cross-field rule, each rejection naming the field,
// what is allowed and what was given.
import { describe, expect, it } from 'vitest';
import { checkSpec, parseSpec } from '../../main/contract/spec';
import { withParam } from '../../main/contract/sweep_params';
import { FAMILY_TABLE, parameterCount } from '../../main/contract/catalogue';

function issues(input: unknown): string[] {
  const r = checkSpec(input);
  if (r.ok) throw new Error(`expected ${JSON.stringify(input)} to be rejected`);
  return r.issues;
}

describe('transformer specs', () => {
  it('fills the family defaults: batch 8, cross-entropy, GPT-2 small and kv_heads = heads', () => {
    const g = parseSpec({ model: { kind: 'gpt' } });
    expect(g.model).toEqual({ kind: 'gpt', vocab: 50257, seq: 1024, dim: 768, depth: 12, heads: 12 });
    expect(g.batch).toBe(8);
    expect(g.loss).toBe('cross_entropy');
    expect(parseSpec({ model: { kind: 'llama', heads: 16, dim: 1024 } }).model).toMatchObject({ heads: 16, kv_heads: 16 });
    expect(parseSpec({ model: { kind: 'gpt' }, batch: 2 }).batch).toBe(2);
  });

  it('outputs exactly the engine shape (every key, in order)', () => {
    const s = parseSpec({ model: { kind: 'llama' }, optimizer: { kind: 'sgd', momentum: 0.9 } });
    expect(Object.keys(s)).toEqual([
      'model',
      'batch',
      'iterations',
      'accum',
      'checkpoint',
      'precision',
      'weights',
      'optimizer',
      'set_to_none',
      'mode',
      'keep_loss_graph',
      'loss',
      'finetune',
      'shapes',
      'prompt',
      'new_tokens',
      'cache',
      'empty_cache_every',
      'alloc_conf',
      'device',
      'capacity',
      'history',
      'parallel',
    ]);
    expect(s.optimizer).toEqual({ kind: 'sgd', lr: 0.001, foreach: true, momentum: 0.9, weight_decay: 0, nesterov: false });
    expect(parseSpec({ optimizer: 'none' }).optimizer).toEqual({ kind: 'none' });
  });

  it("fills LoRA: rank 8, alpha 2 x rank, the family's default targets", () => {
    expect(parseSpec({ model: { kind: 'gpt' }, finetune: { method: 'lora' } }).finetune).toEqual({
      method: 'lora',
      rank: 8,
      alpha: 16,
      targets: ['attn'],
    });
    expect(parseSpec({ model: { kind: 'llama' }, finetune: { method: 'lora', rank: 4 } }).finetune).toEqual({
      method: 'lora',
      rank: 4,
      alpha: 8,
      targets: ['q', 'v'],
    });
    expect(parseSpec({ model: { kind: 'gpt' }, finetune: { method: 'freeze', blocks: 6 } }).finetune).toEqual({
      method: 'freeze',
      blocks: 6,
    });
  });

  it("fills generation: a prompt and new tokens within the model's seq", () => {
    const s = parseSpec({ model: { kind: 'gpt' }, mode: 'generate', cache: 'static' });
    expect([s.prompt, s.new_tokens, s.cache]).toEqual([128, 128, 'static']);
  });

  it('takes per-iteration shapes: one iteration each', () => {
    const s = parseSpec({
      model: { kind: 'gpt', seq: 256 },
      shapes: [
        { batch: 4, seq: 128 },
        { batch: 2, seq: 256 },
        { batch: 8, seq: 64 },
      ],
    });
    expect(s.iterations).toBe(3);
    expect(s.shapes).toHaveLength(3);
  });

  it('is idempotent for every family and method', () => {
    for (const input of [
      { model: { kind: 'gpt' }, finetune: { method: 'lora', targets: ['attn', 'fc'] } },
      { model: { kind: 'llama', kv_heads: 4 }, mode: 'generate', weights: 'bf16' },
      { model: { kind: 'gpt' }, shapes: [{ batch: 1, seq: 8 }] },
    ] as const) {
      const s = parseSpec(input);
      expect(parseSpec(JSON.parse(JSON.stringify(s)))).toEqual(s);
    }
  });

  it.each([
    [{ model: { kind: 'gpt', dim: 100, heads: 3 } }, 'model.heads', 'must divide model.dim (100)', '(got 3)'],
    [{ model: { kind: 'gpt', dim: 768, heads: 2 } }, 'model.heads', 'multiple of 8 and at most 256', '(got 2)'],
    [{ model: { kind: 'gpt', dim: 96, heads: 16 } }, 'model.heads', 'dim 96 / heads 16 = 6', '(got 16)'],
    [{ model: { kind: 'llama', heads: 32, kv_heads: 5 } }, 'model.kv_heads', 'must divide model.heads (32)', '(got 5)'],
    [{ model: { kind: 'gpt', vocab: 0 } }, 'model.vocab', 'an integer from 1 to', '(got 0)'],
    [{ model: { kind: 'gpt', seq: 2.5 } }, 'model.seq', 'an integer', '(got 2.5)'],
    [{ model: { kind: 'gpt' }, loss: 'sum' }, 'loss', 'must be "cross_entropy" with model.kind "gpt"', '(got "sum")'],
    [{ finetune: { method: 'lora' } }, 'finetune.method', 'transformer families (gpt, llama, hf)', '(got "lora")'],
    [
      { model: { kind: 'gpt', depth: 4 }, finetune: { method: 'freeze', blocks: 5 } },
      'finetune.blocks',
      'at most model.depth (4)',
      '(got 5)',
    ],
    [
      { model: { kind: 'gpt' }, finetune: { method: 'lora', targets: ['q'] } },
      'finetune.targets.0',
      '"attn", "proj", "fc", "mlp_proj"',
      '(got "q")',
    ],
    [
      { model: { kind: 'llama' }, finetune: { method: 'lora', targets: ['attn'] } },
      'finetune.targets.0',
      '"q", "k", "v", "o", "gate", "up", "down"',
      '(got "attn")',
    ],
    [{ model: { kind: 'gpt' }, finetune: { method: 'lora', rank: 0 } }, 'finetune.rank', 'an integer from 1 to', '(got 0)'],
    [{ model: { kind: 'gpt' }, finetune: { method: 'lora', alpha: -1 } }, 'finetune.alpha', '> 0', '(got -1)'],
    [{ model: { kind: 'residual' }, mode: 'generate' }, 'mode', 'needs a transformer family (gpt, llama, hf)', ''],
    [
      { model: { kind: 'gpt', seq: 64 }, mode: 'generate' },
      'new_tokens',
      'at most model.seq (64); prompt 128 + new_tokens 128 = 256',
      '(got 128)',
    ],
    [{ model: { kind: 'gpt' }, mode: 'generate', prompt: 0 }, 'prompt', 'at least 1 in mode "generate"', '(got 0)'],
    [{ model: { kind: 'gpt' }, cache: 'paged' }, 'cache', '"dynamic", "static"', '(got "paged")'],
    [{ model: { kind: 'gpt' }, weights: 'fp8' }, 'weights', '"fp32", "bf16", "fp16"', '(got "fp8")'],
    [{ model: { kind: 'gpt' }, shapes: [{ batch: 2, seq: 2000 }] }, 'shapes.0.seq', 'at most model.seq (1024)', '(got 2000)'],
    [
      { model: { kind: 'gpt' }, shapes: [{ batch: 2, seq: 8 }], iterations: 3 },
      'iterations',
      'must equal the number of shapes (1)',
      '(got 3)',
    ],
    [{ shapes: [{ batch: 2, seq: 8 }] }, 'shapes', 'transformer families', ''],
    [{ model: { kind: 'gpt' }, shapes: [] }, 'shapes', 'at least one', ''],
    [{ optimizer: { kind: 'adam', momentum: 0.9 } }, 'optimizer', 'unknown key "momentum"', ''],
    [{ optimizer: { kind: 'sgd', nesterov: true } }, 'optimizer.nesterov', 'needs optimizer.momentum > 0', '(got true)'],
    [{ optimizer: { kind: 'sgd', momentum: 1 } }, 'optimizer.momentum', '< 1', '(got 1)'],
  ])('rejects %j naming %s', (input, field, allowed, got) => {
    const list = issues(input);
    expect(list).toHaveLength(1);
    expect(list[0].startsWith(`${field}: `), list[0]).toBe(true);
    expect(list[0]).toContain(allowed);
    if (got) expect(list[0]).toContain(got);
  });

  it('rejects an unknown fine-tuning method naming the methods', () => {
    expect(issues({ model: { kind: 'gpt' }, finetune: { method: 'qlora' } })[0]).toBe(
      'finetune.method must be "full", "freeze" or "lora" (got "qlora")',
    );
  });

  it('counts parameters the way model.parameters() does', () => {
    const p = (kind: keyof typeof FAMILY_TABLE, id: string) =>
      parameterCount({ kind, ...FAMILY_TABLE[kind].presets.find((x) => x.id === id)!.model } as never);
    expect(p('gpt', 'gpt2')).toBe(124_439_808); // nanoGPT's GPT-2 small with the tied lm_head
    expect(p('gpt', 'gpt2-medium')).toBe(354_823_168);
    expect(p('gpt', 'gpt2-large')).toBe(774_030_080);
    expect(p('llama', 'tinyllama')).toBe(1_100_048_384);
    expect(p('llama', 'llama3-8b')).toBe(8_030_261_248);
    expect(p('mlp', 'seed-mlp')).toBe(6_316_042);
  });

  it('sweeps model, LoRA and generation parameters in the right place', () => {
    expect(withParam({ model: { kind: 'gpt' } }, 'seq', 512)).toEqual({ model: { kind: 'gpt', seq: 512 } });
    expect(withParam({ model: { kind: 'gpt' } }, 'rank', 16)).toEqual({ model: { kind: 'gpt' }, finetune: { method: 'lora', rank: 16 } });
    expect(withParam({ finetune: { method: 'lora', targets: ['fc'] } }, 'rank', 4)).toEqual({
      finetune: { method: 'lora', targets: ['fc'], rank: 4 },
    });
    expect(withParam({}, 'new_tokens', 64)).toEqual({ new_tokens: 64 });
    // A completed spec's alpha (2 x rank) follows the swept rank; a chosen alpha stays.
    const done = parseSpec({ model: { kind: 'gpt' }, finetune: { method: 'lora', rank: 8 } });
    expect(parseSpec(withParam(done, 'rank', 32)).finetune).toMatchObject({ rank: 32, alpha: 64 });
    const fixed = parseSpec({ model: { kind: 'gpt' }, finetune: { method: 'lora', rank: 8, alpha: 8 } });
    expect(parseSpec(withParam(fixed, 'rank', 32)).finetune).toMatchObject({ rank: 32, alpha: 8 });
  });
});
