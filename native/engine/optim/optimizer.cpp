#include "engine/optim/optimizer.h"

#include <cmath>
#include <stdexcept>

#include "engine/backends/backend.h"
#include "engine/core/context.h"
#include "engine/core/grad_mode.h"
#include "engine/ops/ops.h"

namespace vramlab::engine {

Optimizer::Optimizer(std::vector<Tensor> params) : params_(std::move(params)) {
  if (params_.empty()) throw std::invalid_argument("optimizer got an empty parameter list");
  for (auto& p : params_)
    if (!p.is_leaf()) throw std::invalid_argument("can't optimize a non-leaf Tensor");
}

void Optimizer::zero_grad(bool set_to_none) {
  NoGradGuard ng;
  for (auto& p : params_) {
    if (!p.grad().defined()) continue;
    if (set_to_none) {
      p.set_grad(Tensor());
    } else {
      Tensor g = p.grad();
      zero_(g);  // _foreach_zero_: in place
    }
  }
}

SGD::SGD(std::vector<Tensor> params, SGDOptions o) : Optimizer(std::move(params)), o_(o) {
  if (o_.lr < 0) throw std::invalid_argument("Invalid learning rate: " + std::to_string(o_.lr));
  if (o_.momentum < 0) throw std::invalid_argument("Invalid momentum value: " + std::to_string(o_.momentum));
  if (o_.nesterov && (o_.momentum <= 0 || o_.dampening != 0))
    throw std::invalid_argument("Nesterov momentum requires a momentum and zero dampening");
  momentum_.resize(params_.size());
}

void SGD::step() {
  NoGradGuard ng;
  CategoryScope temp(Category::Temporary);
  std::vector<size_t> idx;
  for (size_t i = 0; i < params_.size(); ++i)
    if (params_[i].grad().defined()) idx.push_back(i);
  if (idx.empty()) return;
  std::vector<Tensor> grads;
  for (size_t i : idx) grads.push_back(params_[i].grad());

  if (o_.foreach) {
    if (o_.maximize) for (auto& g : grads) g = neg(g);  // _foreach_neg: new list
    if (o_.weight_decay != 0) {
      if (o_.maximize) {
        for (size_t j = 0; j < idx.size(); ++j) add_(grads[j], params_[idx[j]], o_.weight_decay);
      } else {
        std::vector<Tensor> wd;
        for (size_t j = 0; j < idx.size(); ++j) wd.push_back(add(grads[j], params_[idx[j]], o_.weight_decay));
        grads = std::move(wd);
      }
    }
    if (o_.momentum != 0) {
      bool all_have = true;
      for (size_t i : idx) all_have = all_have && momentum_[i].defined();
      std::vector<Tensor> bufs;
      if (all_have) {
        for (size_t i : idx) bufs.push_back(momentum_[i]);
        for (auto& b : bufs) mul_(b, o_.momentum);
        for (size_t j = 0; j < bufs.size(); ++j) add_(bufs[j], grads[j], 1 - o_.dampening);
      } else {
        CategoryScope st(Category::OptimizerState);
        for (size_t j = 0; j < idx.size(); ++j) {
          Tensor& b = momentum_[idx[j]];
          if (!b.defined()) {
            b = grads[j].clone().detach();
          } else {
            mul_(b, o_.momentum);
            add_(b, grads[j], 1 - o_.dampening);
          }
          bufs.push_back(b);
        }
      }
      if (o_.nesterov) {
        for (size_t j = 0; j < idx.size(); ++j) add_(grads[j], bufs[j], o_.momentum);
      } else {
        grads = bufs;
      }
    }
    for (size_t j = 0; j < idx.size(); ++j) add_(params_[idx[j]], grads[j], -o_.lr);
    return;
  }

  // _single_tensor_sgd. `g` is the Python loop's local `grad`: a temporary it holds
  // (maximize, weight decay, nesterov) lives until the next iteration rebinds it.
  Tensor g;
  for (size_t j = 0; j < idx.size(); ++j) {
    Tensor& p = params_[idx[j]];
    g = o_.maximize ? neg(grads[j]) : grads[j];
    if (o_.weight_decay != 0) g = add(g, p, o_.weight_decay);
    if (o_.momentum != 0) {
      Tensor& b = momentum_[idx[j]];
      if (!b.defined()) {
        CategoryScope st(Category::OptimizerState);
        b = g.clone().detach();
      } else {
        mul_(b, o_.momentum);
        add_(b, g, 1 - o_.dampening);
      }
      g = o_.nesterov ? add(g, b, o_.momentum) : b;
    }
    add_(p, g, -o_.lr);
  }
}

AdamOptions adamw_options(double lr, double weight_decay) {
  AdamOptions o;
  o.lr = lr;
  o.weight_decay = weight_decay;
  o.decoupled_weight_decay = true;
  return o;
}

Adam::Adam(std::vector<Tensor> params, AdamOptions o) : Optimizer(std::move(params)), o_(o) {
  if (o_.lr < 0) throw std::invalid_argument("Invalid learning rate: " + std::to_string(o_.lr));
  if (o_.eps < 0) throw std::invalid_argument("Invalid epsilon value: " + std::to_string(o_.eps));
  if (o_.beta1 < 0 || o_.beta1 >= 1) throw std::invalid_argument("Invalid beta parameter at index 0: " + std::to_string(o_.beta1));
  if (o_.beta2 < 0 || o_.beta2 >= 1) throw std::invalid_argument("Invalid beta parameter at index 1: " + std::to_string(o_.beta2));
  state_.resize(params_.size());
}

void Adam::step() {
  NoGradGuard ng;
  std::vector<size_t> idx;
  for (size_t i = 0; i < params_.size(); ++i)
    if (params_[i].grad().defined()) idx.push_back(i);
  if (idx.empty()) return;
  {
    // _init_group: exp_avg then exp_avg_sq per parameter, zeros like the parameter.
    CategoryScope st(Category::OptimizerState);
    for (size_t i : idx) {
      auto& s = state_[i];
      if (!s.exp_avg.defined()) {
        s.exp_avg = zeros_like(params_[i]);
        s.exp_avg_sq = zeros_like(params_[i]);
      }
    }
  }
  CategoryScope temp(Category::Temporary);
  const double b1 = o_.beta1, b2 = o_.beta2;

  if (o_.foreach) {
    std::vector<Tensor> grads;
    for (size_t i : idx) grads.push_back(params_[i].grad());
    if (o_.maximize) for (auto& g : grads) g = neg(g);
    for (size_t i : idx) state_[i].step += 1;
    if (o_.weight_decay != 0) {
      if (o_.decoupled_weight_decay) {
        for (size_t i : idx) mul_(params_[i], 1 - o_.lr * o_.weight_decay);
      } else if (o_.maximize) {
        for (size_t j = 0; j < idx.size(); ++j) add_(grads[j], params_[idx[j]], o_.weight_decay);
      } else {
        std::vector<Tensor> wd;
        for (size_t j = 0; j < idx.size(); ++j) wd.push_back(add(grads[j], params_[idx[j]], o_.weight_decay));
        grads = std::move(wd);
      }
    }
    if (!o_.maximize && (o_.weight_decay == 0 || o_.decoupled_weight_decay)) {
      // grads are the .grad tensors themselves (nothing for `del device_grads` to free),
      // so the backend may fuse the rest (cuda: multi-tensor kernels). Same memory: the
      // _foreach_sqrt results are allocated here, as sqrt() would, and freed on return.
      AdamForeachArgs a;
      a.beta1 = b1;
      a.beta2 = b2;
      a.eps = o_.eps;
      for (size_t j = 0; j < idx.size(); ++j) {
        State& s = state_[idx[j]];
        a.params.push_back(params_[idx[j]]);
        a.exp_avgs.push_back(s.exp_avg);
        a.exp_avg_sqs.push_back(s.exp_avg_sq);
        a.bias_correction2_sqrt.push_back(std::sqrt(1 - std::pow(b2, s.step)));
        a.step_size.push_back(-(o_.lr / (1 - std::pow(b1, s.step))));
      }
      a.grads = std::move(grads);
      for (const Tensor& sq : a.exp_avg_sqs)
        a.denoms.push_back(make_tensor(sq.sizes(), is_floating(sq.dtype()) ? sq.dtype() : DType::Float32, "sqrt"));
      current_context().backend().adam_foreach(a);
      for (size_t j = 0; j < idx.size(); ++j) {  // lerp_, mul_ + addcmul_, addcdiv_
        a.exp_avgs[j].bump_version();
        a.exp_avg_sqs[j].bump_version();
        a.exp_avg_sqs[j].bump_version();
        a.params[j].bump_version();
      }
      return;
    }
    for (size_t j = 0; j < idx.size(); ++j) lerp_(state_[idx[j]].exp_avg, grads[j], 1 - b1);
    for (size_t i : idx) mul_(state_[i].exp_avg_sq, b2);
    for (size_t j = 0; j < idx.size(); ++j) addcmul_(state_[idx[j]].exp_avg_sq, grads[j], grads[j], 1 - b2);
    grads.clear();  // `del device_grads`
    std::vector<Tensor> denom;
    for (size_t i : idx) denom.push_back(sqrt(state_[i].exp_avg_sq));  // _foreach_sqrt: one temp per param
    for (size_t j = 0; j < idx.size(); ++j) {
      double bc2 = 1 - std::pow(b2, state_[idx[j]].step);
      div_(denom[j], std::sqrt(bc2));
      add_(denom[j], o_.eps);
    }
    for (size_t j = 0; j < idx.size(); ++j) {
      double bc1 = 1 - std::pow(b1, state_[idx[j]].step);
      addcdiv_(params_[idx[j]], state_[idx[j]].exp_avg, denom[j], -(o_.lr / bc1));
    }
    return;
  }

  // _single_tensor_adam. `g` and `denom` are the Python loop's locals: the previous
  // parameter's denom is still alive while this one's sqrt and quotient are computed
  // (it is freed when `denom = ...` rebinds it), which shows in the step's peak.
  Tensor g, denom;
  for (size_t i : idx) {
    Tensor& p = params_[i];
    g = o_.maximize ? neg(p.grad()) : p.grad();
    auto& s = state_[i];
    s.step += 1;
    if (o_.weight_decay != 0) {
      if (o_.decoupled_weight_decay) mul_(p, 1 - o_.lr * o_.weight_decay);
      else g = add(g, p, o_.weight_decay);
    }
    lerp_(s.exp_avg, g, 1 - b1);
    mul_(s.exp_avg_sq, b2);
    addcmul_(s.exp_avg_sq, g, g, 1 - b2);
    double bc1 = 1 - std::pow(b1, s.step), bc2 = 1 - std::pow(b2, s.step);
    // (exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(eps): the sqrt temporary dies
    // once the quotient exists; the rebinding then frees the previous denom.
    Tensor q = div(sqrt(s.exp_avg_sq), std::sqrt(bc2));
    add_(q, o_.eps);
    denom = std::move(q);
    addcdiv_(p, s.exp_avg, denom, -(o_.lr / bc1));
  }
}

}  // namespace vramlab::engine
