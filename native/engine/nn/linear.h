#pragma once
// nn.Linear with PyTorch's default init: kaiming_uniform_(a=sqrt(5)) weight and
// uniform(-1/sqrt(in), 1/sqrt(in)) bias.
#include "engine/nn/module.h"

namespace vramlab::engine {

class Linear : public Module {
 public:
  Linear(int64_t in_features, int64_t out_features, bool bias = true, DType dtype = DType::Float32);
  // Over an existing weight (tied weights: nothing is allocated).
  explicit Linear(const Tensor& shared_weight);
  std::string type_name() const override { return "Linear"; }
  Tensor forward(const Tensor& x) override;
  int64_t in_features() const { return weight.size(1); }
  int64_t out_features() const { return weight.size(0); }
  Tensor weight, bias;
};

}  // namespace vramlab::engine
