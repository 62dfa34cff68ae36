#pragma once
// nn layers: Module (named parameters, module paths for allocation tags), Linear with
// PyTorch's default init, ReLU, GELU, Sequential, the residual seed Block, and the two
// model families of the parity protocol.
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/core/tensor.h"

namespace vramlab::engine {

class Module {
 public:
  virtual ~Module() = default;
  virtual std::string type_name() const = 0;
  virtual Tensor forward(const Tensor& x) = 0;
  Tensor operator()(const Tensor& x);  // forward under this module's path

  std::vector<Tensor> parameters() const;
  std::vector<std::pair<std::string, Tensor>> named_parameters() const;
  int64_t num_parameters() const;
  void zero_grad(bool set_to_none = true);
  // Sets this module's path and its children's ("0.net.2").
  void set_path(const std::string& path);
  const std::string& path() const { return path_; }
  const std::vector<std::pair<std::string, std::shared_ptr<Module>>>& children() const { return children_; }

 protected:
  void register_module(const std::string& name, std::shared_ptr<Module> m);
  void register_parameter(const std::string& name, const Tensor& p);
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> children_;
  std::vector<std::pair<std::string, Tensor>> params_;
  std::string path_;
  uint32_t path_id_ = 0;
};

class Linear : public Module {
 public:
  // kaiming_uniform_(a=sqrt(5)) weight, uniform(-1/sqrt(in), 1/sqrt(in)) bias.
  Linear(int64_t in_features, int64_t out_features, bool bias = true, DType dtype = DType::Float32);
  std::string type_name() const override { return "Linear"; }
  Tensor forward(const Tensor& x) override;
  Tensor weight, bias;
};

class ReLU : public Module {
 public:
  std::string type_name() const override { return "ReLU"; }
  Tensor forward(const Tensor& x) override;
};

class GELU : public Module {
 public:
  explicit GELU(bool tanh = false) : tanh_(tanh) {}
  std::string type_name() const override { return "GELU"; }
  Tensor forward(const Tensor& x) override;

 private:
  bool tanh_;
};

class Sequential : public Module {
 public:
  Sequential() = default;
  explicit Sequential(std::vector<std::shared_ptr<Module>> mods);
  std::string type_name() const override { return "Sequential"; }
  Tensor forward(const Tensor& x) override;
  void push_back(std::shared_ptr<Module> m);
  size_t size() const { return children_.size(); }
  std::shared_ptr<Module> at(size_t i) const { return children_.at(i).second; }
};

// The seed residual block: net = Linear, ReLU, Linear, ReLU; out = net(x) + x.
class ResidualBlock : public Module {
 public:
  explicit ResidualBlock(int64_t dim, DType dtype = DType::Float32);
  std::string type_name() const override { return "Block"; }
  Tensor forward(const Tensor& x) override;

 private:
  std::shared_ptr<Sequential> net_;
};

// Checkpoint policy over a Sequential of blocks: consecutive blocks are grouped into
// segments; each segment runs under non-reentrant checkpointing.
enum class CheckpointMode { None, Block, Sqrt, EveryK };
std::vector<std::pair<size_t, size_t>> checkpoint_segments(size_t depth, CheckpointMode mode, size_t k);

class CheckpointedSequential : public Module {
 public:
  CheckpointedSequential(std::shared_ptr<Sequential> blocks, CheckpointMode mode, size_t k = 1);
  std::string type_name() const override { return "Sequential"; }
  Tensor forward(const Tensor& x) override;
  void set_mode(CheckpointMode mode, size_t k = 1);

 private:
  std::shared_ptr<Sequential> blocks_;
  CheckpointMode mode_;
  size_t k_;
};

// mlp: Linear(in, hidden), ReLU, (depth-1) x [Linear(hidden, hidden), ReLU], Linear(hidden, out).
std::shared_ptr<Sequential> make_mlp(int64_t in, int64_t hidden, int64_t depth, int64_t out,
                                     DType dtype = DType::Float32);
// residual: depth seed blocks of width dim.
std::shared_ptr<Sequential> make_residual(int64_t dim, int64_t depth, DType dtype = DType::Float32);

}  // namespace vramlab::engine
