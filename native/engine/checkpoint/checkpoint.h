#pragma once
// Non-reentrant activation checkpointing (torch.utils.checkpoint, use_reentrant=False):
// the region's saved tensors become holders; the first unpack in backward reruns the
// region (same autocast state, grad enabled) until the last needed tensor is packed
// again (early stop), and each recomputed tensor is handed out once.
#include <functional>

#include "engine/core/tensor.h"

namespace vramlab::engine {

Tensor checkpoint(std::function<Tensor(const Tensor&)> fn, const Tensor& input);

}  // namespace vramlab::engine
