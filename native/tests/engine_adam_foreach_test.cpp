// Adam's foreach path through Backend::adam_foreach: on the CPU the default (per-tensor
// kernels) must give exactly what the single-tensor path gives; on a GPU the fused
// multi-tensor kernel must give what the unfused kernels give, with the same memory
// readings after every step (skips without a GPU).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "allocator/caching_allocator.h"
#include "engine/backends/allocator_memory.h"
#include "engine/backends/backend.h"
#include "engine/core/context.h"
#include "engine/core/grad_mode.h"
#include "engine/ops/ops.h"
#include "engine/optim/optimizer.h"
#include "tests/engine_test_util.h"
#ifdef VRAMLAB_HAVE_CUDA
#include "engine/backends/cuda/cuda_backend.h"
#endif

namespace vramlab::engine {
namespace {

// Odd sizes (vector tails), a multi-chunk tensor and a scalar-sized one.
const std::vector<Shape> kShapes = {{33, 17}, {5}, {4096 * 3 + 7}, {64, 64}, {1}};

// Parameters and per-step gradients from one seed, as CPU value vectors.
struct Problem {
  std::vector<std::vector<double>> init;
  std::vector<std::vector<std::vector<double>>> grads;  // [step][param]
};

Problem make_problem(int steps) {
  enginetest::EngineSession cpu(true);
  cpu.ctx->manual_seed(7);
  Problem p;
  for (const Shape& s : kShapes) p.init.push_back(randn(s).to_vector());
  for (int k = 0; k < steps; ++k) {
    p.grads.emplace_back();
    for (const Shape& s : kShapes) p.grads.back().push_back(randn(s).to_vector());
  }
  return p;
}

using Upload = std::function<void(const Tensor&, const std::vector<double>&)>;
using Download = std::function<std::vector<double>(const Tensor&)>;

// Runs `steps` Adam steps in the current context; returns the final parameter values and
// the memory reading (allocated, peak) after each step.
std::pair<std::vector<std::vector<double>>, std::vector<std::pair<int64_t, int64_t>>> run_adam(
    const Problem& pb, AdamOptions o, MemoryBackend& mem, const Upload& up, const Download& down) {
  std::vector<Tensor> params;
  for (size_t i = 0; i < kShapes.size(); ++i) {
    Tensor t = empty(kShapes[i]);
    up(t, pb.init[i]);
    t.requires_grad_(true);
    params.push_back(t);
  }
  Adam opt(params, o);
  std::vector<std::pair<int64_t, int64_t>> readings;
  for (const auto& gs : pb.grads) {
    for (size_t i = 0; i < params.size(); ++i) {
      Tensor g = empty(kShapes[i]);
      up(g, gs[i]);
      params[i].set_grad(g);
    }
    opt.step();
    opt.zero_grad(true);
    readings.emplace_back(mem.memory_allocated(), mem.max_memory_allocated());
  }
  std::vector<std::vector<double>> out;
  for (const Tensor& p : params) out.push_back(down(p));
  return {out, readings};
}

void cpu_upload(const Tensor& t, const std::vector<double>& v) {
  auto* p = static_cast<float*>(t.data_ptr());
  for (size_t i = 0; i < v.size(); ++i) p[i] = float(v[i]);
}
std::vector<double> cpu_download(const Tensor& t) { return t.to_vector(); }

TEST(EngineAdamForeach, DefaultKernelsEqualTheSingleTensorPathOnTheCpu) {
  Problem pb = make_problem(3);
  for (bool adamw : {false, true}) {
    AdamOptions o = adamw ? adamw_options(1e-2, 1e-2) : AdamOptions{};
    o.lr = 1e-2;
    enginetest::EngineSession a(true), b(true);
    o.foreach = true;
    auto fe = [&] {
      ContextGuard g(*a.ctx);
      return run_adam(pb, o, *a.memory, cpu_upload, cpu_download);
    }();
    o.foreach = false;
    auto st = [&] {
      ContextGuard g(*b.ctx);
      return run_adam(pb, o, *b.memory, cpu_upload, cpu_download);
    }();
    ASSERT_EQ(fe.first.size(), st.first.size());
    for (size_t i = 0; i < fe.first.size(); ++i) {
      EXPECT_EQ(fe.first[i], st.first[i]) << (adamw ? "adamw" : "adam") << " param " << i;
      EXPECT_NE(fe.first[i], pb.init[i]) << "the step changed nothing";
    }
  }
}

#ifdef VRAMLAB_HAVE_CUDA
TEST(EngineAdamForeach, FusedCudaKernelEqualsTheUnfusedKernelsWithTheSameMemory) {
  std::string why;
  auto be = make_cuda_backend(&why);
  if (!be) GTEST_SKIP() << "no CUDA backend: " << why;
  auto* cb = dynamic_cast<cuda::CudaBackend*>(be.get());
  ASSERT_NE(cb, nullptr);
  Problem pb = make_problem(4);
  auto up = [&](const Tensor& t, const std::vector<double>& v) {
    std::vector<float> f(v.begin(), v.end());
    cb->copy_from_host(t, f.data(), f.size() * sizeof(float));
  };
  auto down = [&](const Tensor& t) {
    std::vector<float> f(size_t(t.numel()));
    cb->copy_to_host(f.data(), t, f.size() * sizeof(float));
    return std::vector<double>(f.begin(), f.end());
  };
  for (bool adamw : {false, true}) {
    AdamOptions o = adamw ? adamw_options(1e-2, 1e-2) : AdamOptions{};
    o.lr = 1e-2;
    std::vector<std::vector<double>> values[2];
    std::vector<std::pair<int64_t, int64_t>> readings[2];
    for (int fused = 0; fused < 2; ++fused) {
      cuda::CudaBackend::Tuning t;
      t.fused_adam = fused == 1;
      cb->set_tuning(t);
      std::shared_ptr<Device> dev(open_device("cuda:" + std::to_string(cb->ordinal())));
      auto alloc = std::make_shared<alloc::CachingAllocator>(dev);
      AllocatorMemory mem(alloc);
      EngineContext ctx(be, &mem, dev->info());
      ContextGuard g(ctx);
      std::tie(values[fused], readings[fused]) = run_adam(pb, o, mem, up, down);
      cb->synchronize();
    }
    cb->set_tuning(cuda::CudaBackend::Tuning{});
    EXPECT_EQ(readings[1], readings[0]) << "the fused kernel changed memory";
    for (size_t i = 0; i < kShapes.size(); ++i) {
      ASSERT_EQ(values[1][i].size(), values[0][i].size());
      double worst = 0;
      for (size_t k = 0; k < values[0][i].size(); ++k)
        worst = std::max(worst, std::abs(values[1][i][k] - values[0][i][k]));
      // Same float operations in the same order: equal, up to a contraction the
      // compiler may have chosen differently (a few ulps of the update).
      EXPECT_LE(worst, 1e-6) << (adamw ? "adamw" : "adam") << " param " << i;
      EXPECT_NE(values[1][i], pb.init[i]) << "the fused step changed nothing";
    }
  }
}
#endif

}  // namespace
}  // namespace vramlab::engine
