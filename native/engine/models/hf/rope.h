#pragma once
// Rotary position embeddings as transformers 5.17 builds them (modeling_rope_utils.py):
// the rope_parameters of a completed config, the inv_freq buffer each rope type's init
// function leaves (with the temporaries it makes on the device on the way), and the
// forward-time update that "dynamic" and "longrope" run (dynamic_rope_update).
#include <string>
#include <vector>

#include "engine/models/hf/arch.h"
#include "engine/nn/module.h"

namespace vramlab::engine::hf {

// rope_parameters (one of them, for Gemma3's per-layer-type dict) read into a Rope.
// `c` is the whole config (max_position_embeddings, original_max_position_embeddings).
Rope read_rope(const Config& c, const SpecValue& params, const std::string& path);

// <X>RotaryEmbedding: inv_freq and its clone original_inv_freq (float32 buffers), built
// under torch.device("cuda") by the rope type's init function.
class RotaryEmbedding : public Module {
 public:
  RotaryEmbedding(const Rope& rope, int64_t head_dim);
  std::string type_name() const override { return "RotaryEmbedding"; }
  const Tensor& inv_freq() const { return inv_freq_; }
  // @dynamic_rope_update before forward: seq_len = torch.max(position_ids) + 1, then
  // "dynamic" checks growth/reset against its cached length and "longrope" rebinds
  // inv_freq to the short (original) or freshly computed long frequencies.
  // `seq` is torch.max(position_ids) + 1: past + this call's tokens.
  void update(int64_t seq);

 private:
  void set_inv_freq(const Tensor& t);
  Rope rope_;
  int64_t dim_;
  Tensor inv_freq_, original_;
};

}  // namespace vramlab::engine::hf
