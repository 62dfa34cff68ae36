#include "engine/nn/activation.h"

#include "engine/ops/ops.h"

namespace vramlab::engine {

Tensor ReLU::forward(const Tensor& x) { return relu(x); }
Tensor GELU::forward(const Tensor& x) { return gelu(x, tanh_); }

}  // namespace vramlab::engine
