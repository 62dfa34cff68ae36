#include "engine/nn/module.h"

#include <algorithm>
#include <stdexcept>

#include "engine/core/alloc_tag.h"
#include "engine/core/grad_mode.h"
#include "engine/ops/ops.h"

namespace vramlab::engine {

Tensor Module::forward(const Tensor&) {
  throw std::logic_error(type_name() + " takes more than one input; call its own forward");
}

Tensor Module::operator()(const Tensor& x) {
  return hooked(x, [this](const Tensor& in) { return forward(in); });
}

Tensor Module::hooked(const Tensor& x, const std::function<Tensor(const Tensor&)>& f) {
  ModuleScope scope(path_id_);
  if (!forward_hooks) return f(x);
  std::shared_ptr<ForwardHooks> h = forward_hooks;
  Tensor in = h->pre(*this, x);
  Tensor out = f(in);
  in.reset();
  h->post(*this, out);
  return out;
}

void Module::register_module(const std::string& name, std::shared_ptr<Module> m) {
  children_.emplace_back(name, std::move(m));
}

void Module::replace_module(const std::string& name, std::shared_ptr<Module> m) {
  for (auto& [n, c] : children_)
    if (n == name) {
      c = std::move(m);
      return;
    }
  throw std::logic_error("no submodule " + name);
}

void Module::register_parameter(const std::string& name, const Tensor& p) { params_.emplace_back(name, p); }
void Module::register_buffer(const std::string& name, const Tensor& b) { buffers_.emplace_back(name, b); }

void Module::collect_named(const std::string& prefix, std::vector<std::pair<std::string, Tensor>>& out,
                           std::vector<const TensorImpl*>& seen) const {
  for (auto& [n, p] : params_) {
    if (std::find(seen.begin(), seen.end(), p.impl()) != seen.end()) continue;
    seen.push_back(p.impl());
    out.emplace_back(prefix + n, p);
  }
  for (auto& [cn, c] : children_) c->collect_named(prefix + cn + ".", out, seen);
}

std::vector<std::pair<std::string, Tensor>> Module::named_parameters() const {
  std::vector<std::pair<std::string, Tensor>> out;
  std::vector<const TensorImpl*> seen;
  collect_named("", out, seen);
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

namespace {
// param.data = param.to(dtype): the new storage first, then the old one released.
void convert(const Tensor& t, DType dtype) {
  if (!is_floating(t.dtype()) || t.dtype() == dtype) return;
  Tensor converted;
  {
    NoGradGuard ng;
    converted = t.detach().to(dtype);
  }
  TensorImpl* impl = t.impl();
  impl->storage = converted.impl()->storage;
  impl->dtype = dtype;
  impl->strides = converted.strides();
  impl->offset = converted.storage_offset();
}
}  // namespace

void Module::apply_dtype(DType dtype, std::vector<const TensorImpl*>& done) {
  for (auto& [n, c] : children_) c->apply_dtype(dtype, done);
  for (auto* list : {&params_, &buffers_})
    for (auto& [n, t] : *list) {
      if (std::find(done.begin(), done.end(), t.impl()) != done.end()) continue;
      done.push_back(t.impl());
      CategoryScope cs(list == &params_ ? Category::Parameter : Category::Other);
      ModuleScope ms(path_id_);
      convert(t, dtype);
    }
}

void Module::to_dtype(DType dtype) {
  std::vector<const TensorImpl*> done;
  apply_dtype(dtype, done);
}

void Module::set_path(const std::string& path) {
  path_ = path;
  path_id_ = intern_module_path(path);
  for (auto& [n, c] : children_) c->set_path(path.empty() ? n : path + "." + n);
}

Tensor new_parameter(const Shape& shape, DType dtype, const char* op) {
  CategoryScope cs(Category::Parameter);
  NoGradGuard ng;
  return make_tensor(shape, dtype, op);
}

}  // namespace vramlab::engine
