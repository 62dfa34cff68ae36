#pragma once
// The model families' builders (one file each in this folder, listed in registry.cpp)
// and the stacks the older tests and benchmarks build directly.
#include <memory>

#include "engine/models/model.h"
#include "engine/nn/sequential.h"

namespace vramlab::engine {

std::unique_ptr<Model> build_mlp(const KindArgs& a);
std::unique_ptr<Model> build_residual(const KindArgs& a);
std::unique_ptr<Model> build_gpt(const KindArgs& a);
std::unique_ptr<Model> build_llama(const KindArgs& a);

// mlp: Linear(in, hidden), ReLU, (depth-1) x [Linear(hidden, hidden), ReLU], Linear(hidden, out).
std::shared_ptr<Sequential> make_mlp(int64_t in, int64_t hidden, int64_t depth, int64_t out,
                                     DType dtype = DType::Float32);
// The seed residual block: net = Linear, ReLU, Linear, ReLU; out = net(x) + x.
class ResidualBlock : public Module {
 public:
  explicit ResidualBlock(int64_t dim, DType dtype = DType::Float32);
  std::string type_name() const override { return "Block"; }
  Tensor forward(const Tensor& x) override;

 private:
  std::shared_ptr<Sequential> net_;
};
std::shared_ptr<Sequential> make_residual(int64_t dim, int64_t depth, DType dtype = DType::Float32);

// A Sequential of blocks run under a checkpoint policy (tests, benchmarks).
class CheckpointedSequential : public Module {
 public:
  CheckpointedSequential(std::shared_ptr<Sequential> blocks, const CheckpointSpec& c);
  std::string type_name() const override { return "Sequential"; }
  Tensor forward(const Tensor& x) override;

 private:
  std::shared_ptr<Sequential> blocks_;
  CheckpointSpec ckpt_;
};

}  // namespace vramlab::engine
