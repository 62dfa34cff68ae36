// residual: depth seed blocks of width dim, each Linear, ReLU, Linear, ReLU plus the input.
#include <stdexcept>

#include "engine/models/family.h"
#include "engine/models/stack_loss.h"
#include "engine/nn/activation.h"
#include "engine/nn/checkpointing.h"
#include "engine/nn/linear.h"
#include "engine/nn/sequential.h"
#include "engine/ops/ops.h"

namespace vramlab::engine {

ResidualBlock::ResidualBlock(int64_t dim, DType dtype) {
  net_ = std::make_shared<Sequential>(
      std::vector<std::shared_ptr<Module>>{std::make_shared<Linear>(dim, dim, true, dtype), std::make_shared<ReLU>(),
                                           std::make_shared<Linear>(dim, dim, true, dtype), std::make_shared<ReLU>()});
  register_module("net", net_);
}

Tensor ResidualBlock::forward(const Tensor& x) { return add((*net_)(x), x); }

std::shared_ptr<Sequential> make_residual(int64_t dim, int64_t depth, DType dtype) {
  if (depth < 1) throw std::invalid_argument("residual depth must be at least 1");
  auto s = std::make_shared<Sequential>();
  for (int64_t i = 0; i < depth; ++i) s->push_back(std::make_shared<ResidualBlock>(dim, dtype));
  s->set_path("");
  return s;
}

CheckpointedSequential::CheckpointedSequential(std::shared_ptr<Sequential> blocks, const CheckpointSpec& c)
    : blocks_(std::move(blocks)), ckpt_(c) {
  children_ = blocks_->children();  // same parameter names as the wrapped Sequential
}

Tensor CheckpointedSequential::forward(const Tensor& x) {
  return run_blocks(children_.size(), x, ckpt_, [this](size_t i, const Tensor& h, const std::vector<Tensor>&) {
    return (*children_[i].second)(h);
  });
}

namespace {

class Residual : public Model {
 public:
  explicit Residual(const KindArgs& a) : dim_(a.i("dim")) {
    blocks_ = make_residual(dim_, a.i("depth"), DType::Float32);
    children_ = blocks_->children();
  }
  std::string type_name() const override { return "residual"; }
  Tensor forward(const Tensor& x) override {
    return run_blocks(children_.size(), x, checkpoint_, [this](size_t i, const Tensor& h, const std::vector<Tensor>&) {
      return (*children_[i].second)(h);
    });
  }
  Tensor make_input(int64_t batch, int64_t) override { return randn({batch, dim_}); }
  Tensor make_target(int64_t batch, int64_t, LossKind loss) override { return stack_target(batch, dim_, loss); }
  Tensor loss(const Tensor& y, const Batch& b, LossKind loss) override { return stack_loss(y, b, loss); }
  int64_t num_blocks() const override { return int64_t(children_.size()); }

 private:
  int64_t dim_;
  std::shared_ptr<Sequential> blocks_;
};

}  // namespace

std::unique_ptr<Model> build_residual(const KindArgs& a) { return std::make_unique<Residual>(a); }

}  // namespace vramlab::engine
