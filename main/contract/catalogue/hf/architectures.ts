// The Hugging Face architectures the hf family builds, each a small delta: its model_type,
// the config fields its modeling code reads with transformers 5.17's defaults (copied from
// `<X>Config` in transformers/models/<name>/configuration_<name>.py), the __post_init__ rules
// that fill a field from others, and the Linear modules PEFT's LoRA can wrap.
// A field's spelling is the model_type's own (GPT-2: n_embd, n_layer; the rest: hidden_size ...).

/** A config value as config.json holds it. */
export type HfValue = number | string | boolean | null | HfValue[] | { [k: string]: HfValue };
export type HfConfig = { [k: string]: HfValue };

/** __post_init__ rules, applied in order after the defaults (names say what they fill). */
export type HfRule =
  | 'kv_heads_from_heads' // num_key_value_heads None -> num_attention_heads
  | 'head_dim_from_hidden' // head_dim None / absent -> hidden_size // num_attention_heads (modeling's getattr fallback)
  | 'qwen_sliding_window' // sliding_window None unless use_sliding_window; layer_types from max_window_layers
  | 'gemma2_layer_types' // every other layer sliding (odd index full)
  | 'gemma3_layer_types' // sliding except every sliding_window_pattern-th (default 6)
  | 'gpt2_inner'; // n_inner None -> 4 * n_embd (GPT2MLP's inner_dim)

export interface HfArchitecture {
  arch: string;
  modelType: string;
  label: string;
  /** 5.17's defaults for every field the modeling code reads for memory. */
  defaults: HfConfig;
  rules: readonly HfRule[];
  /** rope_parameters' default rope_theta (the config class's default_theta); null: no rotary embedding. */
  ropeTheta: number | null;
  /** Modules LoRA can wrap (nn.Linear / Conv1D names; fused MoE experts are 3-D parameters, not modules). */
  loraTargets: readonly string[];
  /** peft's TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING entry. */
  loraDefaultTargets: readonly string[];
  /** Config spellings of the generic sizes. */
  names: { layers: string; hidden: string; heads: string; positions: string };
}

const ATTN = ['q_proj', 'k_proj', 'v_proj', 'o_proj'] as const;
const MLP = ['gate_proj', 'up_proj', 'down_proj'] as const;
const LLAMA_NAMES = {
  layers: 'num_hidden_layers',
  hidden: 'hidden_size',
  heads: 'num_attention_heads',
  positions: 'max_position_embeddings',
} as const;

/** Fields every Llama-like decoder reads (values are LlamaConfig's); each architecture overrides. */
const DECODER: HfConfig = {
  vocab_size: 32000,
  hidden_size: 4096,
  intermediate_size: 11008,
  num_hidden_layers: 32,
  num_attention_heads: 32,
  num_key_value_heads: null,
  head_dim: null,
  max_position_embeddings: 2048,
  rms_norm_eps: 1e-6,
  tie_word_embeddings: false,
  attention_dropout: 0.0,
  // generate() puts it on the device when set (hf_generate.cpp)
  bos_token_id: 1,
};

const decoder = (
  arch: string,
  modelType: string,
  label: string,
  delta: HfConfig,
  more: Partial<Omit<HfArchitecture, 'arch' | 'modelType' | 'label' | 'defaults'>> = {},
): HfArchitecture => ({
  arch,
  modelType,
  label,
  // Gemma's classes spell the activation hidden_activation; the others hidden_act (default silu).
  defaults: { ...DECODER, ...('hidden_activation' in delta ? {} : { hidden_act: 'silu' }), ...delta },
  rules: ['kv_heads_from_heads', 'head_dim_from_hidden'],
  ropeTheta: 10_000,
  loraTargets: [...ATTN, ...MLP],
  loraDefaultTargets: ['q_proj', 'v_proj'],
  names: LLAMA_NAMES,
  ...more,
});

const QWEN_WINDOW = {
  use_sliding_window: false,
  sliding_window: 4096,
  max_window_layers: 28,
  layer_types: null,
  bos_token_id: null,
} as const;
const GEMMA = {
  head_dim: 256,
  hidden_activation: 'gelu_pytorch_tanh',
  tie_word_embeddings: true,
  attention_bias: false,
  query_pre_attn_scalar: 256,
  sliding_window: 4096,
  layer_types: null,
  bos_token_id: 2,
} as const;

export const HF_ARCHITECTURES: readonly HfArchitecture[] = [
  decoder('LlamaForCausalLM', 'llama', 'Llama', { attention_bias: false, mlp_bias: false }),
  decoder('MistralForCausalLM', 'mistral', 'Mistral', {
    intermediate_size: 14336,
    num_key_value_heads: 8,
    max_position_embeddings: 4096 * 32,
    sliding_window: 4096,
  }),
  decoder(
    'Qwen2ForCausalLM',
    'qwen2',
    'Qwen2',
    { vocab_size: 151936, intermediate_size: 22016, num_key_value_heads: 32, max_position_embeddings: 32768, ...QWEN_WINDOW },
    { rules: ['kv_heads_from_heads', 'head_dim_from_hidden', 'qwen_sliding_window'] },
  ),
  decoder(
    'Qwen3ForCausalLM',
    'qwen3',
    'Qwen3',
    {
      vocab_size: 151936,
      intermediate_size: 22016,
      num_key_value_heads: 32,
      head_dim: 128,
      max_position_embeddings: 32768,
      attention_bias: false,
      ...QWEN_WINDOW,
    },
    { rules: ['kv_heads_from_heads', 'qwen_sliding_window'] },
  ),
  decoder(
    'Qwen3MoeForCausalLM',
    'qwen3_moe',
    'Qwen3 MoE',
    {
      vocab_size: 151936,
      hidden_size: 2048,
      intermediate_size: 6144,
      num_hidden_layers: 24,
      num_attention_heads: 32,
      num_key_value_heads: 4,
      max_position_embeddings: 32768,
      attention_bias: false,
      use_sliding_window: false,
      sliding_window: 4096,
      bos_token_id: null,
      decoder_sparse_step: 1,
      moe_intermediate_size: 768,
      num_experts_per_tok: 8,
      num_experts: 128,
      norm_topk_prob: false,
      output_router_logits: false,
      router_aux_loss_coef: 0.001,
      mlp_only_layers: [],
    },
    { rules: ['head_dim_from_hidden', 'qwen_sliding_window'], loraTargets: ATTN },
  ),
  decoder(
    'Gemma2ForCausalLM',
    'gemma2',
    'Gemma 2',
    {
      vocab_size: 256000,
      hidden_size: 2304,
      intermediate_size: 9216,
      num_hidden_layers: 26,
      num_attention_heads: 8,
      num_key_value_heads: 4,
      max_position_embeddings: 8192,
      ...GEMMA,
      final_logit_softcapping: 30.0,
      attn_logit_softcapping: 50.0,
    },
    { rules: ['gemma2_layer_types'] },
  ),
  decoder(
    'Gemma3ForCausalLM',
    'gemma3_text',
    'Gemma 3 (text)',
    {
      vocab_size: 262_208,
      hidden_size: 2304,
      intermediate_size: 9216,
      num_hidden_layers: 26,
      num_attention_heads: 8,
      num_key_value_heads: 4,
      max_position_embeddings: 131_072,
      ...GEMMA,
      final_logit_softcapping: null,
      attn_logit_softcapping: null,
      use_bidirectional_attention: false,
    },
    { rules: ['gemma3_layer_types'], ropeTheta: 1_000_000 },
  ),
  decoder(
    'Phi3ForCausalLM',
    'phi3',
    'Phi-3',
    {
      vocab_size: 32064,
      hidden_size: 3072,
      intermediate_size: 8192,
      max_position_embeddings: 4096,
      original_max_position_embeddings: 4096,
      resid_pdrop: 0.0,
      embd_pdrop: 0.0,
      rms_norm_eps: 1e-5,
      sliding_window: null,
    },
    { loraTargets: ['qkv_proj', 'o_proj', 'gate_up_proj', 'down_proj'], loraDefaultTargets: ['qkv_proj'] },
  ),
  decoder(
    'MixtralForCausalLM',
    'mixtral',
    'Mixtral',
    {
      intermediate_size: 14336,
      num_key_value_heads: 8,
      max_position_embeddings: 4096 * 32,
      rms_norm_eps: 1e-5,
      sliding_window: null,
      num_experts_per_tok: 2,
      num_local_experts: 8,
      output_router_logits: false,
      router_aux_loss_coef: 0.001,
      router_jitter_noise: 0.0,
    },
    { ropeTheta: 1_000_000, loraTargets: ATTN },
  ),
  decoder('Olmo2ForCausalLM', 'olmo2', 'OLMo 2', {
    vocab_size: 50304,
    rms_norm_eps: 1e-5,
    attention_bias: false,
    bos_token_id: null,
  }),
  {
    arch: 'GPT2LMHeadModel',
    modelType: 'gpt2',
    label: 'GPT-2',
    defaults: {
      vocab_size: 50257,
      bos_token_id: 50256,
      n_positions: 1024,
      n_embd: 768,
      n_layer: 12,
      n_head: 12,
      n_inner: null,
      activation_function: 'gelu_new',
      resid_pdrop: 0.1,
      embd_pdrop: 0.1,
      attn_pdrop: 0.1,
      layer_norm_epsilon: 1e-5,
      scale_attn_weights: true,
      scale_attn_by_inverse_layer_idx: false,
      reorder_and_upcast_attn: false,
      add_cross_attention: false,
      tie_word_embeddings: true,
    },
    rules: ['gpt2_inner'],
    ropeTheta: null,
    loraTargets: ['c_attn', 'c_proj', 'c_fc'],
    loraDefaultTargets: ['c_attn'],
    names: { layers: 'n_layer', hidden: 'n_embd', heads: 'n_head', positions: 'n_positions' },
  },
];

export const HF_ARCH_NAMES = HF_ARCHITECTURES.map((a) => a.arch);
export const HF_MODEL_TYPES = HF_ARCHITECTURES.map((a) => a.modelType);

export const archByName = (arch: string): HfArchitecture | undefined => HF_ARCHITECTURES.find((a) => a.arch === arch);
export const archByModelType = (t: string): HfArchitecture | undefined => HF_ARCHITECTURES.find((a) => a.modelType === t);

/** Every LoRA target name any architecture has (the family's static list). */
export const HF_LORA_TARGETS = [...new Set(HF_ARCHITECTURES.flatMap((a) => a.loraTargets))];
