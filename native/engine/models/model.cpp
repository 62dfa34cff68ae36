#include "engine/models/model.h"

#include <stdexcept>

namespace vramlab::engine {

void Model::apply_finetune(const FinetuneSpec& f) {
  if (f.method != "full")
    throw std::invalid_argument("finetune method \"" + f.method + "\" applies to the transformer families, not " +
                                type_name());
}

Tensor Model::forward_cached(const Tensor&, KvCache&, int64_t) {
  throw std::invalid_argument("mode \"generate\" needs a transformer family; " + type_name() + " has no KV cache");
}

}  // namespace vramlab::engine
