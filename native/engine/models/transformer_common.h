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

// A projection slot a LoRA target names: reads and replaces the Linear in its owner.
struct LoraSlot {
  std::function<std::shared_ptr<Linear>()> get;
  std::function<void(std::shared_ptr<Module>)> set;
};

}  // namespace vramlab::engine
