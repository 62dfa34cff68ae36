#pragma once
// Turns engine tensors into the kernels' PointwiseArgs: dims of size 1 dropped, dims
// ordered by the output's strides, adjacent dims merged where every operand allows,
// and the verdict on the vectorized contiguous fast path.
#include <initializer_list>

#include "engine/backends/cuda/kernels/kernel_args.h"
#include "engine/core/tensor.h"

namespace vramlab::engine::cuda {

struct PointwisePlan {
  PointwiseArgs args;
  bool fast = false;  // contiguous / broadcast-scalar, f32|f16|bf16, 16-byte aligned
};

// out and every input have out's sizes (broadcast inputs carry stride 0).
PointwisePlan plan_pointwise(const Tensor& out, std::initializer_list<const Tensor*> inputs, const char* op);

// Whether every element of `t` is in one dense block laid out like `like` (same
// sizes and strides, no gaps): a plain memcpy can move it.
bool same_dense_layout(const Tensor& t, const Tensor& like);

}  // namespace vramlab::engine::cuda
