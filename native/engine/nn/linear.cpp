#include "engine/nn/linear.h"

#include <cmath>
#include <stdexcept>

#include "engine/core/grad_mode.h"
#include "engine/ops/ops.h"

namespace vramlab::engine {

Linear::Linear(int64_t in, int64_t out, bool has_bias, DType dtype) {
  if (in <= 0 || out <= 0)
    throw std::invalid_argument("Linear: in_features and out_features must be positive (got " + std::to_string(in) +
                                ", " + std::to_string(out) + ")");
  // kaiming_uniform_(a=sqrt(5)): gain sqrt(2/(1+5)), bound gain*sqrt(3/fan_in) = 1/sqrt(fan_in).
  double bound = 1.0 / std::sqrt(double(in));
  weight = new_parameter({out, in}, dtype, "empty");
  {
    NoGradGuard ng;
    uniform_(weight, -bound, bound);
  }
  weight.requires_grad_(true);
  register_parameter("weight", weight);
  if (has_bias) {
    bias = new_parameter({out}, dtype, "empty");
    {
      NoGradGuard ng;
      uniform_(bias, -bound, bound);
    }
    bias.requires_grad_(true);
    register_parameter("bias", bias);
  }
}

Linear::Linear(const Tensor& shared_weight) : weight(shared_weight) { register_parameter("weight", weight); }

Tensor Linear::forward(const Tensor& x) { return linear(x, weight, bias); }

}  // namespace vramlab::engine
