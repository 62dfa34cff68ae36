#include "engine/models/kv_cache.h"

#include "engine/core/alloc_tag.h"
#include "engine/ops/ops.h"

namespace vramlab::engine {

std::pair<Tensor, Tensor> KvCache::update(size_t i, const Tensor& k, const Tensor& v, int64_t pos) {
  CategoryScope cs(Category::KvCache);
  Layer& l = layers.at(i);
  const int64_t T = k.size(2);
  if (is_static) {
    if (!l.k.defined()) {
      l.k = zeros({k.size(0), k.size(1), max_len, k.size(3)}, k.dtype());
      l.v = zeros({v.size(0), v.size(1), max_len, v.size(3)}, v.dtype());
    }
    Tensor ks = l.k.slice(2, pos, pos + T), vs = l.v.slice(2, pos, pos + T);
    copy_(ks, k);
    copy_(vs, v);
    return {l.k.slice(2, 0, pos + T), l.v.slice(2, 0, pos + T)};
  }
  if (l.k.defined()) {
    l.k = cat({l.k, k}, 2);
    l.v = cat({l.v, v}, 2);
  } else if (copy_first) {
    l.k = cat({k}, 2);
    l.v = cat({v}, 2);
  } else {
    l.k = k;
    l.v = v;
  }
  return {l.k, l.v};
}

}  // namespace vramlab::engine
