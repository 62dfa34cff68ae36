// Qwen3ForCausalLM = Qwen2 - the q/k/v biases (attention_bias instead) + an RMSNorm over
// each head of q and k (before the transpose).
#include "engine/models/hf/arch.h"

namespace vramlab::engine::hf {

Arch qwen3(const Config& c) {
  Arch a = qwen2(c);
  a.name = "Qwen3ForCausalLM";
  a.q_bias = a.k_bias = a.v_bias = a.o_bias = c.b("attention_bias");
  a.qk_norm = Arch::QkNorm::PerHead;
  return a;
}

}  // namespace vramlab::engine::hf
