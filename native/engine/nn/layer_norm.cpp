#include "engine/nn/layer_norm.h"

#include "engine/core/grad_mode.h"
#include "engine/ops/ops.h"

namespace vramlab::engine {

LayerNorm::LayerNorm(int64_t dim, DType dtype) {
  weight = new_parameter({dim}, dtype, "ones");
  bias = new_parameter({dim}, dtype, "zeros");
  {
    NoGradGuard ng;
    fill_(weight, 1.0);
    fill_(bias, 0.0);
  }
  weight.requires_grad_(true);
  bias.requires_grad_(true);
  register_parameter("weight", weight);
  register_parameter("bias", bias);
}

Tensor LayerNorm::forward(const Tensor& x) { return layer_norm(x, weight, bias, 1e-5); }

}  // namespace vramlab::engine
