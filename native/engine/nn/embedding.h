#pragma once
// nn.Embedding: weight ~ N(0, 1).
#include "engine/nn/module.h"

namespace vramlab::engine {

class Embedding : public Module {
 public:
  Embedding(int64_t num, int64_t dim, DType dtype = DType::Float32);
  std::string type_name() const override { return "Embedding"; }
  Tensor forward(const Tensor& indices) override;
  Tensor weight;
};

}  // namespace vramlab::engine
