// Eager attention (eager.h). Python lifetimes as elsewhere in hf/: a local lives until it
// is rebound or its function returns; what autograd saves lives until backward.
#include "engine/models/hf/eager.h"

#include "engine/core/grad_mode.h"
#include "engine/models/hf/generation_masks.h"
#include "engine/ops/bmm.h"
#include "engine/ops/common.h"
#include "engine/ops/dropout.h"
#include "engine/ops/softmax.h"

namespace vramlab::engine::hf {

namespace {

// torch.arange(n, device=device) + offset: the range, then the sum (the range freed)
Tensor offset_range(int64_t n) {
  Tensor r = arange(0, n);
  return add(r, 0.0);
}

}  // namespace

// repeat_kv: hidden[:, :, None].expand(B, KV, n_rep, T, D).reshape(B, KV * n_rep, T, D)
Tensor repeat_kv(const Tensor& x, int64_t n_rep) {
  if (n_rep == 1) return x;
  const int64_t B = x.size(0), KV = x.size(1), T = x.size(2), D = x.size(3);
  return x.unsqueeze(2).expand({B, KV, n_rep, T, D}).reshape({B, KV * n_rep, T, D});
}

Tensor eager_causal_mask(int64_t B, int64_t T, DType dtype, int64_t window) {
  Tensor mask = causal_bool_mask(B, T, window);
  NoGradGuard ng;
  CategoryScope cs(Category::Attention);
  // eager_mask: torch.where(mask, torch.tensor(0.0, dtype=dtype), min_dtype); where's Scalar
  // overload puts min_dtype on the device too, freed first
  Tensor zero = make_tensor({}, dtype, "torch.tensor");
  Tensor other = make_tensor({}, dtype, "scalar_tensor");
  Tensor out = make_tensor({B, 1, T, T}, dtype, "where");
  other.reset();
  zero.reset();
  return out;
}

Tensor causal_bool_mask(int64_t B, int64_t T, int64_t window) {
  NoGradGuard ng;
  CategoryScope cs(Category::Attention);
  Tensor mask;
  {
    // sdpa_mask(allow_is_causal_skip=False): its index ranges live until it returns
    Tensor batch_arange = arange(0, B), head_arange = arange(0, 1);
    Tensor q_arange = offset_range(T), kv_arange = offset_range(T);
    if (window <= 0) {
      mask = bool_tensor(T * T, "le");  // causal_mask_function: kv_idx <= q_idx, (1, 1, T, T)
    } else {
      // and_masks(sliding_window_overlay(w), causal_mask_function): result = new_ones((), bool),
      // then result = result & f(...) per function (f's output freed, then the old result)
      Tensor result = bool_tensor(1, "new_ones");
      Tensor overlay;
      {
        Tensor shifted = make_tensor({T}, DType::Int64, "sub");  // q_idx - sliding_window
        overlay = bool_tensor(T * T, "gt");                      // kv_idx > ...
      }
      Tensor next = bool_tensor(T * T, "bitwise_and");
      overlay.reset();
      result = next;
      Tensor causal = bool_tensor(T * T, "le");
      next = bool_tensor(T * T, "bitwise_and");
      causal.reset();
      result = next;
      next.reset();
      mask = result;
    }
    // .expand(batch_size, -1, q_length, kv_length): a view. At return CPython clears the
    // locals in slot order: the index ranges in the order they were made
    batch_arange.reset();
    head_arange.reset();
    q_arange.reset();
    kv_arange.reset();
  }
  return mask;
}

Tensor eager_generation_mask(int64_t B, int64_t T, int64_t kv, DType dtype) {
  NoGradGuard ng;
  CategoryScope cs(Category::Attention);
  // _preprocess_mask_arguments: generate()'s 2-D attention_mask .to(torch.bool)
  Tensor padding_mask = bool_tensor(B * kv, "_to_copy");
  Tensor mask;
  {
    // sdpa_mask(allow_is_causal_skip=False) with and_masks(causal, padding_mask_function)
    Tensor batch_arange = arange(0, B), head_arange = arange(0, 1);
    Tensor q_arange = offset_range(T), kv_arange = offset_range(kv);
    Tensor result = bool_tensor(1, "new_ones");
    {
      Tensor causal = bool_tensor(T * kv, "le");  // (1, 1, T, kv)
      Tensor next = bool_tensor(T * kv, "bitwise_and");
      causal.reset();
      result = next;
    }
    and_padding_mask(result, B, T, kv);
    mask = result;
    // sdpa_mask's locals go in the order the frame holds them
    batch_arange.reset();
    head_arange.reset();
    q_arange.reset();
    kv_arange.reset();
  }
  // torch.where(mask, torch.tensor(0.0, dtype=dtype), min_dtype): the Python float becomes a
  // device scalar too (generate()'s trace)
  Tensor zero = make_tensor({}, dtype, "torch.tensor"), low = make_tensor({}, dtype, "scalar_tensor");
  Tensor out = make_tensor({B, 1, T, kv}, dtype, "where");
  zero.reset();
  low.reset();
  return out;
}

std::pair<Tensor, Tensor> eager_attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask,
                                          const EagerAttention& e, bool contiguous) {
  const int64_t n_rep = q.size(1) / k.size(1);
  Tensor key_states = repeat_kv(k, n_rep);
  Tensor value_states = repeat_kv(v, n_rep);
  Tensor w;
  {
    Tensor scores = batched_matmul(q, key_states.transpose(2, 3));
    w = mul(scores, e.scaling);
  }
  if (e.softcap > 0) {
    w = div(w, e.softcap);
    w = engine::tanh(w);
    w = mul(w, e.softcap);
  }
  if (mask.defined()) w = add(w, mask);
  if (e.upcast) {
    // nn.functional.softmax(attn_weights, dim=-1, dtype=torch.float32).to(query.dtype)
    // (the float32 result goes with the call, before the rebinding frees the old weights)
    Tensor s = softmax(w, -1, DType::Float32);
    Tensor cast = s.to(q.dtype());
    s.reset();
    w = cast;
  } else {
    // nn.functional.softmax(attn_weights, dim=-1); attn_weights.type(value.dtype)
    w = softmax(w, -1);
    w = w.to(v.dtype());
  }
  w = dropout(w, e.dropout, e.dropout > 0);
  Tensor o = batched_matmul(w, value_states);
  o = o.transpose(1, 2);
  if (contiguous) o = o.contiguous();
  return {o, w};
}

}  // namespace vramlab::engine::hf
