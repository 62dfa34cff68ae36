#pragma once
// The pieces of the hf decoder that are not layers: a plain named module (an nn.Module
// holding attributes), HF's RMSNorm, the rotary tables as LlamaRotaryEmbedding computes
// them each forward, the packed-sequence probe of the mask code, and ForCausalLMLoss.
#include <memory>
#include <string>

#include "engine/nn/module.h"

namespace vramlab::engine::hf {

// An nn.Module whose children and parameters are attributes, in assignment order.
class Container : public Module {
 public:
  explicit Container(std::string type) : type_(std::move(type)) {}
  std::string type_name() const override { return type_; }
  void add(const std::string& name, std::shared_ptr<Module> m) { register_module(name, std::move(m)); }
  void add_parameter(const std::string& name, const Tensor& p);
  void add_buffer(const std::string& name, const Tensor& b) { register_buffer(name, b); }
  std::shared_ptr<Module> get(const std::string& name) const;
  Tensor call(const std::string& name, const Tensor& x) { return (*get(name))(x); }

 private:
  std::string type_;
};

// LlamaRMSNorm (x.to(float32); pow(2).mean; x * rsqrt(var + eps); weight * x.to(dtype)),
// OLMo2's (the same, but (weight * x).to(dtype): the product in float32), or Gemma's
// (float throughout, x * (1 + weight.float()), .type_as(x); weight zeros).
enum class NormStyle : uint8_t { Llama, Olmo, Gemma };
class RmsNorm : public Module {
 public:
  RmsNorm(int64_t dim, double eps, DType dtype, NormStyle style);
  std::string type_name() const override { return "RMSNorm"; }
  Tensor forward(const Tensor& x) override;
  Tensor weight;

 private:
  double eps_;
  NormStyle style_;
};

// LlamaRotaryEmbedding.forward: cos, sin (P, T, D) in `dtype` for position_ids (P, T),
// which on the data backends are first, first + 1, ... in every row.
void rotary_cos_sin(const Tensor& inv_freq, const Tensor& position_ids, DType dtype, double theta, Tensor& cos,
                    Tensor& sin, int64_t first = 0);
// torch.arange(T) + past: one int64 tensor; on the data backends its values come from
// arange (the cuda backend has no int64 arithmetic).
Tensor positions_from(const Tensor& arange_t, int64_t past);
// find_packed_sequence_indices over position_ids expanded to the batch (training, no
// cache): its temporaries, then None for one sequence per row.
void packed_sequence_check(const Tensor& position_ids, int64_t batch);
// NewGELUActivation (ACT2FN["gelu_new"]), written out in Python ops:
// 0.5 * x * (1.0 + tanh(sqrt(2 / pi) * (x + 0.044715 * pow(x, 3.0)))).
Tensor new_gelu(const Tensor& x);
// ForCausalLMLoss: logits.float(), labels padded with -100 and shifted, mean cross-entropy.
Tensor causal_lm_loss(const Tensor& logits, const Tensor& labels, int64_t vocab);

}  // namespace vramlab::engine::hf
