// mlp: Linear(in, hidden), ReLU, (depth-1) x [Linear(hidden, hidden), ReLU], Linear(hidden, out).
#include <stdexcept>

#include "engine/models/family.h"
#include "engine/models/stack_loss.h"
#include "engine/nn/activation.h"
#include "engine/nn/linear.h"
#include "engine/nn/sequential.h"
#include "engine/ops/ops.h"

namespace vramlab::engine {

std::shared_ptr<Sequential> make_mlp(int64_t in, int64_t hidden, int64_t depth, int64_t out, DType dtype) {
  if (depth < 1) throw std::invalid_argument("mlp depth must be at least 1");
  auto s = std::make_shared<Sequential>();
  s->push_back(std::make_shared<Linear>(in, hidden, true, dtype));
  s->push_back(std::make_shared<ReLU>());
  for (int64_t i = 1; i < depth; ++i) {
    s->push_back(std::make_shared<Linear>(hidden, hidden, true, dtype));
    s->push_back(std::make_shared<ReLU>());
  }
  s->push_back(std::make_shared<Linear>(hidden, out, true, dtype));
  s->set_path("");
  return s;
}

namespace {

class Mlp : public Model {
 public:
  explicit Mlp(const KindArgs& a) : in_(a.i("in")), out_(a.i("out")) {
    net_ = make_mlp(in_, a.i("hidden"), a.i("depth"), out_, DType::Float32);
    children_ = net_->children();  // parameter names "0.weight", ... as nn.Sequential's
  }
  std::string type_name() const override { return "mlp"; }
  Tensor forward(const Tensor& x) override { return net_->forward(x); }
  Tensor make_input(int64_t batch, int64_t) override { return randn({batch, in_}); }
  Tensor make_target(int64_t batch, int64_t, LossKind loss) override { return stack_target(batch, out_, loss); }
  Tensor loss(const Tensor& y, const Batch& b, LossKind loss) override { return stack_loss(y, b, loss); }
  void set_checkpoint(const CheckpointSpec& c) override {
    if (c.mode != CheckpointSpec::Mode::None)
      throw std::invalid_argument("checkpointing wraps blocks: the mlp family has none (use \"none\")");
  }

 private:
  int64_t in_, out_;
  std::shared_ptr<Sequential> net_;
};

}  // namespace

std::unique_ptr<Model> build_mlp(const KindArgs& a) { return std::make_unique<Mlp>(a); }

}  // namespace vramlab::engine
