// MistralForCausalLM = Llama + a sliding window on every layer (null: none).
#include "engine/models/hf/arch.h"

namespace vramlab::engine::hf {

Arch mistral(const Config& c) {
  Arch a = llama_shape(c, "MistralForCausalLM");
  a.position_ids_first = true;
  if (!c.is_null("sliding_window")) {
    a.sliding_window = c.i("sliding_window");
    a.sliding.assign(size_t(a.layers), true);
  }
  return a;
}

}  // namespace vramlab::engine::hf
