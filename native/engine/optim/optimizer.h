#pragma once
// Optimizers with the memory behaviour of PyTorch's implementations: state created
// lazily at the first step (step counters on the CPU, so no device memory), the
// temporaries of the default foreach path (torch/optim/sgd.py _multi_tensor_sgd,
// adam.py _multi_tensor_adam) or, with foreach=false, the single-tensor path.
#include <memory>
#include <string>
#include <vector>

#include "engine/core/tensor.h"
#include "engine/spec/run_spec.h"

namespace vramlab::engine {

class Optimizer {
 public:
  explicit Optimizer(std::vector<Tensor> params);
  virtual ~Optimizer() = default;
  virtual void step() = 0;
  void zero_grad(bool set_to_none = true);
  const std::vector<Tensor>& params() const { return params_; }

 protected:
  std::vector<Tensor> params_;
};

struct SGDOptions {
  double lr = 1e-3, momentum = 0, dampening = 0, weight_decay = 0;
  bool nesterov = false, maximize = false, foreach = true;
};

class SGD : public Optimizer {
 public:
  SGD(std::vector<Tensor> params, SGDOptions o);
  void step() override;

 private:
  SGDOptions o_;
  std::vector<Tensor> momentum_;  // lazily cloned from the first gradient
};

struct AdamOptions {
  double lr = 1e-3, beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weight_decay = 0;
  bool decoupled_weight_decay = false;  // AdamW
  bool maximize = false, foreach = true;
};

class Adam : public Optimizer {
 public:
  Adam(std::vector<Tensor> params, AdamOptions o);
  void step() override;

 private:
  struct State {
    double step = 0;  // torch.tensor(0.0) on the CPU
    Tensor exp_avg, exp_avg_sq;
  };
  void foreach_group(const std::vector<size_t>& idx, std::vector<Tensor>& prev_denoms);
  AdamOptions o_;
  std::vector<State> state_;
};

// AdamW = Adam with decoupled weight decay (default weight_decay 0.01).
AdamOptions adamw_options(double lr = 1e-3, double weight_decay = 1e-2);

// The optimizer spec.optimizer names ({kind, ...args}) over `params`; null for "none".
// One line per optimizer in optim/registry.cpp.
std::unique_ptr<Optimizer> make_optimizer(const KindArgs& spec, std::vector<Tensor> params);
std::vector<std::string> optimizer_kinds();

}  // namespace vramlab::engine
