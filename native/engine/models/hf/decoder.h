#pragma once
// The hf family: a Hugging Face decoder (transformers 5.17 modeling code) written once,
// with each architecture's differences (arch.h) switched in. Module names, construction
// order and parameter order are HF's, so PEFT targets ("q_proj") and optimizer state
// order match; forwards follow the modeling code line by line (Python lifetimes).
#include <memory>

#include "engine/models/hf/arch.h"
#include "engine/models/model.h"

namespace vramlab::engine {

// spec.model = {kind: "hf", config: {...completed config.json...}, seq, attn_implementation},
// built directly in `weights` (torch.set_default_dtype + with torch.device("cuda")).
std::unique_ptr<Model> build_hf(const KindArgs& a, DType weights);

namespace hf {
// GPT2LMHeadModel (gpt2_model.cpp).
std::unique_ptr<Model> build_gpt2(const KindArgs& a, DType weights);
}  // namespace hf

}  // namespace vramlab::engine
