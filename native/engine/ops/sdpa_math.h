#pragma once
// PyTorch's math fallback for scaled_dot_product_attention (_scaled_dot_product_attention_math,
// aten/src/ATen/native/transformers/attention.cpp): composite ops under autograd, taken on
// CUDA when no fused kernel accepts the inputs (here: float32 with enable_gqa, which
// memory-efficient attention does not take). The simulated device only.
#include "engine/core/tensor.h"

namespace vramlab::engine {

// q (B, H, L, D), k/v (B, KV, S, D); scale > 0. Returns the output (B, H, L, Dv).
Tensor sdpa_math(const Tensor& q, const Tensor& k, const Tensor& v, bool is_causal, bool enable_gqa, double scale,
                 double dropout_p);

}  // namespace vramlab::engine
