#pragma once
// nn.LayerNorm over the last dim: weight ones, bias zeros, eps 1e-5.
#include "engine/nn/module.h"

namespace vramlab::engine {

class LayerNorm : public Module {
 public:
  explicit LayerNorm(int64_t dim, DType dtype = DType::Float32);
  std::string type_name() const override { return "LayerNorm"; }
  Tensor forward(const Tensor& x) override;
  Tensor weight, bias;
};

}  // namespace vramlab::engine
