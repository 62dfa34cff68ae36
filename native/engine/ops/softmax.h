#pragma once
// torch.softmax(x, dim, dtype=None) with autograd, as eager attention runs it.
// The simulated device only (no data backend implements it).
#include <optional>

#include "engine/core/tensor.h"

namespace vramlab::engine {

// at::softmax: a CUDA Half input asked for float32 runs _softmax(half_to_float) in one
// kernel; any other input is converted to `dtype` first (a copy when it differs), then
// _softmax. Under autocast (fp32_set_opt_dtype) a missing dtype becomes float32.
Tensor softmax(const Tensor& x, int64_t dim, std::optional<DType> dtype = std::nullopt);

}  // namespace vramlab::engine
