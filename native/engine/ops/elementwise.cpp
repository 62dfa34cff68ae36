// Pointwise arithmetic with broadcasting and PyTorch's type promotion.
// Backward nodes compute their inputs' gradients in the order PyTorch's generated code
// does: by argument name, alphabetically (other before self), which fixes which
// temporary exists when in a backward pass.
#include "engine/autocast/autocast.h"
#include "engine/ops/common.h"

namespace vramlab::engine {

namespace {

struct AddBackward0 : Node {
  double alpha = 1.0;
  std::string name() const override { return "AddBackward0"; }
  TensorList apply(TensorList& g) override {
    if (!g[0].defined()) return undefined_grads(2);
    TensorList r(2);
    if (should_compute_output(1)) r[1] = alpha == 1.0 ? g[0] : mul(g[0], alpha);
    if (should_compute_output(0)) r[0] = g[0];
    return r;
  }
};

struct SubBackward0 : Node {
  double alpha = 1.0;
  std::string name() const override { return "SubBackward0"; }
  TensorList apply(TensorList& g) override {
    if (!g[0].defined()) return undefined_grads(2);
    TensorList r(2);
    if (should_compute_output(1)) {
      Tensor n = neg(g[0]);
      r[1] = alpha == 1.0 ? n : mul(n, alpha);
    }
    if (should_compute_output(0)) r[0] = g[0];
    return r;
  }
};

struct MulBackward0 : Node {
  SavedVariable self_, other_;
  DType self_dtype{}, other_dtype{};
  std::string name() const override { return "MulBackward0"; }
  TensorList apply(TensorList& g) override {
    if (!g[0].defined()) return undefined_grads(2);
    TensorList r(2);
    // unpacked first, by name as the generated node does (recomputed tensors under
    // checkpointing then go in reverse when apply returns)
    Tensor other = other_.unpack(this), self = self_.unpack(this);
    if (should_compute_output(1)) r[1] = mul(g[0], self);
    if (should_compute_output(0)) r[0] = mul(g[0], other);
    return r;
  }
  void release_variables() override {  // the generated node's order: saved inputs by name
    other_.reset_data();
    self_.reset_data();
  }
};

struct DivBackward0 : Node {
  SavedVariable self_, other_;
  std::string name() const override { return "DivBackward0"; }
  TensorList apply(TensorList& g) override {
    if (!g[0].defined()) return undefined_grads(2);
    TensorList r(2);
    Tensor other = other_.unpack(this);
    if (should_compute_output(1)) {
      // div_tensor_other_backward: -grad * ((self / other) / other)
      Tensor q = div(div(self_.unpack(this), other), other);
      r[1] = mul(neg(g[0]), q);
    }
    if (should_compute_output(0)) r[0] = div(g[0], other);
    return r;
  }
  void release_variables() override {  // the generated node's order: saved inputs by name
    other_.reset_data();
    self_.reset_data();
  }
};

struct AddBackward1 : Node {  // add.Scalar
  std::string name() const override { return "AddBackward1"; }
  TensorList apply(TensorList& g) override { return {g[0]}; }
};

struct MulBackward1 : Node {  // mul.Scalar
  double other = 1.0;
  std::string name() const override { return "MulBackward1"; }
  TensorList apply(TensorList& g) override {
    if (!g[0].defined()) return undefined_grads(1);
    return {mul(g[0], other)};
  }
};

struct DivBackward1 : Node {  // div.Scalar
  double other = 1.0;
  std::string name() const override { return "DivBackward1"; }
  TensorList apply(TensorList& g) override {
    if (!g[0].defined()) return undefined_grads(1);
    return {div(g[0], other)};
  }
};

struct NegBackward0 : Node {
  std::string name() const override { return "NegBackward0"; }
  TensorList apply(TensorList& g) override {
    if (!g[0].defined()) return undefined_grads(1);
    return {neg(g[0])};
  }
};

struct PowBackward0 : Node {  // pow.Tensor_Scalar
  SavedVariable self_;
  double exponent = 1.0;
  std::string name() const override { return "PowBackward0"; }
  TensorList apply(TensorList& g) override {
    if (!g[0].defined()) return undefined_grads(1);
    if (exponent == 0.0) return {zeros_like(self_.unpack(this))};
    // grad * (exponent * self.pow(exponent - 1)): one expression, the right operand
    // built first, its temporaries freed only when the product exists.
    Tensor p = pow(self_.unpack(this), exponent - 1);
    Tensor e = mul(p, exponent);
    return {mul(g[0], e)};
  }
  void release_variables() override { self_.reset_data(); }
};

struct RsqrtBackward0 : Node {
  SavedVariable result_;
  std::string name() const override { return "RsqrtBackward0"; }
  TensorList apply(TensorList& g) override {
    if (!g[0].defined()) return undefined_grads(1);
    // -0.5 * grad * result.pow(3): result.pow(3), then -0.5 * grad, then the product.
    Tensor p = pow(result_.unpack(this), 3.0);
    Tensor h = mul(g[0], -0.5);
    return {mul(h, p)};
  }
  void release_variables() override { result_.reset_data(); }
};

struct SiluBackward0 : Node {
  SavedVariable self_;
  std::string name() const override { return "SiluBackward0"; }
  TensorList apply(TensorList& g) override {
    if (!g[0].defined()) return undefined_grads(1);
    Tensor self = self_.unpack(this);
    Shape shape = broadcast_shapes(g[0].sizes(), self.sizes());
    Tensor out = make_tensor(shape, promote_types(g[0].dtype(), self.dtype()), "silu_backward");
    be().binary(BinaryOp::SiluBackward, out, expand_to(g[0], shape), expand_to(self, shape), 0.0);
    return {out};
  }
  void release_variables() override { self_.reset_data(); }
};

struct TanhBackward0 : Node {  // tanh_backward(grad, result): grad * (1 - result^2)
  SavedVariable result_;
  std::string name() const override { return "TanhBackward0"; }
  TensorList apply(TensorList& g) override {
    if (!g[0].defined()) return undefined_grads(1);
    Tensor y = result_.unpack(this);
    Shape shape = broadcast_shapes(g[0].sizes(), y.sizes());
    Tensor out = make_tensor(shape, promote_types(g[0].dtype(), y.dtype()), "tanh_backward");
    be().binary(BinaryOp::TanhBackward, out, expand_to(g[0], shape), expand_to(y, shape), 0.0);
    return {out};
  }
  void release_variables() override { result_.reset_data(); }
};

DType binary_result_type(const Tensor& a, const Tensor& b) {
  return result_type(a.dtype(), a.dim() == 0, b.dtype(), b.dim() == 0);
}

DType scalar_result_type(const Tensor& a, double s) {
  if (!is_floating(a.dtype()) && s != double(int64_t(s))) return DType::Float32;
  return a.dtype();
}

Tensor binary_out(BinaryOp op, const Tensor& a, const Tensor& b, double s, const char* name) {
  Shape shape = broadcast_shapes(a.sizes(), b.sizes());
  Tensor out = make_tensor(shape, binary_result_type(a, b), name);
  be().binary(op, out, expand_to(a, shape), expand_to(b, shape), s);
  return out;
}

Tensor unary_out(UnaryOp op, const Tensor& a, double s, DType dt, const char* name) {
  Tensor out = make_tensor(a.sizes(), dt, name);
  be().unary(op, out, a, s);
  return out;
}

// In-place ops under autograd replace the tensor's history (rebase_history).
void rebase(Tensor& a, const std::shared_ptr<Node>& n) {
  if (!n) return;
  if (a.impl()->is_view)
    throw std::runtime_error("in-place operations on views of tensors that require grad are not supported");
  a.impl()->grad_fn.reset();
  set_history(a, n);
}

}  // namespace

Shape broadcast_shapes(const Shape& a, const Shape& b, const char*) {
  size_t n = std::max(a.size(), b.size());
  Shape r(n);
  for (size_t i = 0; i < n; ++i) {
    int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    if (da != db && da != 1 && db != 1)
      throw std::invalid_argument("The size of tensor a (" + std::to_string(da) +
                                  ") must match the size of tensor b (" + std::to_string(db) +
                                  ") at non-singleton dimension " + std::to_string(i));
    r[i] = da == 1 ? db : da;
  }
  return r;
}

Tensor add(const Tensor& a, const Tensor& b, double alpha) {
  auto n = make_node<AddBackward0>({&a, &b});
  Tensor out = binary_out(BinaryOp::Add, a, b, alpha, "add");
  if (n) n->alpha = alpha;
  return with_history(out, n);
}

Tensor sub(const Tensor& a, const Tensor& b, double alpha) {
  auto n = make_node<SubBackward0>({&a, &b});
  Tensor out = binary_out(BinaryOp::Sub, a, b, alpha, "sub");
  if (n) n->alpha = alpha;
  return with_history(out, n);
}

Tensor mul(const Tensor& a, const Tensor& b) {
  auto n = make_node<MulBackward0>({&a, &b});
  if (n) {
    if (n->should_compute_output(1)) n->self_ = SavedVariable(a, false);
    if (n->should_compute_output(0)) n->other_ = SavedVariable(b, false);
  }
  Tensor out = binary_out(BinaryOp::Mul, a, b, 0.0, "mul");
  return with_history(out, n);
}

Tensor div(const Tensor& a, const Tensor& b) {
  auto n = make_node<DivBackward0>({&a, &b});
  if (n) {
    if (n->should_compute_output(1)) n->self_ = SavedVariable(a, false);
    n->other_ = SavedVariable(b, false);
  }
  DType dt = binary_result_type(a, b);
  if (!is_floating(dt)) dt = DType::Float32;  // true division
  Shape shape = broadcast_shapes(a.sizes(), b.sizes());
  Tensor out = make_tensor(shape, dt, "div");
  be().binary(BinaryOp::Div, out, expand_to(a, shape), expand_to(b, shape), 0.0);
  return with_history(out, n);
}

Tensor add(const Tensor& a, double s) {
  auto n = make_node<AddBackward1>({&a});
  Tensor out = unary_out(UnaryOp::AddScalar, a, s, scalar_result_type(a, s), "add");
  return with_history(out, n);
}

Tensor mul(const Tensor& a, double s) {
  auto n = make_node<MulBackward1>({&a});
  if (n) n->other = s;
  Tensor out = unary_out(UnaryOp::MulScalar, a, s, scalar_result_type(a, s), "mul");
  return with_history(out, n);
}

Tensor div(const Tensor& a, double s) {
  auto n = make_node<DivBackward1>({&a});
  if (n) n->other = s;
  DType dt = is_floating(a.dtype()) ? a.dtype() : DType::Float32;
  Tensor out = unary_out(UnaryOp::DivScalar, a, s, dt, "div");
  return with_history(out, n);
}

Tensor neg(const Tensor& a) {
  auto n = make_node<NegBackward0>({&a});
  Tensor out = unary_out(UnaryOp::Neg, a, 0.0, a.dtype(), "neg");
  return with_history(out, n);
}

Tensor& add_(Tensor& a, const Tensor& b, double alpha) {
  check_inplace(a);
  Shape shape = broadcast_shapes(a.sizes(), b.sizes());
  if (shape != a.sizes())
    throw std::invalid_argument("output with shape " + a.shape_string() + " doesn't match the broadcast shape " +
                                shape_str(shape));
  auto n = make_node<AddBackward0>({&a, &b});
  if (n) n->alpha = alpha;
  be().binary(BinaryOp::Add, a, a, expand_to(b, shape), alpha);
  a.bump_version();
  rebase(a, n);
  return a;
}

Tensor& div_(Tensor& a, const Tensor& b) {
  check_inplace(a);
  Shape shape = broadcast_shapes(a.sizes(), b.sizes());
  if (shape != a.sizes())
    throw std::invalid_argument("output with shape " + a.shape_string() + " doesn't match the broadcast shape " +
                                shape_str(shape));
  auto n = make_node<DivBackward0>({&a, &b});
  if (n) {
    // other's gradient reads self as it was: autograd saves original_self, a clone made first
    if (n->should_compute_output(1)) {
      NoGradGuard ng;
      n->self_ = SavedVariable(a.clone(), false);
    }
    n->other_ = SavedVariable(b, false);
  }
  be().binary(BinaryOp::Div, a, a, expand_to(b, shape), 0.0);
  a.bump_version();
  rebase(a, n);
  return a;
}

Tensor& add_(Tensor& a, double s) {
  check_inplace(a);
  auto n = make_node<AddBackward1>({&a});
  be().unary(UnaryOp::AddScalar, a, a, s);
  a.bump_version();
  rebase(a, n);
  return a;
}

Tensor& mul_(Tensor& a, const Tensor& b) {
  check_inplace(a);
  if (GradMode::is_enabled() && (a.requires_grad() || b.requires_grad()))
    throw std::runtime_error("mul_ with a tensor operand under autograd is not supported; use mul()");
  Shape shape = broadcast_shapes(a.sizes(), b.sizes());
  if (shape != a.sizes())
    throw std::invalid_argument("output with shape " + a.shape_string() + " doesn't match the broadcast shape " +
                                shape_str(shape));
  be().binary(BinaryOp::Mul, a, a, expand_to(b, shape), 0.0);
  a.bump_version();
  return a;
}

Tensor& mul_(Tensor& a, double s) {
  check_inplace(a);
  auto n = make_node<MulBackward1>({&a});
  if (n) n->other = s;
  be().unary(UnaryOp::MulScalar, a, a, s);
  a.bump_version();
  rebase(a, n);
  return a;
}

Tensor& div_(Tensor& a, double s) {
  check_inplace(a);
  auto n = make_node<DivBackward1>({&a});
  if (n) n->other = s;
  be().unary(UnaryOp::DivScalar, a, a, s);
  a.bump_version();
  rebase(a, n);
  return a;
}

Tensor pow(const Tensor& a_in, double exponent) {
  // Autocast lists pow as fp32: a half input is cast to float32, and the copy is what is saved
  Tensor a = autocast_fp32(a_in);
  AutocastExcludeGuard ex;
  auto n = make_node<PowBackward0>({&a});
  if (n) {
    n->self_ = SavedVariable(a, false);
    n->exponent = exponent;
  }
  Tensor out = unary_out(UnaryOp::PowScalar, a, exponent, scalar_result_type(a, exponent), "pow");
  return with_history(out, n);
}

Tensor rsqrt(const Tensor& a) {
  auto n = make_node<RsqrtBackward0>({&a});
  Tensor out = unary_out(UnaryOp::Rsqrt, a, 0.0, is_floating(a.dtype()) ? a.dtype() : DType::Float32, "rsqrt");
  if (n) {
    set_history(out, n);
    n->result_ = SavedVariable(out, true);
  }
  return out;
}

Tensor silu(const Tensor& a) {
  auto n = make_node<SiluBackward0>({&a});
  if (n) n->self_ = SavedVariable(a, false);
  Tensor out = unary_out(UnaryOp::Silu, a, 0.0, a.dtype(), "silu");
  return with_history(out, n);
}

Tensor tanh(const Tensor& a) {
  auto n = make_node<TanhBackward0>({&a});
  Tensor out = unary_out(UnaryOp::Tanh, a, 0.0, is_floating(a.dtype()) ? a.dtype() : DType::Float32, "tanh");
  if (n) {
    set_history(out, n);
    n->result_ = SavedVariable(out, true);
  }
  return out;
}

Tensor sqrt(const Tensor& a) {
  if (any_requires_grad({&a})) throw std::runtime_error("sqrt under autograd is not supported by this engine");
  return unary_out(UnaryOp::Sqrt, a, 0.0, is_floating(a.dtype()) ? a.dtype() : DType::Float32, "sqrt");
}

Tensor& lerp_(Tensor& a, const Tensor& b, double w) {
  check_inplace(a);
  be().binary(BinaryOp::Lerp, a, a, expand_to(b, a.sizes()), w);
  a.bump_version();
  return a;
}

Tensor& addcmul_(Tensor& a, const Tensor& b, const Tensor& c, double v) {
  check_inplace(a);
  be().ternary(TernaryOp::Addcmul, a, a, expand_to(b, a.sizes()), expand_to(c, a.sizes()), v);
  a.bump_version();
  return a;
}

Tensor& addcdiv_(Tensor& a, const Tensor& b, const Tensor& c, double v) {
  check_inplace(a);
  be().ternary(TernaryOp::Addcdiv, a, a, expand_to(b, a.sizes()), expand_to(c, a.sizes()), v);
  a.bump_version();
  return a;
}

}  // namespace vramlab::engine
