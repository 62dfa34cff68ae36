// Qwen2ForCausalLM = Llama + q/k/v biases (o_proj has none) + sliding window per layer_types.
#include "engine/models/hf/arch.h"

namespace vramlab::engine::hf {

Arch qwen2(const Config& c) {
  Arch a = llama_shape(c, "Qwen2ForCausalLM");
  a.q_bias = a.k_bias = a.v_bias = true;
  a.sliding = sliding_layers(c, a.layers);
  a.masks = Arch::Masks::PerLayerType;
  if (!c.is_null("sliding_window")) a.sliding_window = c.i("sliding_window");
  return a;
}

}  // namespace vramlab::engine::hf
