#pragma once
// attn_implementation "eager" (transformers 5.17): the float masks masking_utils.eager_mask
// materialises, and eager_attention_forward as the modeling files write it.
#include <utility>

#include "engine/core/tensor.h"

namespace vramlab::engine::hf {

// create_causal_mask / create_sliding_window_causal_mask (window > 0) for eager attention in
// training (no padding mask, no cache): sdpa_mask's index ranges and boolean mask, then
// torch.where into a (B, 1, T, T) mask of `dtype` (0 or its lowest value).
Tensor eager_causal_mask(int64_t batch, int64_t T, DType dtype, int64_t window);
// The same under generate() (a cache, generate()'s 2-D attention mask of ones): the padding
// mask as bool and combined with the causal one, (B, 1, T, kv) in `dtype`.
Tensor eager_generation_mask(int64_t batch, int64_t T, int64_t kv, DType dtype);
// sdpa_mask's boolean (1, 1, T, T) mask (expanded to the batch as a view), as sdpa gets it
// when a sliding window masks something (T >= window); causal only for window 0.
Tensor causal_bool_mask(int64_t batch, int64_t T, int64_t window);
// repeat_kv (the copy HF makes of k and v for eager attention, and for sdpa with a mask).
Tensor repeat_kv(const Tensor& x, int64_t n_rep);

struct EagerAttention {
  double scaling = 1.0;
  double softcap = 0;  // Gemma-2's attn_logit_softcapping (0: none)
  double dropout = 0;  // p, 0 when not training
  bool upcast = true;  // softmax(dtype=float32).to(query.dtype) (Llama's) or GPT-2's softmax().type(value.dtype)
};

// eager_attention_forward on q (B, H, T, D), k/v (B, KV, T, D): repeat_kv, the scores, the
// mask added, softmax, dropout, the product. Returns (attn_output, attn_weights):
// attn_output.transpose(1, 2) — made contiguous when `contiguous` (Llama's), a view
// otherwise (GPT-2's) — and the weights the caller keeps until its forward returns.
std::pair<Tensor, Tensor> eager_attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask,
                                          const EagerAttention& e, bool contiguous);

}  // namespace vramlab::engine::hf
