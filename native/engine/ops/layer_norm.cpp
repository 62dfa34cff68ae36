// layer_norm over the last dim (native_layer_norm): output like the input, mean and
// rstd per row in the accumulate type (float for half types); the node saves input,
// weight, bias, mean and rstd. Autocast runs it in float32 (its fp32 list). The
// backward allocates dX, dgamma, dbeta; with many rows and a narrow row, CUDA first
// sums gamma/beta partials per block (LayerNormKernel.cu), which shows as two
// temporaries and a column sum.
#include "engine/autocast/autocast.h"
#include "engine/ops/common.h"

namespace vramlab::engine {

namespace {

DType acc_dtype(DType t) { return t == DType::Float16 || t == DType::BFloat16 ? DType::Float32 : t; }

struct NativeLayerNormBackward0 : Node {
  SavedVariable bias_, input_, weight_, result1_, result2_;  // released in this (codegen's) order
  bool has_weight = false, has_bias = false;
  std::string name() const override { return "NativeLayerNormBackward0"; }
  TensorList apply(TensorList& g) override {
    if (!g[0].defined()) return undefined_grads(3);
    // The generated apply unpacks every saved variable, bias included, in this order; under
    // checkpointing unpacking is what lets the recomputed tensors go when apply returns.
    Tensor b = bias_.unpack(this), x = input_.unpack(this), w = weight_.unpack(this);
    Tensor mean = result1_.unpack(this), rstd = result2_.unpack(this);
    Tensor dy = g[0].contiguous();
    Tensor xc = x.contiguous();
    TensorList r(3);
    if (should_compute_output(0)) r[0] = make_tensor(x.sizes(), x.dtype(), "native_layer_norm_backward");
    const int64_t n = x.size(-1), m = x.numel() / std::max<int64_t>(n, 1);
    const bool need_w = has_weight && should_compute_output(1), need_b = has_bias && should_compute_output(2);
    if (need_w) r[1] = make_tensor(w.sizes(), w.dtype(), "native_layer_norm_backward");
    if (need_b) r[2] = make_tensor({n}, w.defined() ? w.dtype() : x.dtype(), "native_layer_norm_backward");
    be().layer_norm_backward(r[0].defined() ? &r[0] : nullptr, need_w ? &r[1] : nullptr, need_b ? &r[2] : nullptr, dy,
                             xc, mean, rstd, w.defined() ? &w : nullptr);
    auto& ctx = current_context();
    if ((need_w || need_b) && ctx.backend().models_cuda() && m > 64 * 1024 && n / 32 < ctx.sm_count() / 2) {
      // Partial sums per block of 32 rows (grid capped at 32768 blocks), then .sum(0).
      int64_t blocks_x = (n + 31) / 32, blocks_y = std::min<int64_t>((m + 31) / 32, (64 * 1024 / 2) / blocks_x);
      Tensor gb = need_w ? make_tensor({blocks_y, n}, r[1].dtype(), "native_layer_norm_backward") : Tensor();
      Tensor bb = need_b ? make_tensor({blocks_y, n}, r[2].dtype(), "native_layer_norm_backward") : Tensor();
      NoGradGuard ng;
      if (need_w) r[1] = sum(gb, {0});
      if (need_b) r[2] = sum(bb, {0});
    }
    return r;
  }
  void release_variables() override {
    bias_.reset_data();
    input_.reset_data();
    weight_.reset_data();
    result1_.reset_data();
    result2_.reset_data();
  }
};

}  // namespace

Tensor layer_norm(const Tensor& x_in, const Tensor& w_in, const Tensor& b_in, double eps) {
  // Autocast's fp32 policy casts the last argument first: bias, weight, input.
  Tensor b = autocast_fp32(b_in), w = autocast_fp32(w_in), x = autocast_fp32(x_in);
  AutocastExcludeGuard ex;
  if (x.dim() < 1) throw std::invalid_argument("layer_norm: input must have at least one dimension");
  const int64_t n = x.size(-1), m = x.numel() / std::max<int64_t>(n, 1);
  if (w.defined() && (w.dim() != 1 || w.size(0) != n))
    throw std::invalid_argument("Given normalized_shape=[" + std::to_string(n) + "], expected weight of shape [" +
                                std::to_string(n) + "] but got " + w.shape_string());
  auto node = make_node<NativeLayerNormBackward0>({&x, &w, &b});
  Tensor xc = x.contiguous();
  Tensor y = make_tensor(x.sizes(), x.dtype(), "native_layer_norm");
  Tensor mean = make_tensor({m}, acc_dtype(x.dtype()), "native_layer_norm");
  Tensor rstd = make_tensor({m}, acc_dtype(x.dtype()), "native_layer_norm");
  be().layer_norm(y, mean, rstd, xc, w.defined() ? &w : nullptr, b.defined() ? &b : nullptr, eps);
  if (node) {
    node->input_ = SavedVariable(x, false);
    node->weight_ = SavedVariable(w, false);
    node->bias_ = SavedVariable(b, false);
    node->has_weight = w.defined();
    node->has_bias = b.defined();
    // mean and rstd are outputs 1 and 2 of native_layer_norm, not differentiable.
    node->result1_ = SavedVariable(mean, false);
    node->result2_ = SavedVariable(rstd, false);
  }
  return with_history(y, node);
}

}  // namespace vramlab::engine
