#pragma once
// F.dropout(x, p, training): native_dropout's mask and output in training, x itself otherwise.
#include "engine/core/tensor.h"

namespace vramlab::engine {

Tensor dropout(const Tensor& x, double p, bool train);

}  // namespace vramlab::engine
