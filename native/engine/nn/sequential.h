#pragma once
// nn.Sequential: children "0", "1", ... run in order.
#include <memory>
#include <vector>

#include "engine/nn/module.h"

namespace vramlab::engine {

class Sequential : public Module {
 public:
  Sequential() = default;
  explicit Sequential(std::vector<std::shared_ptr<Module>> mods);
  std::string type_name() const override { return "Sequential"; }
  Tensor forward(const Tensor& x) override;
  void push_back(std::shared_ptr<Module> m);
  size_t size() const { return children_.size(); }
  std::shared_ptr<Module> at(size_t i) const { return children_.at(i).second; }
};

}  // namespace vramlab::engine
