#include "engine/models/stack_loss.h"

#include <stdexcept>

#include "engine/ops/ops.h"

namespace vramlab::engine {

Tensor stack_target(int64_t batch, int64_t out, const std::string& loss) {
  if (loss == "mse") return randn({batch, out});
  if (loss == "cross_entropy") return randint({batch}, out);
  if (loss != "sum") throw std::invalid_argument("unknown loss \"" + loss + "\" (expected sum, mse or cross_entropy)");
  return Tensor();
}

Tensor stack_loss(const Tensor& y, const Batch& b, const std::string& loss) {
  // y.float() is y itself in fp32 and a cast under autocast.
  Tensor yf = y.float_();
  if (loss == "mse") return mse_loss(yf, b.target);
  if (loss == "cross_entropy") return cross_entropy(yf, b.target);
  return sum(yf);
}

}  // namespace vramlab::engine
