// Olmo2ForCausalLM = Llama - the pre-norms + norms after attention and MLP + an RMSNorm
// over the whole q and k projections (before the heads are split).
#include "engine/models/hf/arch.h"

namespace vramlab::engine::hf {

Arch olmo2(const Config& c) {
  Arch a = llama(c);
  a.name = "Olmo2ForCausalLM";
  a.norms = Arch::Norms::Post;
  a.qk_norm = Arch::QkNorm::Full;
  return a;
}

}  // namespace vramlab::engine::hf
