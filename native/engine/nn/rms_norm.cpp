#include "engine/nn/rms_norm.h"

#include "engine/core/grad_mode.h"
#include "engine/ops/ops.h"

namespace vramlab::engine {

RMSNorm::RMSNorm(int64_t dim, double eps, DType dtype) : eps_(eps) {
  weight = new_parameter({dim}, dtype, "ones");
  {
    NoGradGuard ng;
    fill_(weight, 1.0);
  }
  weight.requires_grad_(true);
  register_parameter("weight", weight);
}

Tensor RMSNorm::forward(const Tensor& x) {
  // xf = x.float(); return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).type_as(x) * weight
  Tensor xf = x.float_();
  Tensor r;
  {
    Tensor p = pow(xf, 2.0);
    Tensor m = mean(p, {-1}, true);
    p.reset();
    Tensor a = add(m, eps_);
    m.reset();
    r = rsqrt(a);
  }
  Tensor n = mul(xf, r);
  r.reset();
  Tensor t = n.to(x.dtype());
  n.reset();
  return mul(t, weight);
}

}  // namespace vramlab::engine
