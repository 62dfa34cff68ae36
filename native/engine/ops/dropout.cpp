// torch.nn.functional.dropout in training on CUDA: at::native_dropout (the fused kernel
// for 0 < p < 1), which makes the bool mask and then the output; autograd saves the mask
// (NativeDropoutBackward0: result1) and the backward writes one tensor like the gradient.
// p == 0 (or eval) returns the input itself, allocating nothing. On the data backends
// the mask is real (backend.h: dropout), the same bytes on cpu and cuda for one seed.
#include "engine/ops/dropout.h"

#include "engine/ops/common.h"

namespace vramlab::engine {

namespace {

struct NativeDropoutBackward0 : Node {
  SavedVariable result1_;
  double scale = 1;  // 1 / (1 - p)
  std::string name() const override { return "NativeDropoutBackward0"; }
  TensorList apply(TensorList& g) override {
    if (!g[0].defined()) return undefined_grads(1);
    // the mask unpacked first, as the generated node does (under checkpointing this is what
    // recomputes the segment), then native_dropout_backward: at::empty_like(grad), masked, scaled
    Tensor mask = result1_.unpack(this);
    Tensor out = make_tensor(g[0].sizes(), g[0].dtype(), "native_dropout_backward");
    if (out.has_data()) be().dropout_backward(out, g[0], mask, scale);
    return {out};
  }
  void release_variables() override { result1_.reset_data(); }
};

}  // namespace

Tensor dropout(const Tensor& x, double p, bool train) {
  if (!train || p == 0 || x.numel() == 0) return x;
  if (!(p > 0 && p < 1))
    throw std::invalid_argument("dropout probability has to be between 0 and 1, but got " + std::to_string(p));
  auto n = make_node<NativeDropoutBackward0>({&x});
  // the mask first (torch.bool: one byte an element; the engine has no bool dtype, so a
  // half tensor of half as many elements, which the allocator rounds the same), then the output
  const int64_t bytes = x.numel();
  Tensor mask = make_tensor({(bytes + 1) / 2}, DType::Float16, "native_dropout");
  Tensor out = make_tensor(x.sizes(), x.dtype(), "native_dropout");
  // data backends draw the mask from a counter-based generator (backend.h: dropout)
  if (out.has_data()) be().dropout(out, mask, x, p, current_context().next_seed());
  if (n) {
    n->result1_ = SavedVariable(mask, false);
    n->scale = 1.0 / (1.0 - p);
  }
  return with_history(out, n);
}

}  // namespace vramlab::engine
