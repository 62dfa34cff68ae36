// Default (unfused) multi-tensor optimizer kernels: one per-tensor kernel per foreach
// op, list by list, exactly what the optimizer's foreach path launched before a
// backend could fuse them.
#include <stdexcept>

#include "engine/backends/backend.h"

namespace vramlab::engine {

void Backend::adam_foreach(const AdamForeachArgs& a) {
  const size_t n = a.params.size();
  if (a.grads.size() != n || a.exp_avgs.size() != n || a.exp_avg_sqs.size() != n || a.denoms.size() != n ||
      a.bias_correction2_sqrt.size() != n || a.step_size.size() != n)
    throw std::invalid_argument("adam_foreach: the tensor and scalar lists differ in length");
  if (a.param_scale != 1.0)
    for (size_t i = 0; i < n; ++i) unary(UnaryOp::MulScalar, a.params[i], a.params[i], a.param_scale);
  for (size_t i = 0; i < n; ++i) binary(BinaryOp::Lerp, a.exp_avgs[i], a.exp_avgs[i], a.grads[i], 1 - a.beta1);
  for (size_t i = 0; i < n; ++i) unary(UnaryOp::MulScalar, a.exp_avg_sqs[i], a.exp_avg_sqs[i], a.beta2);
  for (size_t i = 0; i < n; ++i)
    ternary(TernaryOp::Addcmul, a.exp_avg_sqs[i], a.exp_avg_sqs[i], a.grads[i], a.grads[i], 1 - a.beta2);
  for (size_t i = 0; i < n; ++i) unary(UnaryOp::Sqrt, a.denoms[i], a.exp_avg_sqs[i], 0.0);
  for (size_t i = 0; i < n; ++i) unary(UnaryOp::DivScalar, a.denoms[i], a.denoms[i], a.bias_correction2_sqrt[i]);
  for (size_t i = 0; i < n; ++i) unary(UnaryOp::AddScalar, a.denoms[i], a.denoms[i], a.eps);
  for (size_t i = 0; i < n; ++i)
    ternary(TernaryOp::Addcdiv, a.params[i], a.params[i], a.exp_avgs[i], a.denoms[i], a.step_size[i]);
}

}  // namespace vramlab::engine
