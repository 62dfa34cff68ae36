#pragma once
// torch.amp.GradScaler for fp16 training, with PyTorch's device memory: the scale
// (float32) and growth tracker (int32) live on the device from the first scale();
// scale(loss) is a new scaled-loss tensor; unscale_ computes inv_scale through
// double -> reciprocal -> float temporaries and a per-device found_inf flag, then runs
// _amp_foreach_non_finite_check_and_unscale_ over the grads in place; step() skips the
// optimizer step when found_inf is set; update() is _amp_update_scale_ (in place) and
// drops found_inf.
#include <cstdint>

#include "engine/core/tensor.h"
#include "engine/optim/optimizer.h"

namespace vramlab::engine {

struct GradScalerOptions {
  double init_scale = 65536.0, growth_factor = 2.0, backoff_factor = 0.5;
  int64_t growth_interval = 2000;
};

class GradScaler {
 public:
  explicit GradScaler(GradScalerOptions o = {});

  Tensor scale(const Tensor& loss);  // loss * scale (autograd-tracked)
  void unscale_(Optimizer& opt);     // grads *= 1/scale in place; records found_inf
  bool step(Optimizer& opt);         // unscale_ if needed; false when the step was skipped
  void update();                     // grow / back off the scale

  double get_scale() const { return scale_value_; }
  int64_t growth_tracker() const { return tracker_value_; }
  bool found_inf() const { return found_inf_value_; }  // of the last unscale_

 private:
  void lazy_init();
  GradScalerOptions o_;
  Tensor scale_, growth_tracker_;  // device tensors (memory as in PyTorch)
  Tensor found_inf_;               // optimizer_state["found_inf_per_device"], until update()
  // Host mirrors: the sim backend holds no values, the cpu backend's are read back.
  double scale_value_;
  int64_t tracker_value_ = 0;
  bool found_inf_value_ = false, unscaled_ = false;
};

}  // namespace vramlab::engine
