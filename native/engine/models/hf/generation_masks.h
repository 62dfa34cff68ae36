#pragma once
// The masks of masking_utils (transformers 5.17) under generate() with sdpa attention.
#include <cstdint>

#include "engine/core/tensor.h"

namespace vramlab::engine::hf {

// create_causal_mask / create_sliding_window_causal_mask when SDPA's own causal flag serves
// (one query, or as many queries as keys, and no padding; a window, if any, not yet reached):
// _preprocess_mask_arguments' attention_mask.to(torch.bool) (batch, kv), then
// _ignore_causal_mask_sdpa's fast_all (a sum over an int64 copy, == numel); no mask returned,
// the bool copy freed when the function returns.
void sdpa_mask_skipped(int64_t batch, int64_t kv);

// create_sliding_window_causal_mask once the window masks something (kv >= window): the bool
// copy of generate()'s mask (batch, mask_len), its columns of the cache window picked when the
// mask is longer (arange(kv) + kv_offset), then sdpa_mask's index ranges and
// and_masks(and_masks(sliding_window_overlay, causal), padding_mask_function) step by step.
// Returns the (batch, 1, q, kv) bool mask.
Tensor sdpa_sliding_mask(int64_t batch, int64_t mask_len, int64_t q, int64_t kv, int64_t kv_offset);

// DynamicSlidingWindowLayer (cache_utils.py) for the sizes of a layer's mask: past tokens seen,
// q new ones. kv_length and kv_offset as get_mask_sizes returns them.
struct WindowSizes {
  int64_t kv, offset;
};
WindowSizes window_mask_sizes(int64_t past, int64_t q, int64_t window);

// sdpa_mask's last and_mask, padding_mask_function: padding_mask[batch_idx, kv_idx] with both
// indices broadcast to (batch, 1, 1, kv) int64, and-ed into `result` (batch, 1, q, kv).
void and_padding_mask(Tensor& result, int64_t batch, int64_t q, int64_t kv);

}  // namespace vramlab::engine::hf
