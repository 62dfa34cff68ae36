#include "engine/models/stack_loss.h"

#include "engine/ops/ops.h"

namespace vramlab::engine {

Tensor stack_target(int64_t batch, int64_t out, LossKind loss) {
  switch (loss) {
    case LossKind::Mse:
      return randn({batch, out});
    case LossKind::CrossEntropy:
      return randint({batch}, out);
    case LossKind::Sum:
      break;
  }
  return Tensor();
}

Tensor stack_loss(const Tensor& y, const Batch& b, LossKind loss) {
  // y.float() is y itself in fp32 and a cast under autocast.
  Tensor yf = y.float_();
  switch (loss) {
    case LossKind::Mse:
      return mse_loss(yf, b.target);
    case LossKind::CrossEntropy:
      return cross_entropy(yf, b.target);
    case LossKind::Sum:
      break;
  }
  return sum(yf);
}

}  // namespace vramlab::engine
