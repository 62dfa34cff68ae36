#include "engine/models/transformer_common.h"

#include "engine/core/alloc_tag.h"
#include "engine/ops/ops.h"

namespace vramlab::engine {

Tensor lm_loss(const Tensor& logits, const Batch& b) {
  // F.cross_entropy(y.view(-1, y.size(-1)), target.view(-1))
  CategoryScope cs(Category::Logits);
  return cross_entropy(logits.view({-1, logits.size(-1)}), b.target.view({-1}));
}

void freeze_parameters(const Module& m, const std::function<bool(const std::string&)>& frozen) {
  for (auto& [name, p] : m.named_parameters())
    if (frozen(name)) {
      Tensor t = p;
      t.requires_grad_(false);
    }
}

}  // namespace vramlab::engine
