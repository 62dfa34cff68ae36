#include "engine/nn/module.h"

#include <cmath>
#include <stdexcept>

#include "engine/checkpoint/checkpoint.h"
#include "engine/core/context.h"
#include "engine/core/grad_mode.h"
#include "engine/ops/ops.h"

namespace vramlab::engine {

Tensor Module::operator()(const Tensor& x) {
  ModuleScope scope(path_id_);
  return forward(x);
}

void Module::register_module(const std::string& name, std::shared_ptr<Module> m) {
  children_.emplace_back(name, std::move(m));
}

void Module::register_parameter(const std::string& name, const Tensor& p) { params_.emplace_back(name, p); }

std::vector<std::pair<std::string, Tensor>> Module::named_parameters() const {
  std::vector<std::pair<std::string, Tensor>> out;
  for (auto& [n, p] : params_) out.emplace_back(n, p);
  for (auto& [cn, c] : children_)
    for (auto& [n, p] : c->named_parameters()) out.emplace_back(cn + "." + n, p);
  return out;
}

std::vector<Tensor> Module::parameters() const {
  std::vector<Tensor> out;
  for (auto& [n, p] : named_parameters()) out.push_back(p);
  return out;
}

int64_t Module::num_parameters() const {
  int64_t n = 0;
  for (auto& p : parameters()) n += p.numel();
  return n;
}

void Module::zero_grad(bool set_to_none) {
  for (auto& p : parameters()) {
    if (!p.grad().defined()) continue;
    if (set_to_none) {
      p.set_grad(Tensor());
    } else {
      Tensor g = p.grad();
      NoGradGuard ng;
      zero_(g);
    }
  }
}

void Module::set_path(const std::string& path) {
  path_ = path;
  path_id_ = intern_module_path(path);
  for (auto& [n, c] : children_) c->set_path(path.empty() ? n : path + "." + n);
}

Linear::Linear(int64_t in, int64_t out, bool has_bias, DType dtype) {
  if (in <= 0 || out <= 0)
    throw std::invalid_argument("Linear: in_features and out_features must be positive (got " + std::to_string(in) +
                                ", " + std::to_string(out) + ")");
  CategoryScope cs(Category::Parameter);
  NoGradGuard ng;
  // kaiming_uniform_(a=sqrt(5)): gain sqrt(2/(1+5)), bound gain*sqrt(3/fan_in) = 1/sqrt(fan_in).
  double bound = 1.0 / std::sqrt(double(in));
  weight = empty({out, in}, dtype);
  uniform_(weight, -bound, bound);
  weight.requires_grad_(true);
  register_parameter("weight", weight);
  if (has_bias) {
    bias = empty({out}, dtype);
    uniform_(bias, -bound, bound);
    bias.requires_grad_(true);
    register_parameter("bias", bias);
  }
}

Tensor Linear::forward(const Tensor& x) { return linear(x, weight, bias); }

Tensor ReLU::forward(const Tensor& x) { return relu(x); }
Tensor GELU::forward(const Tensor& x) { return gelu(x, tanh_); }

Sequential::Sequential(std::vector<std::shared_ptr<Module>> mods) {
  for (auto& m : mods) push_back(std::move(m));
}

void Sequential::push_back(std::shared_ptr<Module> m) {
  std::string name = std::to_string(children_.size());
  register_module(name, std::move(m));
}

Tensor Sequential::forward(const Tensor& x) {
  Tensor h = x;
  for (auto& [n, m] : children_) h = (*m)(h);
  return h;
}

ResidualBlock::ResidualBlock(int64_t dim, DType dtype) {
  net_ = std::make_shared<Sequential>(std::vector<std::shared_ptr<Module>>{
      std::make_shared<Linear>(dim, dim, true, dtype), std::make_shared<ReLU>(),
      std::make_shared<Linear>(dim, dim, true, dtype), std::make_shared<ReLU>()});
  register_module("net", net_);
}

Tensor ResidualBlock::forward(const Tensor& x) { return add((*net_)(x), x); }

std::vector<std::pair<size_t, size_t>> checkpoint_segments(size_t depth, CheckpointMode mode, size_t k) {
  std::vector<std::pair<size_t, size_t>> segs;
  size_t per = 1;
  switch (mode) {
    case CheckpointMode::None: return segs;
    case CheckpointMode::Block: per = 1; break;
    case CheckpointMode::EveryK:
      if (k == 0) throw std::invalid_argument("checkpoint every_k needs k >= 1");
      per = k;
      break;
    case CheckpointMode::Sqrt: {
      // ceil(depth / round(sqrt(depth))) consecutive blocks per segment.
      size_t r = size_t(std::llround(std::sqrt(double(depth))));
      r = std::max<size_t>(r, 1);
      per = (depth + r - 1) / r;
      break;
    }
  }
  for (size_t b = 0; b < depth; b += per) segs.emplace_back(b, std::min(depth, b + per));
  return segs;
}

CheckpointedSequential::CheckpointedSequential(std::shared_ptr<Sequential> blocks, CheckpointMode mode, size_t k)
    : blocks_(std::move(blocks)), mode_(mode), k_(k) {
  // Same parameter names as the wrapped Sequential (children "0", "1", ...).
  children_ = blocks_->children();
}

void CheckpointedSequential::set_mode(CheckpointMode mode, size_t k) {
  mode_ = mode;
  k_ = k;
}

Tensor CheckpointedSequential::forward(const Tensor& x) {
  if (mode_ == CheckpointMode::None) return blocks_->forward(x);
  Tensor h = x;
  std::vector<std::shared_ptr<Module>> mods;
  for (auto& [n, m] : children_) mods.push_back(m);
  for (auto [b, e] : checkpoint_segments(mods.size(), mode_, k_)) {
    std::vector<std::shared_ptr<Module>> seg(mods.begin() + long(b), mods.begin() + long(e));
    h = checkpoint(
        [seg](const Tensor& in) {
          Tensor t = in;
          for (auto& m : seg) t = (*m)(t);
          return t;
        },
        h);
  }
  return h;
}

std::shared_ptr<Sequential> make_mlp(int64_t in, int64_t hidden, int64_t depth, int64_t out, DType dtype) {
  if (depth < 1) throw std::invalid_argument("mlp depth must be at least 1");
  auto s = std::make_shared<Sequential>();
  s->push_back(std::make_shared<Linear>(in, hidden, true, dtype));
  s->push_back(std::make_shared<ReLU>());
  for (int64_t i = 1; i < depth; ++i) {
    s->push_back(std::make_shared<Linear>(hidden, hidden, true, dtype));
    s->push_back(std::make_shared<ReLU>());
  }
  s->push_back(std::make_shared<Linear>(hidden, out, true, dtype));
  s->set_path("");
  return s;
}

std::shared_ptr<Sequential> make_residual(int64_t dim, int64_t depth, DType dtype) {
  if (depth < 1) throw std::invalid_argument("residual depth must be at least 1");
  auto s = std::make_shared<Sequential>();
  for (int64_t i = 0; i < depth; ++i) s->push_back(std::make_shared<ResidualBlock>(dim, dtype));
  s->set_path("");
  return s;
}

}  // namespace vramlab::engine
