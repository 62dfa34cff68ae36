#include "engine/optim/grad_scaler.h"

#include <cmath>
#include <stdexcept>

#include "engine/backends/backend.h"
#include "engine/core/context.h"
#include "engine/core/grad_mode.h"
#include "engine/ops/ops.h"

namespace vramlab::engine {

GradScaler::GradScaler(GradScalerOptions o) : o_(o), scale_value_(o.init_scale) {
  if (!(o_.init_scale > 0)) throw std::invalid_argument("GradScaler: init_scale must be positive");
  if (!(o_.growth_factor > 1.0)) throw std::invalid_argument("The growth factor must be > 1.0.");
  if (!(o_.backoff_factor < 1.0 && o_.backoff_factor > 0))
    throw std::invalid_argument("The backoff factor must be < 1.0.");
  if (o_.growth_interval <= 0) throw std::invalid_argument("GradScaler: growth_interval must be positive");
}

void GradScaler::lazy_init() {
  if (scale_.defined()) return;
  // _lazy_init_scale_growth_tracker: torch.full((), init_scale) and torch.full((), 0, int32).
  CategoryScope cs(Category::OptimizerState);
  scale_ = full({}, o_.init_scale, DType::Float32);
  growth_tracker_ = full({}, 0.0, DType::Int64);  // int32 in PyTorch: the same 512-byte block
}

Tensor GradScaler::scale(const Tensor& loss) {
  lazy_init();
  return mul(loss, scale_);  // outputs * self._scale
}

void GradScaler::unscale_(Optimizer& opt) {
  if (unscaled_)
    throw std::runtime_error("unscale_() has already been called on this optimizer since the last update().");
  lazy_init();
  NoGradGuard ng;
  CategoryScope cs(Category::Temporary);
  // inv_scale = self._scale.double().reciprocal().float()
  Tensor inv_scale;
  {
    Tensor d = scale_.to(DType::Float64);
    Tensor r = make_tensor({}, DType::Float64, "reciprocal");
    current_context().backend().unary(UnaryOp::Reciprocal, r, d, 0.0);
    d.reset();
    inv_scale = r.to(DType::Float32);
  }
  {
    CategoryScope st(Category::OptimizerState);
    found_inf_ = full({}, 0.0, DType::Float32);
  }
  // _amp_foreach_non_finite_check_and_unscale_: every grad is checked, then multiplied
  // in place (even when an inf was found; the step is skipped instead).
  Backend& be = current_context().backend();
  bool found = false;
  double inv = 1.0 / scale_value_;
  for (const Tensor& p : opt.params()) {
    Tensor g = p.grad();
    if (!g.defined()) continue;
    if (be.has_data() && !be.all_finite(g)) found = true;
    mul_(g, inv);
  }
  found_inf_value_ = found;
  if (be.has_data()) fill_(found_inf_, found ? 1.0 : 0.0);
  unscaled_ = true;
}

bool GradScaler::step(Optimizer& opt) {
  if (!unscaled_) unscale_(opt);
  // _maybe_opt_step: `if not sum(v.item() for v in found_inf_per_device.values())`.
  if (found_inf_value_) return false;
  opt.step();
  return true;
}

void GradScaler::update() {
  if (!scale_.defined()) return;
  // _amp_update_scale_ (in place on scale and growth_tracker).
  if (unscaled_) {
    if (found_inf_value_) {
      scale_value_ *= o_.backoff_factor;
      tracker_value_ = 0;
    } else {
      int64_t successful = tracker_value_ + 1;
      if (successful == o_.growth_interval) {
        double grown = scale_value_ * o_.growth_factor;
        if (std::isfinite(grown)) scale_value_ = grown;
        tracker_value_ = 0;
      } else {
        tracker_value_ = successful;
      }
    }
  }
  if (current_context().backend().has_data()) {
    fill_(scale_, scale_value_);
    fill_(growth_tracker_, double(tracker_value_));
  }
  found_inf_.reset();  // self._per_optimizer_states is refreshed
  unscaled_ = false;
}

}  // namespace vramlab::engine
