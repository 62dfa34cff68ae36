// The optimizers, one name each: an optimizer is its own file here, defining its class and
// `make_<kind>(const KindArgs&, std::vector<Tensor>)`, plus its name in VRAMLAB_OPTIMIZERS
// (and its description in main/contract/catalogue/optimizers/). Arguments arrive with the
// contract's defaults filled in.
#include <stdexcept>

#include "engine/optim/optimizer.h"
#include "engine/spec/run_spec.h"

// Registration: one X(kind) per optimizer.
#define VRAMLAB_OPTIMIZERS(X) X(none) X(sgd) X(adam) X(adamw)

namespace vramlab::engine {

#define VRAMLAB_DECLARE_OPTIMIZER(kind) \
  std::unique_ptr<Optimizer> make_##kind(const KindArgs& args, std::vector<Tensor> params);
VRAMLAB_OPTIMIZERS(VRAMLAB_DECLARE_OPTIMIZER)
#undef VRAMLAB_DECLARE_OPTIMIZER

std::unique_ptr<Optimizer> make_none(const KindArgs&, std::vector<Tensor>) { return nullptr; }

namespace {

struct OptimizerEntry {
  const char* kind;
  std::unique_ptr<Optimizer> (*make)(const KindArgs&, std::vector<Tensor>);
};

#define VRAMLAB_OPTIMIZER_ENTRY(kind) {#kind, make_##kind},
constexpr OptimizerEntry kOptimizers[] = {VRAMLAB_OPTIMIZERS(VRAMLAB_OPTIMIZER_ENTRY)};
#undef VRAMLAB_OPTIMIZER_ENTRY

}  // namespace

std::unique_ptr<Optimizer> make_optimizer(const KindArgs& spec, std::vector<Tensor> params) {
  for (const auto& o : kOptimizers)
    if (spec.kind == o.kind) return o.make(spec, std::move(params));
  std::string known;
  for (const auto& o : kOptimizers) known += std::string(known.empty() ? "" : ", ") + o.kind;
  throw std::invalid_argument("unknown optimizer \"" + spec.kind + "\" (expected " + known + ")");
}

std::vector<std::string> optimizer_kinds() {
  std::vector<std::string> out;
  for (const auto& o : kOptimizers) out.push_back(o.kind);
  return out;
}

}  // namespace vramlab::engine
