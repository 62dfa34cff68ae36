// The hf model kind at the boundary: a config.json is resolved to one of the supported
// architectures (or refused naming what it gave and what is supported), completed with
// transformers 5.17's defaults for its model_type, checked value by value, and held to the
// same work limits as every family. Parameter counts are held to the counts PyTorch measured.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { checkSpec, parseSpec, type Spec } from '../../main/contract/spec';
import { withParam } from '../../main/contract/sweep_params';
import { HF_PRESETS, completeHfConfig, hfLoraParameters, modelName, parameterCount, type HfConfig } from '../../main/contract/catalogue';
import { hfReference, protocolToSpec } from '../helpers/hf_reference';
import { specColumns } from '../../main/export/spec_columns';

const fixture = (name: string) =>
  JSON.parse(readFileSync(path.resolve(import.meta.dirname, `../fixtures/hf/${name}.config.json`), 'utf8')) as Record<string, unknown>;

function issues(input: unknown): string[] {
  const r = checkSpec(input);
  if (r.ok) throw new Error(`expected ${JSON.stringify(input)} to be rejected`);
  return r.issues;
}
const configOf = (s: Spec) => (s.model as unknown as { config: HfConfig }).config;
const hf = (config: Record<string, unknown>, more: Record<string, unknown> = {}) => ({ model: { kind: 'hf', config }, ...more });

describe('hf config.json at the boundary', () => {
  it('completes a real Qwen2.5-0.5B config.json with Qwen2Config 5.17 rules', () => {
    const s = parseSpec(hf(fixture('Qwen2.5-0.5B')));
    const c = configOf(s);
    expect(c.architectures).toEqual(['Qwen2ForCausalLM']);
    expect(c.model_type).toBe('qwen2');
    expect(c.head_dim).toBe(64); // modeling's hidden_size // num_attention_heads
    expect(c.sliding_window).toBe(null); // use_sliding_window false clears it (__post_init__)
    expect(c.layer_types).toEqual(Array(24).fill('full_attention'));
    expect(c.rope_parameters).toEqual({ rope_type: 'default', rope_theta: 1000000 });
    expect(c.torch_dtype).toBe('bfloat16'); // kept as given
    expect(s.model).toMatchObject({ kind: 'hf', seq: 1024, attn_implementation: 'sdpa' });
    expect(s.batch).toBe(8);
    expect(s.loss).toBe('cross_entropy');
  });

  it('fills each model_type with its own 5.17 defaults', () => {
    const d = (model_type: string) => configOf(parseSpec(hf({ model_type, num_hidden_layers: 2 }, { iterations: 1 })));
    expect(d('llama')).toMatchObject({
      hidden_size: 4096,
      intermediate_size: 11008,
      num_key_value_heads: 32,
      head_dim: 128,
      rms_norm_eps: 1e-6,
    });
    expect(d('llama')).toMatchObject({ hidden_act: 'silu', attention_bias: false, mlp_bias: false, tie_word_embeddings: false });
    expect(d('mistral')).toMatchObject({
      intermediate_size: 14336,
      num_key_value_heads: 8,
      sliding_window: 4096,
      max_position_embeddings: 131072,
    });
    expect(d('qwen2')).toMatchObject({ vocab_size: 151936, intermediate_size: 22016, sliding_window: null, max_window_layers: 28 });
    expect(d('qwen3')).toMatchObject({ head_dim: 128, attention_bias: false });
    expect(d('qwen3_moe')).toMatchObject({ head_dim: 64, num_experts: 128, num_experts_per_tok: 8, moe_intermediate_size: 768 });
    expect(d('gemma2')).toMatchObject({
      head_dim: 256,
      hidden_activation: 'gelu_pytorch_tanh',
      final_logit_softcapping: 30,
      attn_logit_softcapping: 50,
    });
    expect(d('gemma2').layer_types).toEqual(['sliding_attention', 'full_attention']);
    expect(d('gemma2').hidden_act).toBeUndefined();
    expect(d('gemma3_text')).toMatchObject({ vocab_size: 262208, final_logit_softcapping: null, tie_word_embeddings: true });
    expect(d('gemma3_text').rope_parameters).toEqual({
      full_attention: { rope_type: 'default', rope_theta: 1000000 },
      sliding_attention: { rope_type: 'default', rope_theta: 10000 },
    });
    expect(d('phi3')).toMatchObject({ vocab_size: 32064, rms_norm_eps: 1e-5, head_dim: 96, resid_pdrop: 0 });
    expect(d('phi3').rope_parameters).toEqual({ rope_type: 'default', rope_theta: 10000, partial_rotary_factor: 1 });
    expect(d('mixtral')).toMatchObject({ num_local_experts: 8, num_experts_per_tok: 2, rms_norm_eps: 1e-5 });
    expect(d('mixtral').rope_parameters).toEqual({ rope_type: 'default', rope_theta: 1000000 });
    expect(d('olmo2')).toMatchObject({ vocab_size: 50304, rms_norm_eps: 1e-5 });
    const g = configOf(parseSpec(hf({ model_type: 'gpt2', n_layer: 2 })));
    expect(g).toMatchObject({
      n_embd: 768,
      n_inner: 3072,
      activation_function: 'gelu_new',
      resid_pdrop: 0.1,
      attn_pdrop: 0.1,
      tie_word_embeddings: true,
    });
    expect(g.rope_parameters).toBeUndefined();
  });

  it('reads a Gemma 3 layer pattern and the rope fields config.json files use', () => {
    const c = configOf(
      parseSpec(
        hf(
          { model_type: 'gemma3_text', num_hidden_layers: 7, sliding_window_pattern: 3, rope_theta: 5e5, rope_local_base_freq: 2e4 },
          { iterations: 1 },
        ),
      ),
    );
    expect(c.layer_types).toEqual([
      'sliding_attention',
      'sliding_attention',
      'full_attention',
      'sliding_attention',
      'sliding_attention',
      'full_attention',
      'sliding_attention',
    ]);
    expect(c.rope_parameters).toEqual({
      full_attention: { rope_type: 'default', rope_theta: 5e5 },
      sliding_attention: { rope_type: 'default', rope_theta: 2e4 },
    });
    const llama = configOf(parseSpec(hf(fixture('Llama-3.2-3B'))));
    expect(llama.rope_parameters).toMatchObject({ rope_type: 'llama3', rope_theta: 500000, factor: 32 });
    // Phi-3.5's "type": "longrope" is read as the rope type.
    expect(configOf(parseSpec(hf(fixture('Phi-3.5-mini-instruct')))).rope_parameters).toMatchObject({
      rope_type: 'longrope',
      partial_rotary_factor: 1,
    });
  });

  it('refuses an unsupported architecture or model_type, naming it and the supported list', () => {
    const [a] = issues(hf({ architectures: ['BertForMaskedLM'] }));
    expect(a).toContain('model.config.architectures.0: architecture "BertForMaskedLM" is not supported');
    expect(a).toContain('LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM, Qwen3MoeForCausalLM');
    expect(a).toContain('Gemma2ForCausalLM, Gemma3ForCausalLM, Phi3ForCausalLM, MixtralForCausalLM, Olmo2ForCausalLM, GPT2LMHeadModel');
    const [t] = issues(hf({ model_type: 'falcon' }));
    expect(t).toMatch(/^model\.config\.model_type: model_type "falcon" is not supported \(supported: "llama", "mistral", .*"gpt2"\)/);
    expect(issues(hf({ architectures: ['LlamaForCausalLM'], model_type: 'qwen2' }))[0]).toContain(
      'model_type "qwen2" does not match architectures[0] "LlamaForCausalLM" (its model_type is "llama")',
    );
    expect(issues(hf({ hidden_size: 512 }))[0]).toMatch(/^model\.config: must name its architecture: .* or "model_type"$/);
    expect(issues(hf({ model_type: 'gemma3', text_config: { model_type: 'gemma3_text' } }))[0]).toContain('give its text_config');
    expect(issues({ model: { kind: 'hf', config: 'config.json' } })[0]).toContain('model.config: must be a config.json object');
  });

  it('refuses values the engine does not build, naming the field and what is allowed', () => {
    expect(issues(hf({ model_type: 'llama', hidden_act: 'relu2' }))[0]).toBe(
      'model.config.hidden_act: must be one of "silu", "gelu", "gelu_new", "gelu_pytorch_tanh" (the activations supported) (got "relu2")',
    );
    expect(issues(hf({ model_type: 'llama', num_hidden_layers: 0 }))[0]).toContain(
      'model.config.num_hidden_layers: must be an integer from 1 to 4096',
    );
    expect(issues(hf({ model_type: 'llama', num_attention_heads: 32, num_key_value_heads: 5 }))[0]).toContain(
      'model.config.num_key_value_heads: must divide num_attention_heads (32) evenly',
    );
    expect(issues(hf({ model_type: 'gpt2', add_cross_attention: true }))[0]).toContain('model.config.add_cross_attention: must be false');
    expect(issues(hf({ model_type: 'llama', rope_scaling: { rope_type: 'proportional' } }))[0]).toContain(
      'model.config.rope_parameters.rope_type: must be one of',
    );
    expect(issues(hf({ model_type: 'qwen2', num_hidden_layers: 2, layer_types: ['full_attention'] }))[0]).toContain(
      'model.config.layer_types: must be null or a list of 2 entries',
    );
  });

  it('holds hf specs to the same work limits as every family', () => {
    // 4000 layers x 20 iterations is past the layer-pass limit, whatever the family.
    expect(issues(hf({ model_type: 'llama', num_hidden_layers: 4000 }, { iterations: 20 }))[0]).toBe(
      'iterations: too much work: iterations x accum x model.depth = 80000, at most 65536; lower one of them (got 20)',
    );
    expect(issues(hf({ model_type: 'llama', num_hidden_layers: 4000 }, { mode: 'generate', new_tokens: 100, prompt: 8 }))[0]).toContain(
      'new_tokens: too much work: new_tokens x model.depth = 400000',
    );
    // A vocabulary and width in range whose logits still exceed the tensor limit.
    expect(issues({ ...hf({ model_type: 'llama', vocab_size: 1 << 20, num_hidden_layers: 1 }), batch: 1 << 20, iterations: 1 })[0]).toMatch(
      /^model: describes a tensor of \d+ bytes/,
    );
    expect(issues(hf({ model_type: 'llama', num_hidden_layers: 4 }, { finetune: { method: 'freeze', blocks: 5 } }))[0]).toBe(
      'finetune.blocks: must be at most model.depth (4) (got 5)',
    );
  });

  it('keeps training and generation to what HF models support', () => {
    expect(issues(hf({ model_type: 'llama' }, { mode: 'generate', cache: 'static' }))[0]).toBe(
      'cache: the static cache is not supported for HF models yet: use "dynamic" (DynamicCache) (got "static")',
    );
    expect(issues(hf({ model_type: 'llama' }, { checkpoint: 'sqrt' }))[0]).toContain('checkpoint: must be "none" or "block" for hf models');
    expect(issues(hf({ model_type: 'llama' }, { mode: 'inference' }))[0]).toContain('mode: must be "train" or "generate" for hf models');
    expect(issues(hf({ model_type: 'llama' }, { loss: 'sum' }))[0]).toBe('loss: must be "cross_entropy" with model.kind "hf" (got "sum")');
    expect(issues({ model: { kind: 'hf', config: { model_type: 'gpt2' }, seq: 2048 } })[0]).toBe(
      'model.seq: must be at most config.n_positions (1024) (got 2048)',
    );
    expect(parseSpec(hf({ model_type: 'llama', num_hidden_layers: 2 }, { checkpoint: 'block', mode: 'generate' })).prompt).toBe(128);
  });

  it("wraps each architecture's own modules with LoRA: PEFT's default targets, dropout 0", () => {
    const lora = (config: Record<string, unknown>, ft: Record<string, unknown> = {}) =>
      parseSpec(hf(config, { finetune: { method: 'lora', ...ft } })).finetune;
    expect(lora({ model_type: 'llama' })).toEqual({ method: 'lora', rank: 8, alpha: 16, targets: ['q_proj', 'v_proj'], dropout: 0 });
    expect(lora({ model_type: 'gpt2' })).toMatchObject({ targets: ['c_attn'] });
    expect(lora({ model_type: 'phi3' })).toMatchObject({ targets: ['qkv_proj'] });
    expect(lora({ model_type: 'llama' }, { targets: ['gate_proj', 'down_proj'], dropout: 0.05 })).toMatchObject({ dropout: 0.05 });
    expect(issues(hf({ model_type: 'gpt2' }, { finetune: { method: 'lora', targets: ['q_proj'] } }))[0]).toBe(
      'finetune.targets.0: must be one of "c_attn", "c_proj", "c_fc" for model.kind "hf" (got "q_proj")',
    );
    // 5.17's experts are fused 3-D parameters, not Linear modules: LoRA cannot wrap them.
    expect(issues(hf({ model_type: 'mixtral' }, { finetune: { method: 'lora', targets: ['gate_proj'] } }))[0]).toContain(
      'must be one of "q_proj", "k_proj", "v_proj", "o_proj"',
    );
    expect(issues(hf({ model_type: 'llama' }, { finetune: { method: 'lora', dropout: 1 } }))[0]).toContain(
      'finetune.dropout: must be a number >= 0 and < 1',
    );
  });

  it('names a preset, its seq the default; refuses an unknown one or both preset and config', () => {
    const s = parseSpec({ model: { kind: 'hf', preset: 'qwen2.5-0.5b' }, finetune: { method: 'lora', rank: 16 } });
    expect(s.model).toMatchObject({ kind: 'hf', seq: 2048 });
    expect(modelName(s.model)).toBe('Qwen2.5-0.5B seq 2048');
    // The same config.json loaded from a file is the same model, by the same name.
    expect(modelName(parseSpec(hf(fixture('Qwen2.5-0.5B'))).model)).toBe('Qwen2.5-0.5B seq 1024');
    expect(modelName(parseSpec(hf({ model_type: 'llama', hidden_size: 512, num_hidden_layers: 4 })).model)).toBe('Llama 512x4 seq 1024');
    expect(parseSpec({ model: { kind: 'hf', preset: 'qwen2.5-0.5b', seq: 512 } }).model).toMatchObject({ seq: 512 });
    expect(issues({ model: { kind: 'hf', preset: 'gpt-5' } })[0]).toMatch(
      /^model\.preset: unknown preset \(presets: "gpt2", .*"olmo-2-1b"\) \(got "gpt-5"\)/,
    );
    expect(issues({ model: { kind: 'hf', preset: 'gpt2', config: {} } })[0]).toBe(
      'model.preset: give either model.config or model.preset, not both (got "gpt2")',
    );
    expect(parseSpec({ model: { kind: 'hf' } }).model).toMatchObject({ seq: 1024, config: { model_type: 'gpt2', n_layer: 12 } });
  });

  it('completes every preset, each citing its source', () => {
    for (const p of HF_PRESETS) {
      expect(p.source).toMatch(/^[\w.-]+\/[\w.-]+/);
      const r = completeHfConfig(p.config);
      expect(r.ok, p.id).toBe(true);
      expect(checkSpec({ model: { kind: 'hf', preset: p.id }, iterations: 1 }).ok, p.id).toBe(true);
    }
  });

  it('is idempotent: a completed hf spec parses to itself', () => {
    for (const input of [
      hf(fixture('Qwen3-30B-A3B'), { finetune: { method: 'lora' } }),
      hf({ model_type: 'gemma3_text', num_hidden_layers: 3 }),
      hf(fixture('Phi-3.5-mini-instruct'), { mode: 'generate' }),
      { model: { kind: 'hf', preset: 'gpt2-large' } },
    ]) {
      const s = parseSpec(input);
      expect(parseSpec(s)).toEqual(s);
    }
  });

  it('sweeps seq, batch and rank on hf specs like any family', () => {
    const base = { model: { kind: 'hf' as const, preset: 'qwen3-0.6b' }, finetune: { method: 'lora' as const } };
    expect(parseSpec(withParam(base, 'seq', 4096)).model).toMatchObject({ seq: 4096 });
    expect(parseSpec(withParam(base, 'rank', 32)).finetune).toMatchObject({ rank: 32, alpha: 64, dropout: 0 });
    expect(parseSpec(withParam(base, 'attn_implementation', 'eager')).model).toMatchObject({ attn_implementation: 'eager' });
  });
});

describe('hf parameter counts', () => {
  it('equal what PyTorch counted for every reference run (total and LoRA-trainable)', () => {
    for (const run of hfReference().runs) {
      const s = parseSpec(protocolToSpec(run.spec));
      const base = parameterCount(s.model);
      const ft = s.finetune;
      const adapters = ft.method === 'lora' ? hfLoraParameters(configOf(s), ft.rank, ft.targets) : 0;
      expect(base + adapters, JSON.stringify(run.spec.hf)).toBe(run.total);
      if (ft.method === 'lora') expect(adapters).toBe(run.trainable);
    }
  });

  it("equal the published models' counts", () => {
    // torchinfo's Qwen2.5-0.5B listing: 630,167,424 with the tied lm_head (151936 x 896) counted twice.
    expect(parameterCount(parseSpec(hf(fixture('Qwen2.5-0.5B'))).model)).toBe(630_167_424 - 151936 * 896);
    // GPT-2 small: 124,439,808 (wte + wpe + 12 blocks + ln_f, lm_head tied).
    expect(parameterCount(parseSpec({ model: { kind: 'hf', preset: 'gpt2' } }).model)).toBe(124_439_808);
  });
});

describe('hf in CSV columns', () => {
  it('fills the generic size columns from the config', () => {
    const row = specColumns(parseSpec({ model: { kind: 'hf', preset: 'qwen2.5-7b' } }));
    expect(row).toMatchObject({ model: 'hf', model_depth: 28, model_dim: 3584, model_heads: 28, model_vocab: 152064, model_seq: 2048 });
    expect(row.model_attn_implementation).toBe('sdpa');
  });
});
