// Copies and dtype casts: clone/contiguous allocate, to() allocates only when the
// dtype changes (PyTorch returns self otherwise).
#include "engine/autocast/autocast.h"
#include "engine/ops/common.h"

namespace vramlab::engine {

namespace {

struct CloneBackward0 : Node {
  std::string name() const override { return "CloneBackward0"; }
  TensorList apply(TensorList& g) override { return {g[0]}; }
};

struct ToCopyBackward0 : Node {
  DType self_dtype = DType::Float32;
  std::string name() const override { return "ToCopyBackward0"; }
  TensorList apply(TensorList& g) override {
    if (!g[0].defined()) return undefined_grads(1);
    return {g[0].to(self_dtype)};  // _to_copy_backward
  }
};

}  // namespace

Tensor& copy_(Tensor& dst, const Tensor& src) {
  if (GradMode::is_enabled() && (src.requires_grad() || dst.requires_grad()))
    throw std::runtime_error("copy_ under autograd is not supported by this engine; wrap it in no_grad");
  Tensor s = expand_to(src, dst.sizes());
  be().unary(UnaryOp::Copy, dst, s, 0.0);
  dst.bump_version();
  return dst;
}

Tensor Tensor::clone() const {
  Tensor out = make_tensor(sizes(), dtype(), "clone");
  be().unary(UnaryOp::Copy, out, *this, 0.0);
  if (auto n = make_node<CloneBackward0>({this})) set_history(out, n);
  return out;
}

Tensor Tensor::contiguous() const {
  if (is_contiguous()) return *this;
  return clone();
}

Tensor Tensor::to(DType target) const {
  if (dtype() == target) return *this;
  if (requires_grad() && !is_floating(target))
    throw std::runtime_error("only Tensors of floating point dtype can require gradients");
  // _to_copy keeps the memory format (preserve_format): a dense tensor in another dimension
  // order (a transposed view) gets its strides, anything else contiguous ones
  Tensor out = make_tensor(sizes(), target, "_to_copy");
  if (!is_contiguous() && is_non_overlapping_and_dense()) {
    out.impl()->strides = strides();
    out.impl()->offset = 0;
  }
  be().unary(UnaryOp::Copy, out, *this, 0.0);
  if (is_floating(target)) {
    if (auto n = make_node<ToCopyBackward0>({this})) {
      n->self_dtype = dtype();
      set_history(out, n);
    }
  }
  return out;
}

}  // namespace vramlab::engine
