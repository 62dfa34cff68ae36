// Losses. mse_loss saves input and target; cross_entropy is log_softmax (saves its
// result) followed by nll_loss (saves log-probs, target and total_weight).
#include "engine/autocast/autocast.h"
#include "engine/ops/common.h"

namespace vramlab::engine {

namespace {

double mse_norm(Reduction r, int64_t numel) { return r == Reduction::Mean ? 2.0 / double(numel) : 2.0; }

Tensor mse_loss_backward(const Tensor& grad, const Tensor& self, const Tensor& target, Reduction r) {
  Tensor gi = make_tensor(self.sizes(), self.dtype(), "mse_loss_backward");
  be().ternary(TernaryOp::MseBackward, gi, self, expand_to(target, self.sizes()), expand_to(grad, self.sizes()),
               mse_norm(r, self.numel()));
  return gi;
}

struct MseLossBackward0 : Node {
  SavedVariable self_, target_;
  Reduction reduction = Reduction::Mean;
  std::string name() const override { return "MseLossBackward0"; }
  TensorList apply(TensorList& g) override {
    if (!g[0].defined()) return undefined_grads(2);
    TensorList r(2);
    Tensor self = self_.unpack(this), target = target_.unpack(this);
    if (should_compute_output(0)) r[0] = mse_loss_backward(g[0], self, target, reduction);
    if (should_compute_output(1)) r[1] = mse_loss_backward(g[0], target, self, reduction);
    return r;
  }
  void release_variables() override {
    self_.reset_data();
    target_.reset_data();
  }
};

struct LogSoftmaxBackward0 : Node {
  SavedVariable result_;
  DType self_dtype{};
  std::string name() const override { return "LogSoftmaxBackward0"; }
  TensorList apply(TensorList& g) override {
    if (!g[0].defined()) return undefined_grads(1);
    Tensor result = result_.unpack(this);
    Tensor gi = make_tensor(result.sizes(), self_dtype, "_log_softmax_backward_data");
    be().log_softmax_backward(gi, g[0], result);
    return {gi};
  }
  void release_variables() override { result_.reset_data(); }
};

struct NllLossBackward0 : Node {
  SavedVariable self_, target_, total_weight_;
  bool mean = true;
  std::string name() const override { return "NllLossBackward0"; }
  TensorList apply(TensorList& g) override {
    if (!g[0].defined()) return undefined_grads(1);
    Tensor self = self_.unpack(this);
    Tensor gi = zeros_like(self);
    be().nll_loss_backward(gi, g[0], target_.unpack(this), total_weight_.unpack(this), mean);
    return {gi};
  }
  void release_variables() override {
    self_.reset_data();
    target_.reset_data();
    total_weight_.reset_data();
  }
};

}  // namespace

Tensor mse_loss(const Tensor& input_in, const Tensor& target_in, Reduction r) {
  Tensor target = autocast_fp32(target_in), input = autocast_fp32(input_in);  // last argument first
  AutocastExcludeGuard ex;
  if (!is_floating(input.dtype()) || input.dtype() != target.dtype())
    throw std::invalid_argument(std::string("mse_loss: expected input and target of one floating dtype, got ") +
                                dtype_name(input.dtype()) + " and " + dtype_name(target.dtype()));
  Shape shape = broadcast_shapes(input.sizes(), target.sizes());
  if (shape != input.sizes())
    throw std::invalid_argument("mse_loss: target size " + target.shape_string() +
                                " is not broadcastable to the input size " + input.shape_string());
  auto n = make_node<MseLossBackward0>({&input, &target});
  if (n) {
    n->self_ = SavedVariable(input, false);
    n->target_ = SavedVariable(target, false);
    n->reduction = r;
  }
  // The pointwise loss is a full-size temporary, then reduced.
  Tensor pointwise = make_tensor(shape, input.dtype(), "mse_loss");
  be().binary(BinaryOp::SqDiff, pointwise, input, expand_to(target, shape), 0.0);
  Tensor out;
  if (r == Reduction::None) {
    out = pointwise;
  } else {
    NoGradGuard ng;
    out = r == Reduction::Mean ? mean(pointwise) : sum(pointwise);
  }
  return with_history(out, n);
}

Tensor log_softmax(const Tensor& a_in, int64_t dim) {
  // fp32_set_opt_dtype under autocast: log_softmax(x, dim, dtype=float) converts first.
  Tensor a =
      autocast_active() && is_floating(a_in.dtype()) && a_in.dtype() != DType::Float64 ? a_in.to(DType::Float32) : a_in;
  AutocastExcludeGuard ex;
  if (!is_floating(a.dtype())) throw std::invalid_argument("\"log_softmax\" not implemented for 'Long'");
  int64_t nd = a.dim();
  int64_t d = dim < 0 ? dim + nd : dim;
  if (nd != 2 || d != 1)
    throw std::invalid_argument("log_softmax: this engine supports 2-D input over dim 1 (got " + std::to_string(nd) +
                                "-D, dim " + std::to_string(dim) + ")");
  auto n = make_node<LogSoftmaxBackward0>({&a});
  Tensor out = make_tensor(a.sizes(), a.dtype(), "_log_softmax");
  be().log_softmax(out, a.contiguous());
  if (n) {
    n->self_dtype = a.dtype();
    set_history(out, n);
    n->result_ = SavedVariable(out, true);
  }
  return out;
}

Tensor nll_loss(const Tensor& logp_in, const Tensor& target, Reduction r) {
  Tensor logp = autocast_fp32(logp_in);
  AutocastExcludeGuard ex;
  if (logp.dim() != 2) throw std::invalid_argument("nll_loss: expected 2-D input, got " + logp.shape_string());
  if (target.dtype() != DType::Int64)
    throw std::invalid_argument(std::string("expected scalar type Long but found ") + dtype_name(target.dtype()));
  if (target.dim() != 1 || target.size(0) != logp.size(0))
    throw std::invalid_argument("Expected input batch_size (" + std::to_string(logp.size(0)) +
                                ") to match target batch_size (" + std::to_string(target.numel()) + ").");
  if (r == Reduction::None) throw std::invalid_argument("nll_loss: reduction='none' is not supported by this engine");
  auto n = make_node<NllLossBackward0>({&logp});
  Tensor out = make_tensor({}, logp.dtype(), "nll_loss_forward");
  Tensor total_weight = make_tensor({}, logp.dtype(), "nll_loss_forward");
  be().nll_loss(out, total_weight, logp, target, r == Reduction::Mean);
  if (n) {
    n->self_ = SavedVariable(logp, false);
    n->target_ = SavedVariable(target, false);
    n->total_weight_ = SavedVariable(total_weight, false);
    n->mean = r == Reduction::Mean;
  }
  return with_history(out, n);
}

Tensor cross_entropy(const Tensor& logits, const Tensor& target, Reduction r) {
  return nll_loss(log_softmax(logits, 1), target, r);
}

}  // namespace vramlab::engine
