// Qwen3MoeForCausalLM = Qwen3 + sparse MLPs (a router `gate` over num_experts experts of
// moe_intermediate_size, top num_experts_per_tok) on every decoder_sparse_step-th layer
// not in mlp_only_layers.
#include <stdexcept>

#include "engine/models/hf/arch.h"

namespace vramlab::engine::hf {

Arch qwen3_moe(const Config& c) {
  Arch a = qwen3(c);
  a.masks = Arch::Masks::One;  // create_causal_mask or the sliding one, as Mistral
  a.position_ids_first = true;
  a.name = "Qwen3MoeForCausalLM";
  a.experts = c.i("num_experts");
  a.top_k = c.i("num_experts_per_tok");
  a.expert_intermediate = c.i("moe_intermediate_size");
  a.norm_topk_prob = c.b("norm_topk_prob");
  const int64_t step = c.i("decoder_sparse_step");
  std::vector<int64_t> dense_only;
  if (!c.is_null("mlp_only_layers"))
    for (auto& v : c.at("mlp_only_layers").items()) dense_only.push_back(v.as_int(c.path + ".mlp_only_layers"));
  for (int64_t i = 0; i < a.layers; ++i) {
    bool only = false;
    for (int64_t d : dense_only) only = only || d == i;
    a.sparse[size_t(i)] = !only && a.experts > 0 && step > 0 && (i + 1) % step == 0;
  }
  // output_router_logits adds the load-balancing loss over every layer's router logits
  if (c.has("output_router_logits") && !c.is_null("output_router_logits") && c.b("output_router_logits"))
    throw std::invalid_argument(c.path +
                                ".output_router_logits true (the auxiliary load-balancing loss) is not modelled");
  return a;
}

}  // namespace vramlab::engine::hf
