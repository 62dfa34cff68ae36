#include "engine/models/transformer_common.h"

#include <stdexcept>

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

void apply_finetune_plan(Module& root, const FinetuneSpec& f, const FinetunePlan& plan) {
  if (f.method == "full") return;
  if (f.method == "freeze") {
    if (f.blocks < 0 || f.blocks > plan.depth)
      throw std::invalid_argument("finetune.blocks must be from 0 to depth (" + std::to_string(plan.depth) + ")");
    freeze_parameters(root, [&](const std::string& n) {
      for (auto& p : plan.always_frozen)
        if (n.rfind(p, 0) == 0) return true;
      if (n.rfind(plan.block_prefix, 0) == 0) return std::stoll(n.substr(plan.block_prefix.size())) < f.blocks;
      return false;
    });
    return;
  }
  if (f.method != "lora") throw std::invalid_argument("unknown finetune method \"" + f.method + "\"");
  freeze_parameters(root, [](const std::string&) { return true; });
  for (const LoraSite& s : plan.lora_sites(f.targets)) {
    std::shared_ptr<Linear> base;
    for (auto& [n, c] : s.owner->children())
      if (n == s.child) base = std::dynamic_pointer_cast<Linear>(c);
    if (!base) throw std::logic_error("LoRA site " + s.child + " is not a Linear");
    s.owner->replace_child(s.child, plan.wrap(base));
  }
  if (plan.after) plan.after();
  root.set_path("");
}

}  // namespace vramlab::engine
