#pragma once
// Non-reentrant activation checkpointing (torch.utils.checkpoint, use_reentrant=False):
// the region's saved tensors become holders; the first unpack in backward reruns the
// region (same autocast state, grad enabled) until the last needed tensor is packed
// again (early stop), and each recomputed tensor is handed out once.
#include <functional>
#include <vector>

#include "engine/core/tensor.h"

namespace vramlab::engine {

Tensor checkpoint(std::function<Tensor(const Tensor&)> fn, const Tensor& input);
// The region with several inputs (kept alive, as _NoopSaveInputs keeps them).
Tensor checkpoint(std::function<Tensor(const std::vector<Tensor>&)> fn, std::vector<Tensor> inputs);

}  // namespace vramlab::engine
