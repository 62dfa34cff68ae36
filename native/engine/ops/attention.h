#pragma once
// Scaled-dot-product attention and the fused backend PyTorch would run it on.
#include "engine/core/tensor.h"

namespace vramlab::engine {

enum class SdpaBackend : uint8_t { Cudnn, Flash, Efficient };
const char* sdpa_backend_name(SdpaBackend b);
// The backend torch.nn.functional.scaled_dot_product_attention picks for these inputs on
// the current device (throws for shapes only the unmodelled math fallback takes).
SdpaBackend sdpa_backend_for(const Tensor& q, const Tensor& k, const Tensor& v, bool causal, double dropout_p = 0);
// q, k, v: (batch, heads, seq, head_dim); scale 1/sqrt(head_dim); no mask, no dropout.
Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v, bool is_causal);
// With enable_gqa (k, v with fewer heads than q, as Hugging Face passes it when there is
// no mask) and a scale (0: 1/sqrt(head_dim)).
Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v, bool is_causal, bool enable_gqa,
                                    double scale);
// With dropout_p > 0 (training): the backend PyTorch picks without dropout (cuDNN for half
// types on sm90, memory-efficient for float32), its philox seed and offset on the device.
Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v, bool is_causal, bool enable_gqa,
                                    double scale, double dropout_p);

// With a boolean attention mask of (batch, 1, L, S) (Hugging Face's sliding-window mask past
// the window; no enable_gqa: HF repeats k and v itself then): the mask converted to an
// additive one in q's dtype and kept for backward: cuDNN's path (half types, sm90/100) or
// memory-efficient attention's (lengths multiples of 16: no padded bias).
Tensor scaled_dot_product_attention_masked(const Tensor& q, const Tensor& k, const Tensor& v, int64_t batch,
                                           double scale);

}  // namespace vramlab::engine
