#pragma once
// Tensors as the kernels' argument views (kernels/kernel_args.h), on the host.
#include "engine/backends/cuda/kernels/kernel_args.h"
#include "engine/core/tensor.h"

namespace vramlab::engine::cuda {

// A 2-D tensor with its strides; throws naming `what` otherwise.
Mat2 mat(const Tensor& t, const char* what);

// A (B, H, S, D) tensor (or (H, S, D), B = 1) with its strides; throws naming `what` otherwise.
View4 view4(const Tensor& t, const char* what);

}  // namespace vramlab::engine::cuda
