#pragma once
// Activation modules (nn.ReLU, nn.GELU): stateless.
#include "engine/nn/module.h"

namespace vramlab::engine {

class ReLU : public Module {
 public:
  std::string type_name() const override { return "ReLU"; }
  Tensor forward(const Tensor& x) override;
};

class GELU : public Module {
 public:
  explicit GELU(bool tanh = false) : tanh_(tanh) {}
  std::string type_name() const override { return "GELU"; }
  Tensor forward(const Tensor& x) override;

 private:
  bool tanh_;
};

}  // namespace vramlab::engine
