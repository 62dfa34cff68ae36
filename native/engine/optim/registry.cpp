// The optimizers, one line each: an optimizer is its own file here plus this line (and
// its description in main/contract/catalogue/optimizers/). Arguments arrive with the
// contract's defaults filled in.
#include <stdexcept>

#include "engine/optim/optimizer.h"
#include "engine/spec/run_spec.h"

namespace vramlab::engine {

namespace {

std::unique_ptr<Optimizer> make_sgd(const KindArgs& a, std::vector<Tensor> params) {
  SGDOptions o;
  o.lr = a.f("lr");
  o.momentum = a.f("momentum");
  o.weight_decay = a.f("weight_decay");
  o.nesterov = a.has("nesterov") && a.b("nesterov");
  o.foreach = a.b("foreach");
  return std::make_unique<SGD>(std::move(params), o);
}

std::unique_ptr<Optimizer> make_adam(const KindArgs& a, std::vector<Tensor> params) {
  AdamOptions o;
  o.lr = a.f("lr");
  o.weight_decay = a.f("weight_decay");
  o.foreach = a.b("foreach");
  return std::make_unique<Adam>(std::move(params), o);
}

std::unique_ptr<Optimizer> make_adamw(const KindArgs& a, std::vector<Tensor> params) {
  AdamOptions o = adamw_options(a.f("lr"), a.f("weight_decay"));
  o.foreach = a.b("foreach");
  return std::make_unique<Adam>(std::move(params), o);
}

std::unique_ptr<Optimizer> make_none(const KindArgs&, std::vector<Tensor>) { return nullptr; }

struct OptimizerEntry {
  const char* kind;
  std::unique_ptr<Optimizer> (*make)(const KindArgs&, std::vector<Tensor>);
};

constexpr OptimizerEntry kOptimizers[] = {
    {"none", make_none},
    {"sgd", make_sgd},
    {"adam", make_adam},
    {"adamw", make_adamw},
};

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
