#pragma once
// The sparse mixture-of-experts block of Mixtral and Qwen3-MoE as transformers 5.17 runs it
// by default (config._experts_implementation = "grouped_mm", integrations/moe.py): a router
// linear, float32 softmax, top-k (renormalised when the architecture says so), then the
// tokens sorted by expert and both expert projections as one torch._grouped_mm each over
// the fused 3-D weights (gate_up_proj [E, 2I, H], down_proj [E, H, I]).
//
// Routing is data-dependent, but every tensor this path allocates is sized by the totals
// (tokens x top_k, experts), never by how many tokens one expert got: grouped_mm writes all
// rows and the per-expert offsets only steer the kernel. So the simulated device gives
// PyTorch's bytes for any routing; the data backends are refused (no routing is computed).
#include <memory>

#include "engine/models/hf/arch.h"
#include "engine/nn/module.h"

namespace vramlab::engine::hf {

// The block as `mlp` of a sparse decoder layer: its `gate` (router) and `experts`
// parameters, built in the order the architecture's __init__ makes them.
std::shared_ptr<Module> make_moe_block(const Arch& a, DType dtype);

// generate()'s _optimize_model_for_decode: after the prefill, every decoding step runs the
// experts as "batched_mm" (each selected token gathers its expert's weights and runs one
// bmm), while this scope is active on the thread.
class DecodeExpertsScope {
 public:
  explicit DecodeExpertsScope(bool decoding);
  ~DecodeExpertsScope();
  DecodeExpertsScope(const DecodeExpertsScope&) = delete;
  DecodeExpertsScope& operator=(const DecodeExpertsScope&) = delete;
  static bool active();

 private:
  bool saved_;
};

}  // namespace vramlab::engine::hf
