// Olmo2ForCausalLM = Llama (no mlp_bias field) - the pre-norms + RMSNorm weighting before the cast + rotary in float32
// + norms after attention and MLP + an RMSNorm over the whole q and k projections (before the heads are split).
#include "engine/models/hf/arch.h"

namespace vramlab::engine::hf {

Arch olmo2(const Config& c) {
  Arch a = llama_shape(c, "Olmo2ForCausalLM");
  a.q_bias = a.k_bias = a.v_bias = a.o_bias = c.b("attention_bias");
  a.norms = Arch::Norms::Post;
  a.qk_norm = Arch::QkNorm::Full;
  a.olmo_norm = true;
  a.rope_float = true;
  return a;
}

}  // namespace vramlab::engine::hf
