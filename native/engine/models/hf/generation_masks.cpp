#include "engine/models/hf/generation_masks.h"

#include "engine/core/alloc_tag.h"
#include "engine/core/grad_mode.h"
#include "engine/ops/common.h"

namespace vramlab::engine::hf {

void sdpa_mask_skipped(int64_t B, int64_t kv) {
  NoGradGuard ng;
  CategoryScope cs(Category::Attention);
  Tensor padding_mask = bool_tensor(B * kv, "_to_copy");
  // fast_all(padding_mask): tensor.sum() == tensor.numel()
  Tensor s = make_tensor({}, DType::Int64, "sum");
  make_tensor({B, kv}, DType::Int64, "_to_copy");  // the sum's int64 copy, freed at once
  Tensor eq = bool_tensor(1, "eq");
  s.reset();
  eq.reset();
}

WindowSizes window_mask_sizes(int64_t past, int64_t q, int64_t window) {
  if (past >= window) return {window - 1 + q, past - window + 1};
  return {past + q, 0};
}

namespace {
Tensor int64(const Shape& s, const char* op) { return make_tensor(s, DType::Int64, op); }
// torch.arange(n) + offset: the range, then the sum (the range freed)
Tensor offset_range(int64_t n) {
  Tensor r = int64({n}, "arange");
  return int64({n}, "add");
}
}  // namespace

void and_padding_mask(Tensor& result, int64_t B, int64_t q, int64_t kv) {
  Tensor bi = int64({B, kv}, "index"), ki = int64({B, kv}, "index");
  Tensor padded = bool_tensor(B * kv, "index");
  bi.reset();
  ki.reset();
  Tensor next = bool_tensor(B * q * kv, "bitwise_and");
  padded.reset();
  result = next;
}

Tensor sdpa_sliding_mask(int64_t B, int64_t L, int64_t q, int64_t kv, int64_t kv_offset) {
  (void)kv_offset;  // the values, not the sizes
  NoGradGuard ng;
  CategoryScope cs(Category::Attention);
  Tensor padding_mask = bool_tensor(B * L, "_to_copy");
  if (L > kv) {
    // _ignore_causal_mask_sdpa: padding_mask[:, torch.arange(kv) + kv_offset], then False (the
    // window masks something); both freed when it returns
    Tensor idx = offset_range(kv);
    Tensor picked = bool_tensor(B * kv, "index");
    picked.reset();
    idx.reset();
  }
  Tensor mask;
  {
    Tensor batch_arange = int64({B}, "arange"), head_arange = int64({1}, "arange");
    Tensor q_arange = offset_range(q), kv_arange = offset_range(kv);
    // and_masks(and_masks(sliding_window_overlay(window), causal_mask_function), padding):
    // each and_mask starts from a bool scalar of ones and rebinds its result per function
    Tensor result = bool_tensor(1, "new_ones");
    Tensor inner = bool_tensor(1, "new_ones");
    {
      Tensor shifted = int64({q}, "sub");  // q_idx - sliding_window
      Tensor overlay = bool_tensor(q * kv, "gt");
      shifted.reset();
      Tensor next = bool_tensor(q * kv, "bitwise_and");
      overlay.reset();
      inner = next;
    }
    {
      Tensor causal = bool_tensor(q * kv, "le");
      Tensor next = bool_tensor(q * kv, "bitwise_and");
      causal.reset();
      inner = next;
    }
    {
      Tensor next = bool_tensor(q * kv, "bitwise_and");
      inner.reset();
      result = next;
    }
    and_padding_mask(result, B, q, kv);
    mask = result;
    // sdpa_mask's locals go in the order the frame holds them
    batch_arange.reset();
    head_arange.reset();
    q_arange.reset();
    kv_arange.reset();
  }
  return mask;  // (B, 1, q, kv) bool, as causal_bool_mask's (its bytes only)
}

}  // namespace vramlab::engine::hf
