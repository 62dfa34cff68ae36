#pragma once
// RMSNorm as the reference Llama writes it (not a fused kernel): x.float(), then
// pow(2).mean(-1, keepdim) + eps, rsqrt, multiply, type_as(x), times the weight. Each
// step is its own op with its own saved tensors and temporaries, which is the memory
// this layer costs in PyTorch eager.
#include "engine/nn/module.h"

namespace vramlab::engine {

class RMSNorm : public Module {
 public:
  explicit RMSNorm(int64_t dim, double eps = 1e-5, DType dtype = DType::Float32);
  std::string type_name() const override { return "RMSNorm"; }
  Tensor forward(const Tensor& x) override;
  Tensor weight;

 private:
  double eps_;
};

}  // namespace vramlab::engine
