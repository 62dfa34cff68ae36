// LlamaForCausalLM: the shape every decoder here starts from, with its optional biases.
#include "engine/models/hf/arch.h"

namespace vramlab::engine::hf {

Arch llama(const Config& c) {
  Arch a = llama_shape(c, "LlamaForCausalLM");
  a.q_bias = a.k_bias = a.v_bias = a.o_bias = c.b("attention_bias");
  a.mlp_bias = c.b("mlp_bias");
  return a;
}

}  // namespace vramlab::engine::hf
