#pragma once
// Module: parameters, buffers and children in registration order, module paths for
// allocation tags, and PyTorch's traversal orders: named_parameters() visits a module's
// own parameters before its children's (each tensor once, so tied weights count once);
// to_dtype() converts children first, then parameters, then buffers, as Module._apply.
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/core/tensor.h"

namespace vramlab::engine {

class Module;
// Forward pre- and post-hooks (register_forward_pre_hook / register_forward_hook), as
// fully_shard installs them: pre may replace the input, post sees the output.
struct ForwardHooks {
  virtual ~ForwardHooks() = default;
  virtual Tensor pre(Module& m, const Tensor& x) = 0;
  virtual void post(Module& m, Tensor& out) = 0;
};

class Module {
 public:
  virtual ~Module() = default;
  virtual std::string type_name() const = 0;
  virtual Tensor forward(const Tensor& x);  // single-input modules override this
  Tensor operator()(const Tensor& x);       // forward under this module's path
  // f(x) under this module's path and forward hooks (modules with several inputs).
  Tensor hooked(const Tensor& x, const std::function<Tensor(const Tensor&)>& f);
  std::shared_ptr<ForwardHooks> forward_hooks;

  std::vector<Tensor> parameters() const;
  std::vector<std::pair<std::string, Tensor>> named_parameters() const;
  int64_t num_parameters() const;
  void zero_grad(bool set_to_none = true);
  // model.to(dtype): each floating parameter and buffer gets a new storage of `dtype`
  // (allocated before the old one is freed), in Module._apply's order.
  void to_dtype(DType dtype);
  // Sets this module's path and its children's ("blocks.0.attn").
  void set_path(const std::string& path);
  const std::string& path() const { return path_; }
  uint32_t path_id() const { return path_id_; }
  const std::vector<std::pair<std::string, std::shared_ptr<Module>>>& children() const { return children_; }
  // Replaces the child `name` (LoRA wrapping a projection in place).
  void replace_child(const std::string& name, std::shared_ptr<Module> m) { replace_module(name, std::move(m)); }
  const std::vector<std::pair<std::string, Tensor>>& own_parameters() const { return params_; }
  const std::vector<std::pair<std::string, Tensor>>& own_buffers() const { return buffers_; }

 protected:
  void register_module(const std::string& name, std::shared_ptr<Module> m);
  void register_parameter(const std::string& name, const Tensor& p);
  void register_buffer(const std::string& name, const Tensor& b);
  void replace_module(const std::string& name, std::shared_ptr<Module> m);
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> children_;
  std::vector<std::pair<std::string, Tensor>> params_;
  std::vector<std::pair<std::string, Tensor>> buffers_;
  std::string path_;
  uint32_t path_id_ = 0;

 private:
  void collect_named(const std::string& prefix, std::vector<std::pair<std::string, Tensor>>& out,
                     std::vector<const TensorImpl*>& seen) const;
  void apply_dtype(DType dtype, std::vector<const TensorImpl*>& done);
};

// A parameter made now, under this module's path, tagged as a parameter.
Tensor new_parameter(const Shape& shape, DType dtype, const char* op);

}  // namespace vramlab::engine
