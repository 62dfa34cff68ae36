// Gemma2ForCausalLM = Llama + four norms per layer (before and after attention and MLP),
// Gemma's RMSNorm (float, x * (1 + w)), embeddings scaled by sqrt(hidden_size),
// attention scaled by query_pre_attn_scalar, soft-capped logits and sliding-window
// layers; hidden_activation instead of hidden_act.
#include <stdexcept>

#include "engine/models/hf/arch.h"

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
  return a;
}
}  // namespace

Arch gemma2(const Config& c) {
  Arch a = gemma_common(c, "Gemma2ForCausalLM");
  a.rope_theta = rope_theta(c);
  return a;
}

// Gemma3ForCausalLM (text) = Gemma2 + per-head q/k norms (Gemma's RMSNorm), no attention
// soft-capping; its rope_parameters hold one entry per layer type.
Arch gemma3_text(const Config& c) {
  Arch a = gemma_common(c, "Gemma3ForCausalLM");
  a.qk_norm = Arch::QkNorm::PerHead;
  const SpecValue& r = c.at("rope_parameters");
  const SpecValue* full = r.find("full_attention");
  Config rc{full ? *full : r, c.path + ".rope_parameters.full_attention"};
  if (full) {
    const std::string type = (*full)["rope_type"].as_string(rc.path + ".rope_type");
    if (type != "default") throw std::invalid_argument(rc.path + ".rope_type \"" + type + "\" is not supported");
    a.rope_theta = (*full)["rope_theta"].as_number(rc.path + ".rope_theta");
  } else {
    a.rope_theta = rope_theta(c);
  }
  return a;
}

}  // namespace vramlab::engine::hf
