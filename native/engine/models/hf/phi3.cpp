// Phi3ForCausalLM = Mistral + one fused qkv_proj and one fused gate_up_proj + rotary through
// cat([rotated, pass-through]) (a contiguous copy of q and k) (dropouts at
// resid_pdrop / embd_pdrop, identities at their default 0).
#include <stdexcept>

#include "engine/models/hf/arch.h"

namespace vramlab::engine::hf {

Arch phi3(const Config& c) {
  Arch a = mistral(c);
  a.name = "Phi3ForCausalLM";
  a.fused_qkv = a.fused_gate_up = true;
  a.rope_cat_copy = true;
  a.resid_pdrop = c.f("resid_pdrop");
  a.embd_pdrop = c.f("embd_pdrop");
  if (c.has("partial_rotary_factor") && c.f("partial_rotary_factor") != 1.0)
    throw std::invalid_argument(c.path + ".partial_rotary_factor other than 1.0 is not supported");
  return a;
}

}  // namespace vramlab::engine::hf
