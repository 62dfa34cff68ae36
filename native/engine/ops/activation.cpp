// ReLU saves its result, GELU saves its input (derivatives.yaml).
#include "engine/ops/common.h"

namespace vramlab::engine {

namespace {

struct ReluBackward0 : Node {
  SavedVariable result_;
  std::string name() const override { return "ReluBackward0"; }
  TensorList apply(TensorList& g) override {
    if (!g[0].defined()) return undefined_grads(1);
    return {threshold_backward(g[0], result_.unpack(this), 0.0)};
  }
  void release_variables() override { result_.reset_data(); }
};

struct GeluBackward0 : Node {
  SavedVariable self_;
  bool tanh = false;
  std::string name() const override { return "GeluBackward0"; }
  TensorList apply(TensorList& g) override {
    if (!g[0].defined()) return undefined_grads(1);
    return {gelu_backward(g[0], self_.unpack(this), tanh)};
  }
  void release_variables() override { self_.reset_data(); }
};

void check_float(const Tensor& a, const char* op) {
  if (!is_floating(a.dtype())) throw std::invalid_argument(std::string("\"") + op + "\" not implemented for 'Long'");
}

}  // namespace

Tensor relu(const Tensor& a) {
  auto n = make_node<ReluBackward0>({&a});
  Tensor out = make_tensor(a.sizes(), a.dtype(), "relu");
  be().unary(UnaryOp::Relu, out, a, 0.0);
  if (n) {
    set_history(out, n);
    n->result_ = SavedVariable(out, true);
  }
  return out;
}

Tensor& relu_(Tensor& a) {
  check_inplace(a);
  auto n = make_node<ReluBackward0>({&a});
  be().unary(UnaryOp::Relu, a, a, 0.0);
  a.bump_version();
  if (n) {
    if (a.impl()->is_view)
      throw std::runtime_error("in-place operations on views of tensors that require grad are not supported");
    a.impl()->grad_fn.reset();
    set_history(a, n);
    n->result_ = SavedVariable(a, true);
  }
  return a;
}

Tensor gelu(const Tensor& a, bool tanh_approximation) {
  check_float(a, "GeluKernelImpl");
  auto n = make_node<GeluBackward0>({&a});
  if (n) {
    n->self_ = SavedVariable(a, false);
    n->tanh = tanh_approximation;
  }
  Tensor out = make_tensor(a.sizes(), a.dtype(), "gelu");
  be().unary(tanh_approximation ? UnaryOp::GeluTanh : UnaryOp::Gelu, out, a, 0.0);
  return with_history(out, n);
}

Tensor threshold_backward(const Tensor& grad, const Tensor& self, double) {
  Shape shape = broadcast_shapes(grad.sizes(), self.sizes());
  Tensor out = make_tensor(shape, promote_types(grad.dtype(), self.dtype()), "threshold_backward");
  be().binary(BinaryOp::ThresholdBackward, out, expand_to(grad, shape), expand_to(self, shape), 0.0);
  return out;
}

Tensor gelu_backward(const Tensor& grad, const Tensor& self, bool tanh_approximation) {
  Shape shape = broadcast_shapes(grad.sizes(), self.sizes());
  Tensor out = make_tensor(shape, promote_types(grad.dtype(), self.dtype()), "gelu_backward");
  be().binary(tanh_approximation ? BinaryOp::GeluTanhBackward : BinaryOp::GeluBackward, out, expand_to(grad, shape),
              expand_to(self, shape), 0.0);
  return out;
}

}  // namespace vramlab::engine
