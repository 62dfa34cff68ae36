#pragma once
// Pieces the transformer families share: token inputs and the language-model loss
// (cross-entropy of the logits (batch*seq, vocab) against the targets, outside
// autocast), freezing by name, and LoRA wrapping of a block's projections.
#include <functional>
#include <memory>
#include <string>

#include "engine/models/model.h"
#include "engine/nn/linear.h"

namespace vramlab::engine {

Tensor lm_loss(const Tensor& logits, const Batch& b);
// requires_grad_(false) on every parameter whose name `frozen(name)` accepts.
void freeze_parameters(const Module& m, const std::function<bool(const std::string&)>& frozen);

// Fine-tuning as every transformer family does it (one implementation for gpt, llama
// and hf). "freeze": parameters under any of `always_frozen` (the embeddings) and under
// `block_prefix`i. for i < blocks stop requiring grad. "lora": everything is frozen, then
// each site `lora_sites(targets)` names (a Linear child of an owner module, in the
// family's wrapping order) is replaced by `wrap(base)`; `after` runs once all are wrapped.
struct LoraSite {
  Module* owner;
  std::string child;
};
struct FinetunePlan {
  int64_t depth = 0;
  std::string block_prefix;                // "blocks." / "model.layers."
  std::vector<std::string> always_frozen;  // name prefixes
  std::function<std::vector<LoraSite>(const std::vector<std::string>& targets)> lora_sites;
  std::function<std::shared_ptr<Module>(std::shared_ptr<Linear> base)> wrap;
  std::function<void()> after;
};
void apply_finetune_plan(Module& root, const FinetuneSpec& f, const FinetunePlan& plan);

}  // namespace vramlab::engine
