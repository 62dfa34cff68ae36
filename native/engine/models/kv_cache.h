#pragma once
// A KV cache per attention layer, the two ways the fine-tuning protocol keeps one:
// dynamic (Hugging Face's default: each step concatenates the new keys/values onto
// the old, allocating a longer tensor and freeing the shorter) or static (preallocated
// for prompt + new tokens in the compute dtype and written in place).
#include <cstdint>
#include <utility>
#include <vector>

#include "engine/core/tensor.h"

namespace vramlab::engine {

struct KvCache {
  struct Layer {
    Tensor k, v;
  };
  bool is_static = false;
  bool copy_first = false;  // Hugging Face's DynamicLayer starts from an empty tensor: the first update copies
  int64_t max_len = 0;
  std::vector<Layer> layers;

  KvCache(size_t n_layers, bool static_cache, int64_t max_len_)
      : is_static(static_cache), max_len(max_len_), layers(n_layers) {}
  // Stores (batch, kv_heads, T, head_dim) keys/values at position `pos` of layer `i`
  // and returns the keys/values of positions [0, pos + T).
  std::pair<Tensor, Tensor> update(size_t i, const Tensor& k, const Tensor& v, int64_t pos);
};

}  // namespace vramlab::engine
