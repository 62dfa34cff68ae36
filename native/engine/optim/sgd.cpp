// torch.optim.SGD: momentum buffers cloned from the first gradient; the foreach path's
// temporaries (weight decay, maximize) or the single-tensor loop's.
#include "engine/optim/optimizer.h"

#include <cmath>
#include <stdexcept>

#include "engine/backends/backend.h"
#include "engine/core/context.h"
#include "engine/core/grad_mode.h"
#include "engine/ops/ops.h"
#include "engine/spec/run_spec.h"

namespace vramlab::engine {

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
    if (o_.maximize)
      for (auto& g : grads) g = neg(g);  // _foreach_neg: new list
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

// The registry's factory (optim/registry.cpp) for {kind: "sgd", ...}.
std::unique_ptr<Optimizer> make_sgd(const KindArgs& a, std::vector<Tensor> params) {
  SGDOptions o;
  o.lr = a.f("lr");
  o.momentum = a.f("momentum");
  o.weight_decay = a.f("weight_decay");
  o.nesterov = a.has("nesterov") && a.b("nesterov");
  o.foreach = a.b("foreach");
  return std::make_unique<SGD>(std::move(params), o);
}

}  // namespace vramlab::engine
