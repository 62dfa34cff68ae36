// MixtralForCausalLM = Mistral + a sparse MLP on every layer: a router `gate` over
// num_local_experts experts of intermediate_size, top num_experts_per_tok, renormalised.
#include "engine/models/hf/arch.h"

namespace vramlab::engine::hf {

Arch mixtral(const Config& c) {
  Arch a = mistral(c);
  a.name = "MixtralForCausalLM";
  a.experts = c.i("num_local_experts");
  a.top_k = c.i("num_experts_per_tok");
  a.expert_intermediate = a.intermediate;
  a.norm_topk_prob = true;
  a.sparse.assign(size_t(a.layers), true);
  return a;
}

}  // namespace vramlab::engine::hf
