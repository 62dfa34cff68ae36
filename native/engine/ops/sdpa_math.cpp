// The math SDPA (sdpa_math.h), line by line: half inputs upcast to float32
// (allowFP16BF16ReductionMathSDP is off by default), q scaled by sqrt(scale) in its own layout, the causal mask
// made as ones(L, S).tril() and converted to an additive float mask, k and v repeated per
// query group (repeat_interleave: unsqueeze, expand, flatten — a copy), the scores from
// q @ (kᵀ * sqrt(scale)), the mask added in place, _safe_softmax, dropout, @ v. C++ locals
// go at return in reverse order of declaration.
#include "engine/ops/sdpa_math.h"

#include <cmath>
#include <stdexcept>

#include "engine/ops/bmm.h"
#include "engine/ops/common.h"
#include "engine/ops/dropout.h"
#include "engine/ops/softmax.h"

namespace vramlab::engine {

namespace {

bool half(DType t) { return t == DType::Float16 || t == DType::BFloat16; }

// _safe_softmax's derivative: _softmax_backward_data(grad, result, dim, self dtype)
struct SafeSoftmaxBackward0 : Node {
  SavedVariable result_;
  DType self_dtype{};
  std::string name() const override { return "SafeSoftmaxBackward0"; }
  TensorList apply(TensorList& g) override {
    if (!g[0].defined()) return undefined_grads(1);
    Tensor result = result_.unpack(this);
    // _softmax_backward_data on CUDA: grad_input, then the grad * output temporary
    Tensor grad_input = make_tensor(result.sizes(), self_dtype, "_softmax_backward_data");
    Tensor tmp = make_tensor(result.sizes(), result.dtype(), "mul");
    return {grad_input};
  }
  void release_variables() override { result_.reset_data(); }
};

// at::_safe_softmax(self, -1) as PyTorch 2.11 writes it: softmax, then rows that were all
// -inf set to 0 by where_out into the softmax's own output (no new block); its temporaries are
// the isneginf mask, the per-row all and the zero scalar (the -inf compared as a host scalar).
Tensor safe_softmax(const Tensor& self) {
  auto n = make_node<SafeSoftmaxBackward0>({&self});
  Tensor result;
  {
    NoGradGuard ng;
    Tensor out = softmax(self, -1);
    Tensor masked = bool_tensor(self.numel(), "isneginf");
    Tensor masked_rows = bool_tensor(self.numel() / self.size(-1), "all");
    Tensor zero = make_tensor({}, out.dtype(), "scalar_tensor");
    result = out;
  }
  if (n) {
    n->self_dtype = self.dtype();
    set_history(result, n);
    n->result_ = SavedVariable(result, true);
  }
  return result;
}

// repeat_interleave(x, n, dim=-3): x.unsqueeze(-2).expand(..., n, S, D).flatten(-4, -3)
Tensor repeat_heads(const Tensor& x, int64_t n) {
  const int64_t B = x.size(0), KV = x.size(1), S = x.size(2), D = x.size(3);
  return x.unsqueeze(2).expand({B, KV, n, S, D}).reshape({B, KV * n, S, D});
}

}  // namespace

Tensor sdpa_math(const Tensor& q, const Tensor& k, const Tensor& v, bool is_causal, bool enable_gqa, double scale,
                 double dropout_p) {
  if (current_context().backend().has_data())
    throw std::invalid_argument("scaled_dot_product_attention's math fallback runs on the simulated device only");
  const DType origin = q.dtype();
  Tensor query_acc = half(q.dtype()) ? q.to(DType::Float32) : q;
  Tensor key_acc = half(k.dtype()) ? k.to(DType::Float32) : k;
  Tensor value_acc = half(v.dtype()) ? v.to(DType::Float32) : v;
  Tensor attn_mask;
  const double sf = std::sqrt(scale);
  // query_acc * sf keeps query_acc's layout (TensorIterator): HF's rotary output is laid out
  // (B, T, H, D), so the scaled query is too and matmul's reshape below copies it
  const bool transposed = !query_acc.is_contiguous() && query_acc.transpose(1, 2).is_contiguous();
  Tensor query = transposed ? mul(query_acc.transpose(1, 2), sf).transpose(1, 2) : mul(query_acc, sf);
  if (is_causal) {
    NoGradGuard ng;
    const int64_t L = q.size(2), S = k.size(2);
    Tensor tril;
    {
      Tensor ones = bool_tensor(L * S, "ones");  // at::ones({L, S}, bool).tril()
      tril = bool_tensor(L * S, "tril");
    }
    // convert_boolean_attn_mask: where(mask, 0.0, scalar_tensor(-inf, dtype)); where's Scalar
    // overload puts the 0.0 on the device too, freed before the -inf
    Tensor neg_inf = make_tensor({}, query.dtype(), "scalar_tensor");
    {
      Tensor zero = make_tensor({}, query.dtype(), "scalar_tensor");
      attn_mask = make_tensor({L, S}, query.dtype(), "where");
    }
    neg_inf.reset();
  }
  // pre_process_group_query_attention_input: key's repeat, then value's
  const int64_t groups = q.size(1) / k.size(1);
  const bool repeat = enable_gqa && groups > 1;
  Tensor key_expanded = repeat ? repeat_heads(key_acc, groups) : key_acc;
  Tensor value_expanded = repeat ? repeat_heads(value_acc, groups) : value_acc;
  Tensor attn;
  {
    Tensor kt = mul(key_expanded.transpose(-2, -1), sf);
    attn = batched_matmul(query, kt);
  }
  if (attn_mask.defined()) add_(attn, attn_mask);
  attn = safe_softmax(attn);
  if (dropout_p > 0.0) attn = dropout(attn, dropout_p, true);
  // make_tuple(matmul(attn, v).to(origin), attn.to(origin)): GCC evaluates the second first
  Tensor attn_out = attn.to(origin);
  Tensor out = batched_matmul(attn, value_expanded).to(origin);
  // at return the locals go in reverse order of declaration (attn; the repeated key and
  // value, a tuple's elements in order; query; the mask; the upcast inputs), then the
  // caller's std::get<0> drops the tuple and with it the weights (attn itself in float32)
  attn.reset();
  key_expanded.reset();
  value_expanded.reset();
  query.reset();
  attn_mask.reset();
  value_acc.reset();
  key_acc.reset();
  query_acc.reset();
  attn_out.reset();
  return out;
}

}  // namespace vramlab::engine
