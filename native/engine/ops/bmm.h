#pragma once
// Batched matrix products with autograd, as eager attention runs them (torch.matmul on
// (..., n, m) x (..., m, p) operands with equal batch dims: reshape to 3-D, bmm, view back).
// The simulated device only: no data backend implements a batched GEMM.
#include "engine/core/tensor.h"

namespace vramlab::engine {

// torch.bmm(a, b): (Bt, n, m) x (Bt, m, p) -> (Bt, n, p); autocast's lower-precision list.
Tensor bmm(const Tensor& a, const Tensor& b);
// torch.matmul for two operands of rank >= 3 with the same batch dims (at::matmul's general
// path: each operand reshaped to (batch, rows, cols) — a copy when its strides can't be
// folded — then bmm, then _unsafe_view to (..., n, p)).
Tensor batched_matmul(const Tensor& a, const Tensor& b);

}  // namespace vramlab::engine
