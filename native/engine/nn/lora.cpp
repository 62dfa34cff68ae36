#include "engine/nn/lora.h"

#include <stdexcept>

#include "engine/core/alloc_tag.h"
#include "engine/core/grad_mode.h"
#include "engine/ops/dropout.h"
#include "engine/ops/ops.h"

namespace vramlab::engine {

LoRALinear::LoRALinear(std::shared_ptr<Linear> base, int64_t rank, double alpha)
    : base_(std::move(base)), scale_(alpha / double(rank)) {
  register_module("base", base_);
  {
    CategoryScope cs(Category::Parameter);
    NoGradGuard ng;
    // torch.randn(r, in) / r: the randn result is a temporary.
    A = div(randn({rank, base_->in_features()}), double(rank));
    B = zeros({base_->out_features(), rank});
  }
  A.requires_grad_(true);
  B.requires_grad_(true);
  register_parameter("A", A);
  register_parameter("B", B);
}

Tensor LoRALinear::forward(const Tensor& x) {
  // base(x) + F.linear(F.linear(x, A), B) * scale
  Tensor y = (*base_)(x);
  Tensor a = linear(x, A);
  Tensor b = linear(a, B);
  a.reset();
  Tensor s = mul(b, scale_);
  b.reset();
  return add(y, s);
}

namespace {
// nn.ModuleDict({"default": Linear}): parameter names lora_A.default.weight
class AdapterDict : public Module {
 public:
  explicit AdapterDict(std::shared_ptr<Linear> l) { register_module("default", std::move(l)); }
  std::string type_name() const override { return "ModuleDict"; }
};
}  // namespace

PeftLoraLinear::PeftLoraLinear(std::shared_ptr<Linear> base, int64_t rank, double alpha, double dropout,
                               bool fan_in_fan_out)
    : base_(std::move(base)), scaling_(alpha / double(rank)), dropout_(dropout) {
  if (rank < 1) throw std::invalid_argument("LoRA rank must be at least 1");
  if (dropout < 0.0 || dropout >= 1.0) throw std::invalid_argument("LoRA dropout must be in [0, 1)");
  register_module("base_layer", base_);
  // made on the CPU in float32, then .to(base device, base dtype): A first, then B
  const DType dt = base_->weight.dtype();
  {
    CategoryScope cs(Category::Parameter);
    const int64_t in = fan_in_fan_out ? base_->weight.size(0) : base_->in_features();
    const int64_t out = fan_in_fan_out ? base_->weight.size(1) : base_->out_features();
    a_ = std::make_shared<Linear>(in, rank, false, dt);
    b_ = std::make_shared<Linear>(rank, out, false, dt);
    NoGradGuard ng;
    zero_(b_->weight);  // init.zeros_(lora_B)
  }
  lora_a_ = std::make_shared<AdapterDict>(a_);
  lora_b_ = std::make_shared<AdapterDict>(b_);
  register_module("lora_A", lora_a_);
  register_module("lora_B", lora_b_);
}

void PeftLoraLinear::upcast() {
  CategoryScope cs(Category::Parameter);
  lora_a_->to_dtype(DType::Float32);
  lora_b_->to_dtype(DType::Float32);
}

Tensor PeftLoraLinear::forward(const Tensor& x_in) {
  Tensor result = (*base_)(x_in);
  const DType result_dtype = result.dtype();
  // x = self._cast_input_dtype(x, lora_A.weight.dtype): a copy when the dtypes differ
  Tensor x = x_in.to(a_->weight.dtype());
  {
    Tensor s;
    {
      Tensor b;
      {
        Tensor a;
        {
          // nn.Dropout is on in training (model.train()); nn.Identity for p = 0 hands x on.
          // Its output lives while lora_A saves it; native_dropout's mask while backward needs it.
          Tensor d = dropout_ > 0 ? dropout(x, dropout_, GradMode::is_enabled()) : x;
          a = (*lora_a_->children()[0].second)(d);
        }
        b = (*lora_b_->children()[0].second)(a);
      }
      s = mul(b, scaling_);
    }
    // result = result + lora_B(...) * scaling: the scaled temporary goes with the expression,
    // then the rebinding frees the base layer's output
    Tensor sum = add(result, s);
    s.reset();
    result = sum;
  }
  return result.to(result_dtype);
}

}  // namespace vramlab::engine
