#pragma once
// A LoRA adapter around a frozen Linear: y = base(x) + linear(linear(x, A), B) * alpha/r,
// with A (r x in) ~ N(0, 1)/r and B (out x r) zeros, both float32 on the device (made
// after any weight-dtype conversion, as peft-style code does).
#include <memory>

#include "engine/nn/linear.h"

namespace vramlab::engine {

class LoRALinear : public Module {
 public:
  LoRALinear(std::shared_ptr<Linear> base, int64_t rank, double alpha);
  std::string type_name() const override { return "LoRALinear"; }
  Tensor forward(const Tensor& x) override;
  Tensor A, B;

 private:
  std::shared_ptr<Linear> base_;
  double scale_;
};

}  // namespace vramlab::engine
