#pragma once
// What one Hugging Face architecture is, for the shared decoder (decoder.cpp): sizes read
// from the model's completed config.json by the names that model_type spells them, and
// the few switches by which an architecture differs from Llama. Each architecture is a
// small file here saying only what it changes; architectures.cpp lists them, one line each.
#include <cstdint>
#include <string>
#include <vector>

#include "engine/spec/run_spec.h"

namespace vramlab::engine::hf {

// rope_parameters as standardize_rope_params leaves them: what each rope type's init
// function reads (the values shape nothing but inv_freq's contents and a scaling).
struct Rope {
  std::string type = "default";  // default | linear | dynamic | yarn | longrope | llama3
  double theta = 0;
  int64_t max_positions = 0;                   // config.max_position_embeddings (dynamic's cached length)
  int64_t original_max = 0;                    // original_max_position_embeddings (yarn, longrope, llama3)
  size_t long_factors = 0, short_factors = 0;  // longrope: lengths of long_factor / short_factor
};

struct Arch {
  std::string name;  // "LlamaForCausalLM"
  // sizes
  int64_t vocab = 0, hidden = 0, intermediate = 0, layers = 0, heads = 0, kv_heads = 0, head_dim = 0;
  int64_t max_positions = 0;
  double norm_eps = 0, rope_theta = 0;
  Rope rope;
  // Gemma-3: rope_parameters per layer type, one rotary table each (rope for full layers)
  bool rope_per_type = false;
  Rope rope_sliding;
  std::string act;   // ACT2FN name: silu | gelu_pytorch_tanh | gelu_new
  bool tie = false;  // lm_head.weight is embed_tokens.weight
  // projections
  bool q_bias = false, k_bias = false, v_bias = false, o_bias = false, mlp_bias = false;
  bool fused_qkv = false;      // Phi-3: one qkv_proj, sliced
  bool fused_gate_up = false;  // Phi-3: one gate_up_proj, chunked
  // Phi-3's partial-rotary apply_rotary_pos_emb: cat([rotated, pass-through], -1) copies the
  // rotated q/k into a contiguous (B, H, T, D) tensor (so SDPA's output needs a copy too)
  bool rope_cat_copy = false;
  // OLMo2: the rotary tables stay float32, q/k are rotated in float32 and cast back
  bool rope_float = false;
  // norms
  enum class QkNorm : uint8_t { None, PerHead, Full };  // Qwen3/Gemma3: over head_dim; OLMo2: over the projection
  QkNorm qk_norm = QkNorm::None;
  enum class Norms : uint8_t { Pre, Post, Sandwich };  // Llama; OLMo2 (after attn/mlp); Gemma (both)
  Norms norms = Norms::Pre;
  bool gemma_norm = false;  // RMSNorm as Gemma: float throughout, x * (1 + w), weight zero-initialised
  bool olmo_norm = false;   // RMSNorm as OLMo2: (weight * x).to(dtype), the product in float32
  // Gemma: embeddings times sqrt(hidden); logits soft-capped; scaling from query_pre_attn_scalar
  bool embed_scale = false;
  double final_softcap = 0;
  double query_pre_attn_scalar = 0;
  // sliding-window layers (Mistral, Qwen2/3 with use_sliding_window, Gemma2/3)
  int64_t sliding_window = 0;
  std::vector<bool> sliding;  // per layer
  // The masks the model's forward makes (masking_utils): One = create_causal_mask, or
  // create_sliding_window_causal_mask when a window is set (Llama, Mistral, Mixtral, Phi-3,
  // Qwen3-MoE); PerLayerType = the full one, + the sliding one when a layer slides (Qwen2/3);
  // Both = full and sliding (Gemma). Materialised only by eager attention.
  enum class Masks : uint8_t { One, PerLayerType, Both };
  Masks masks = Masks::One;
  // the decoder layers are called with position_ids= before position_embeddings= (Mistral,
  // Mixtral, Phi-3, Qwen3-MoE; the others pass the embeddings first)
  bool position_ids_first = false;
  double attn_softcap = 0;  // Gemma-2's attn_logit_softcapping (eager attention only)
  bool eager = false;       // attn_implementation "eager" (spec.model, not the config)
  bool bos_token = false;   // bos_token_id set: generate() makes it a device tensor
  // mixture of experts (Mixtral, Qwen3-MoE): per layer whether the MLP is sparse
  int64_t experts = 0, top_k = 0, expert_intermediate = 0;
  bool norm_topk_prob = false;
  std::vector<bool> sparse;
  std::string router_name, experts_name;  // "gate" + "experts" (both)
  // GPT-2: learned positions, LayerNorm with bias, Conv1D projections, dropout
  bool gpt2 = false;
  double resid_pdrop = 0, embd_pdrop = 0, attn_pdrop = 0;
};

// The config object of spec.model.config, read by name with no defaults of our own.
struct Config {
  const SpecValue& v;
  std::string path;  // "spec.model.config"
  const SpecValue& at(const char* key) const;
  int64_t i(const char* key) const;
  double f(const char* key) const;
  bool b(const char* key) const;
  std::string s(const char* key) const;
  bool is_null(const char* key) const;
  bool has(const char* key) const { return v.has(key); }
};

// The Llama shape every decoder here starts from (LlamaConfig's fields).
// The sizes every decoder config spells the same way (vocab, hidden, heads, layers, ...).
Arch decoder_sizes(const Config& c, const std::string& name);
Arch llama_shape(const Config& c, const std::string& name);
// rope_parameters (HF 5 configs) read into a.rope and a.rope_theta.
void read_rope_into(Arch& a, const Config& c);
// layer_types: which layers use sliding-window attention.
std::vector<bool> sliding_layers(const Config& c, int64_t layers);

// One architecture: its config read into an Arch.
using ArchReader = Arch (*)(const Config&);
Arch llama(const Config& c);
Arch mistral(const Config& c);
Arch qwen2(const Config& c);
Arch qwen3(const Config& c);
Arch qwen3_moe(const Config& c);
Arch gemma2(const Config& c);
Arch gemma3_text(const Config& c);
Arch phi3(const Config& c);
Arch mixtral(const Config& c);
Arch olmo2(const Config& c);
Arch gpt2(const Config& c);

// The architectures table (architectures.cpp): config.architectures[0] -> reader.
Arch read_arch(const KindArgs& model);
std::vector<std::string> supported_architectures();

}  // namespace vramlab::engine::hf
