// MixtralForCausalLM = Mistral + a sparse MLP on every layer: a router `gate` over
// num_local_experts experts of intermediate_size, top num_experts_per_tok, renormalised.
#include <stdexcept>

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
  // output_router_logits adds the load-balancing loss over every layer's router logits
  if (c.has("output_router_logits") && !c.is_null("output_router_logits") && c.b("output_router_logits"))
    throw std::invalid_argument(c.path +
                                ".output_router_logits true (the auxiliary load-balancing loss) is not modelled");
  // training multiplies the hidden states in place by uniform noise: not modelled
  if (c.has("router_jitter_noise") && c.f("router_jitter_noise") != 0)
    throw std::invalid_argument(c.path + ".router_jitter_noise " + std::to_string(c.f("router_jitter_noise")) +
                                " is not modelled (only 0.0, MixtralConfig's default)");
  return a;
}

}  // namespace vramlab::engine::hf
