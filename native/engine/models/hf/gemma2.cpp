// Gemma2ForCausalLM = Llama + four norms per layer (before and after attention and MLP),
// Gemma's RMSNorm (float, x * (1 + w)), embeddings scaled by sqrt(hidden_size),
// attention scaled by query_pre_attn_scalar, soft-capped logits and sliding-window
// layers; hidden_activation instead of hidden_act.
#include <stdexcept>

#include "engine/models/hf/arch.h"
#include "engine/models/hf/rope.h"

namespace vramlab::engine::hf {

namespace {
Arch gemma_common(const Config& c, const char* name) {
  Arch a = decoder_sizes(c, name);
  a.act = c.s("hidden_activation");
  a.q_bias = a.k_bias = a.v_bias = a.o_bias = c.b("attention_bias");
  a.norms = Arch::Norms::Sandwich;
  a.gemma_norm = true;
  a.embed_scale = true;
  a.query_pre_attn_scalar = c.f("query_pre_attn_scalar");
  if (!c.is_null("final_logit_softcapping")) a.final_softcap = c.f("final_logit_softcapping");
  if (!c.is_null("sliding_window")) a.sliding_window = c.i("sliding_window");
  a.sliding = sliding_layers(c, a.layers);
  a.masks = Arch::Masks::Both;
  if (c.has("attn_logit_softcapping") && !c.is_null("attn_logit_softcapping"))
    a.attn_softcap = c.f("attn_logit_softcapping");
  return a;
}
}  // namespace

Arch gemma2(const Config& c) {
  Arch a = gemma_common(c, "Gemma2ForCausalLM");
  read_rope_into(a, c);
  return a;
}

// Gemma3ForCausalLM (text) = Gemma2 + per-head q/k norms (Gemma's RMSNorm), no attention
// soft-capping; its rope_parameters hold one entry per layer type, each its own rotary table.
Arch gemma3_text(const Config& c) {
  Arch a = gemma_common(c, "Gemma3ForCausalLM");
  a.qk_norm = Arch::QkNorm::PerHead;
  const SpecValue& r = c.at("rope_parameters");
  const SpecValue* full = r.find("full_attention");
  if (full) {
    a.rope = read_rope(c, *full, c.path + ".rope_parameters.full_attention");
    a.rope_theta = a.rope.theta;
    const SpecValue* sliding = r.find("sliding_attention");
    if (sliding) {
      a.rope_per_type = true;
      a.rope_sliding = read_rope(c, *sliding, c.path + ".rope_parameters.sliding_attention");
    }
  } else {
    read_rope_into(a, c);
  }
  return a;
}

}  // namespace vramlab::engine::hf
