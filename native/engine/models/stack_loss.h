#pragma once
// The batch and loss of the plain stacks (mlp, residual): x = randn(batch, in) and a
// target made with it, loss_of(y) = y.float() then sum / mse_loss / cross_entropy.
#include "engine/models/model.h"

namespace vramlab::engine {

Tensor stack_target(int64_t batch, int64_t out, LossKind loss);  // undefined for LossKind::Sum
Tensor stack_loss(const Tensor& y, const Batch& b, LossKind loss);

}  // namespace vramlab::engine
