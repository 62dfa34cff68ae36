#include "engine/optim/optimizer.h"

#include <cmath>
#include <stdexcept>

#include "engine/backends/backend.h"
#include "engine/core/context.h"
#include "engine/core/grad_mode.h"
#include "engine/ops/ops.h"

namespace vramlab::engine {

Optimizer::Optimizer(std::vector<Tensor> params) : params_(std::move(params)) {
  if (params_.empty()) throw std::invalid_argument("optimizer got an empty parameter list");
  for (auto& p : params_)
    if (!p.is_leaf()) throw std::invalid_argument("can't optimize a non-leaf Tensor");
}

void Optimizer::zero_grad(bool set_to_none) {
  NoGradGuard ng;
  for (auto& p : params_) {
    if (!p.grad().defined()) continue;
    if (set_to_none) {
      p.set_grad(Tensor());
    } else {
      Tensor g = p.grad();
      zero_(g);  // _foreach_zero_: in place
    }
  }
}

}  // namespace vramlab::engine
