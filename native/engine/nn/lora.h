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

// PEFT's lora.Linear (peft 0.21, tuners/lora/layer.py) around a frozen base Linear:
// lora_A = Linear(in, r), lora_B = Linear(r, out), no biases, moved to the base weight's
// device and dtype when made; upcast() is get_peft_model's autocast_adapter_dtype pass
// (bf16/fp16 adapters to float32, the new storage before the old is released).
// forward: result = base(x); x = x.to(lora_A dtype); result = result + lora_B(lora_A(dropout(x))) * scaling,
// dropout being nn.Dropout(lora_dropout) (on only in training) or nn.Identity when it is 0.
class PeftLoraLinear : public Module {
 public:
  // fan_in_fan_out: the base keeps its weight as (in, out), as HF's Conv1D does (PEFT sets
  // it for Conv1D bases and reads the features from the weight that way round).
  PeftLoraLinear(std::shared_ptr<Linear> base, int64_t rank, double alpha, double dropout, bool fan_in_fan_out = false);
  std::string type_name() const override { return "lora.Linear"; }
  Tensor forward(const Tensor& x) override;
  void upcast();

 private:
  std::shared_ptr<Linear> base_;
  std::shared_ptr<Module> lora_a_, lora_b_;
  std::shared_ptr<Linear> a_, b_;
  double scaling_;
  double dropout_;  // lora_dropout
};

}  // namespace vramlab::engine
