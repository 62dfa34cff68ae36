#include "engine/nn/lora.h"

#include "engine/core/alloc_tag.h"
#include "engine/core/grad_mode.h"
#include "engine/ops/ops.h"

namespace vramlab::engine {

LoRALinear::LoRALinear(std::shared_ptr<Linear> base, int64_t rank, double alpha)
    : base_(std::move(base)), scale_(alpha / double(rank)) {
  register_module("base", base_);
  {
    CategoryScope cs(Category::Parameter);
    NoGradGuard ng;
    // torch.randn(r, in) / r: the randn result is a temporary.
    A = div(randn({rank, base_->in_features()}), double(rank));
    B = zeros({base_->out_features(), rank});
  }
  A.requires_grad_(true);
  B.requires_grad_(true);
  register_parameter("A", A);
  register_parameter("B", B);
}

Tensor LoRALinear::forward(const Tensor& x) {
  // base(x) + F.linear(F.linear(x, A), B) * scale
  Tensor y = (*base_)(x);
  Tensor a = linear(x, A);
  Tensor b = linear(a, B);
  a.reset();
  Tensor s = mul(b, scale_);
  b.reset();
  return add(y, s);
}

}  // namespace vramlab::engine
