#include "engine/nn/embedding.h"

#include "engine/core/grad_mode.h"
#include "engine/ops/ops.h"

namespace vramlab::engine {

Embedding::Embedding(int64_t num, int64_t dim, DType dtype) {
  weight = new_parameter({num, dim}, dtype, "empty");
  {
    NoGradGuard ng;
    normal_(weight, 0.0, 1.0);
  }
  weight.requires_grad_(true);
  register_parameter("weight", weight);
}

Tensor Embedding::forward(const Tensor& indices) { return embedding(weight, indices); }

}  // namespace vramlab::engine
