#include "engine/nn/sequential.h"

namespace vramlab::engine {

Sequential::Sequential(std::vector<std::shared_ptr<Module>> mods) {
  for (auto& m : mods) push_back(std::move(m));
}

void Sequential::push_back(std::shared_ptr<Module> m) {
  std::string name = std::to_string(children_.size());
  register_module(name, std::move(m));
}

Tensor Sequential::forward(const Tensor& x) {
  Tensor h = x;
  for (auto& [n, m] : children_) h = (*m)(h);
  return h;
}

}  // namespace vramlab::engine
