// torch.optim.Adam and AdamW (Adam with decoupled weight decay): state made at the first
// step, the foreach path's _foreach_sqrt denominators or the single-tensor loop's.
#include "engine/optim/optimizer.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "engine/backends/backend.h"
#include "engine/core/context.h"
#include "engine/core/grad_mode.h"
#include "engine/ops/ops.h"
#include "engine/spec/run_spec.h"

namespace vramlab::engine {

AdamOptions adamw_options(double lr, double weight_decay) {
  AdamOptions o;
  o.lr = lr;
  o.weight_decay = weight_decay;
  o.decoupled_weight_decay = true;
  return o;
}

namespace {
// A Python list's items go last first when the list is freed (list_dealloc).
void drop_list(std::vector<Tensor>& v) {
  while (!v.empty()) v.pop_back();
}
}  // namespace

Adam::Adam(std::vector<Tensor> params, AdamOptions o) : Optimizer(std::move(params)), o_(o) {
  if (o_.lr < 0) throw std::invalid_argument("Invalid learning rate: " + std::to_string(o_.lr));
  if (o_.eps < 0) throw std::invalid_argument("Invalid epsilon value: " + std::to_string(o_.eps));
  if (o_.beta1 < 0 || o_.beta1 >= 1)
    throw std::invalid_argument("Invalid beta parameter at index 0: " + std::to_string(o_.beta1));
  if (o_.beta2 < 0 || o_.beta2 >= 1)
    throw std::invalid_argument("Invalid beta parameter at index 1: " + std::to_string(o_.beta2));
  state_.resize(params_.size());
}

void Adam::foreach_group(const std::vector<size_t>& idx, std::vector<Tensor>& prev_denoms) {
  const double b1 = o_.beta1, b2 = o_.beta2;
  std::vector<Tensor> grads;
  for (size_t i : idx) grads.push_back(params_[i].grad());
  if (o_.maximize)
    for (auto& g : grads) g = neg(g);
  for (size_t i : idx) state_[i].step += 1;
  // Whether the rest goes to the backend as one adam_foreach, and whether that also takes
  // AdamW's decay (the cuda backend: one multi-tensor kernel instead of a mul_ per param).
  const bool fused = !o_.maximize && (o_.weight_decay == 0 || o_.decoupled_weight_decay);
  const bool decay_in_backend = fused && o_.weight_decay != 0 && current_context().backend().fuses_adam_weight_decay();
  if (o_.weight_decay != 0) {
    if (o_.decoupled_weight_decay) {
      if (!decay_in_backend)
        for (size_t i : idx) mul_(params_[i], 1 - o_.lr * o_.weight_decay);
    } else if (o_.maximize) {
      for (size_t j = 0; j < idx.size(); ++j) add_(grads[j], params_[idx[j]], o_.weight_decay);
    } else {
      std::vector<Tensor> wd;
      for (size_t j = 0; j < idx.size(); ++j) wd.push_back(add(grads[j], params_[idx[j]], o_.weight_decay));
      grads = std::move(wd);
    }
  }
  if (fused) {
    // grads are the .grad tensors themselves (nothing for `del device_grads` to free),
    // so the backend may fuse the rest (cuda: multi-tensor kernels). Same memory: the
    // _foreach_sqrt results are allocated here, as sqrt() would.
    AdamForeachArgs a;
    a.beta1 = b1;
    a.beta2 = b2;
    a.eps = o_.eps;
    if (decay_in_backend) a.param_scale = 1 - o_.lr * o_.weight_decay;  // the _foreach_mul_ above
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
    drop_list(prev_denoms);
    current_context().backend().adam_foreach(a);
    for (size_t j = 0; j < idx.size(); ++j) {  // (decay mul_,) lerp_, mul_ + addcmul_, addcdiv_
      if (a.param_scale != 1.0) a.params[j].bump_version();
      a.exp_avgs[j].bump_version();
      a.exp_avg_sqs[j].bump_version();
      a.exp_avg_sqs[j].bump_version();
      a.params[j].bump_version();
    }
    prev_denoms = std::move(a.denoms);
    return;
  }
  for (size_t j = 0; j < idx.size(); ++j) lerp_(state_[idx[j]].exp_avg, grads[j], 1 - b1);
  for (size_t i : idx) mul_(state_[i].exp_avg_sq, b2);
  for (size_t j = 0; j < idx.size(); ++j) addcmul_(state_[idx[j]].exp_avg_sq, grads[j], grads[j], 1 - b2);
  grads.clear();  // `del device_grads`
  std::vector<Tensor> denom;
  for (size_t i : idx) denom.push_back(sqrt(state_[i].exp_avg_sq));  // _foreach_sqrt: one temp per param
  drop_list(prev_denoms);
  for (size_t j = 0; j < idx.size(); ++j) {
    double bc2 = 1 - std::pow(b2, state_[idx[j]].step);
    div_(denom[j], std::sqrt(bc2));
    add_(denom[j], o_.eps);
  }
  for (size_t j = 0; j < idx.size(); ++j) {
    double bc1 = 1 - std::pow(b1, state_[idx[j]].step);
    addcdiv_(params_[idx[j]], state_[idx[j]].exp_avg, denom[j], -(o_.lr / bc1));
  }
  prev_denoms = std::move(denom);
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
    // _multi_tensor_adam runs group by group (params grouped by dtype, in first-seen
    // order); a group's _foreach_sqrt list stays bound until the next group's replaces it.
    std::vector<std::vector<size_t>> groups;
    std::vector<DType> group_dtype;
    for (size_t i : idx) {
      auto it = std::find(group_dtype.begin(), group_dtype.end(), params_[i].dtype());
      if (it == group_dtype.end()) {
        group_dtype.push_back(params_[i].dtype());
        groups.push_back({i});
      } else {
        groups[size_t(it - group_dtype.begin())].push_back(i);
      }
    }
    std::vector<Tensor> prev_denoms;
    for (const auto& group : groups) foreach_group(group, prev_denoms);
    drop_list(prev_denoms);  // the last group's list goes when _multi_tensor_adam returns
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
      if (o_.decoupled_weight_decay)
        mul_(p, 1 - o_.lr * o_.weight_decay);
      else
        g = add(g, p, o_.weight_decay);
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

// The registry's factories (optim/registry.cpp) for {kind: "adam" | "adamw", ...}.
std::unique_ptr<Optimizer> make_adam(const KindArgs& a, std::vector<Tensor> params) {
  AdamOptions o;
  o.lr = a.f("lr");
  o.weight_decay = a.f("weight_decay");
  o.foreach = a.b("foreach");
  return std::make_unique<Adam>(std::move(params), o);
}

std::unique_ptr<Optimizer> make_adamw(const KindArgs& a, std::vector<Tensor> params) {
  AdamOptions o = adamw_options(a.f("lr"), a.f("weight_decay"));
  o.foreach = a.b("foreach");
  return std::make_unique<Adam>(std::move(params), o);
}

}  // namespace vramlab::engine
