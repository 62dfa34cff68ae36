// The CUDA kernels the Hugging Face models add (kernels/hf_ops.cu, grouped-query heads in
// the attention kernels, grouped_mm through cuBLAS) against the CPU reference, op by op
// on the same random inputs, outputs poisoned with NaN first. Skips without a GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <vector>

#include "allocator/caching_allocator.h"
#include "device/device.h"
#include "engine/backends/allocator_memory.h"
#include "engine/backends/backend.h"
#include "engine/core/context.h"
#include "engine/ops/ops.h"
#ifdef VRAMLAB_HAVE_CUDA
#include "engine/backends/cuda/cuda_backend.h"
#endif

namespace vramlab::engine {
namespace {

#ifdef VRAMLAB_HAVE_CUDA

class EngineCudaHfOps : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    auto be = make_cuda_backend(&why);
    if (!be) GTEST_SKIP() << "no CUDA backend: " << why;
    gpu_be_ = std::static_pointer_cast<cuda::CudaBackend>(be);
    device_ = std::shared_ptr<Device>(open_device("cuda:" + std::to_string(gpu_be_->ordinal())));
    alloc_ = std::make_shared<alloc::CachingAllocator>(device_);
    gpu_mem_ = std::make_unique<AllocatorMemory>(alloc_);
    gpu_ = std::make_unique<EngineContext>(be, gpu_mem_.get(), device_->info());
    cpu_ = std::make_unique<EngineContext>(make_cpu_backend(), &cpu_mem_, DeviceInfo{});
  }
  Backend& cpu() { return cpu_->backend(); }
  cuda::CudaBackend& gpu() { return *gpu_be_; }

  Tensor cpu_randn(const Shape& s, DType dt = DType::Float32) {
    ContextGuard g(*cpu_);
    return randn(s, dt);
  }
  Tensor cpu_empty(const Shape& s, DType dt) {
    ContextGuard g(*cpu_);
    Tensor t = empty(s, dt);
    cpu().fill(t, 0.0);
    return t;
  }
  Tensor to_gpu(const Tensor& c) {
    ContextGuard g(*gpu_);
    Tensor t = empty(c.sizes(), c.dtype());
    gpu().copy_from_host(t, c.data_ptr(), c.nbytes());
    return t;
  }
  Tensor gpu_poisoned(const Shape& s, DType dt) {
    ContextGuard g(*gpu_);
    Tensor t = empty(s, dt);
    gpu().fill(t, dt == DType::Int64 ? -7 : std::numeric_limits<double>::quiet_NaN());
    return t;
  }
  std::vector<uint8_t> gpu_bytes(const Tensor& t) {
    std::vector<uint8_t> b(t.nbytes());
    gpu().copy_to_host(b.data(), t, b.size());
    return b;
  }
  std::vector<double> gpu_values(const Tensor& t) {
    auto b = gpu_bytes(t);
    ContextGuard g(*cpu_);
    Tensor h = empty(t.sizes(), t.dtype());
    std::memcpy(h.data_ptr(), b.data(), b.size());
    return h.to_vector();
  }
  // ||gpu - cpu|| / ||cpu||
  double rel_err(const Tensor& g, const Tensor& c) {
    auto a = gpu_values(g), b = c.to_vector();
    double num = 0, den = 0;
    for (size_t i = 0; i < b.size(); ++i) {
      if (!std::isfinite(a[i])) return INFINITY;
      num += (a[i] - b[i]) * (a[i] - b[i]);
      den += b[i] * b[i];
    }
    return std::sqrt(num / std::max(den, 1e-30));
  }

  std::shared_ptr<cuda::CudaBackend> gpu_be_;
  std::shared_ptr<Device> device_;
  std::shared_ptr<alloc::CachingAllocator> alloc_;
  std::unique_ptr<AllocatorMemory> gpu_mem_;
  std::unique_ptr<EngineContext> gpu_;
  RoundingMemory cpu_mem_;
  std::unique_ptr<EngineContext> cpu_;
};

TEST_F(EngineCudaHfOps, DropoutMasksAreTheCpuReferencesBytes) {
  Tensor x = cpu_randn({37, 129});
  Tensor co = cpu_empty({37, 129}, DType::Float32), cm = cpu_empty({(37 * 129 + 1) / 2}, DType::Float16);
  cpu().dropout(co, cm, x, 0.1, 42);
  Tensor go = gpu_poisoned({37, 129}, DType::Float32), gm = gpu_poisoned({(37 * 129 + 1) / 2}, DType::Float16);
  gpu().dropout(go, gm, to_gpu(x), 0.1, 42);
  auto gb = gpu_bytes(gm);
  EXPECT_EQ(std::memcmp(gb.data(), cm.data_ptr(), size_t(37 * 129)), 0);
  EXPECT_LT(rel_err(go, co), 1e-6);
  Tensor g = cpu_randn({37, 129});
  Tensor cb = cpu_empty({37, 129}, DType::Float32), gbk = gpu_poisoned({37, 129}, DType::Float32);
  cpu().dropout_backward(cb, g, cm, 1 / 0.9);
  gpu().dropout_backward(gbk, to_gpu(g), gm, 1 / 0.9);
  EXPECT_LT(rel_err(gbk, cb), 1e-6);
}

// Grouped-query attention (8 query heads over 2 kv heads) through the tiled kernels
// (head dim 64, 128) and the one-warp fallback (head dim 40), and with dropout.
TEST_F(EngineCudaHfOps, GroupedQueryAttentionAndAttentionDropoutMatchCpu) {
  for (int64_t D : {64, 128, 40})
    for (DType dt : {DType::Float32, DType::BFloat16})
      for (double p : {0.0, 0.2}) {
        SCOPED_TRACE("D " + std::to_string(D) + " " + dtype_name(dt) + " p " + std::to_string(p));
        const int64_t B = 2, H = 8, Hk = 2, S = 70;
        Tensor q = cpu_randn({B, H, S, D}, dt), k = cpu_randn({B, Hk, S, D}, dt), v = cpu_randn({B, Hk, S, D}, dt),
               dout = cpu_randn({B, H, S, D}, dt);
        const double scale = 1 / std::sqrt(double(D));
        Tensor co = cpu_empty({B, H, S, D}, dt), cl = cpu_empty({B, H, S}, DType::Float32);
        Tensor go = gpu_poisoned({B, H, S, D}, dt), gl = gpu_poisoned({B, H, S}, DType::Float32);
        Tensor gq = to_gpu(q), gk = to_gpu(k), gv = to_gpu(v);
        if (p > 0) {
          cpu().attention_dropout(co, cl, q, k, v, true, scale, p, 7);
          gpu().attention_dropout(go, gl, gq, gk, gv, true, scale, p, 7);
        } else {
          cpu().attention(co, &cl, q, k, v, true, scale);
          gpu().attention(go, &gl, gq, gk, gv, true, scale);
        }
        const double tol = dt == DType::Float32 ? 1e-4 : 2e-2;
        EXPECT_LT(rel_err(go, co), tol);
        EXPECT_LT(rel_err(gl, cl), tol);
        Tensor cdq = cpu_empty({B, H, S, D}, dt), cdk = cpu_empty({B, Hk, S, D}, dt),
               cdv = cpu_empty({B, Hk, S, D}, dt);
        Tensor gdq = gpu_poisoned({B, H, S, D}, dt), gdk = gpu_poisoned({B, Hk, S, D}, dt),
               gdv = gpu_poisoned({B, Hk, S, D}, dt);
        // the backward from the CPU's forward results on both, so only the backward differs
        Tensor go2 = to_gpu(co), gl2 = to_gpu(cl), gdo = to_gpu(dout);
        if (p > 0) {
          cpu().attention_dropout_backward(cdq, cdk, cdv, dout, q, k, v, co, cl, true, scale, p, 7);
          gpu().attention_dropout_backward(gdq, gdk, gdv, gdo, gq, gk, gv, go2, gl2, true, scale, p, 7);
        } else {
          cpu().attention_backward(cdq, cdk, cdv, dout, q, k, v, co, cl, true, scale, {});
          gpu().attention_backward(gdq, gdk, gdv, gdo, gq, gk, gv, go2, gl2, true, scale, {});
        }
        EXPECT_LT(rel_err(gdq, cdq), tol * 2);
        EXPECT_LT(rel_err(gdk, cdk), tol * 2);
        EXPECT_LT(rel_err(gdv, cdv), tol * 2);
      }
}

TEST_F(EngineCudaHfOps, SoftmaxTopkAndTheRoutingIndicesMatchCpu) {
  const int64_t N = 300, E = 8, K = 2;
  Tensor x = cpu_randn({N, E});
  Tensor cs = cpu_empty({N, E}, DType::Float32), gs = gpu_poisoned({N, E}, DType::Float32);
  cpu().softmax(cs, x);
  gpu().softmax(gs, to_gpu(x));
  EXPECT_LT(rel_err(gs, cs), 1e-6);
  Tensor g = cpu_randn({N, E});
  Tensor cb = cpu_empty({N, E}, DType::Float32), gb = gpu_poisoned({N, E}, DType::Float32);
  cpu().softmax_backward(cb, g, cs);
  gpu().softmax_backward(gb, to_gpu(g), to_gpu(cs));
  EXPECT_LT(rel_err(gb, cb), 1e-5);
  Tensor cv = cpu_empty({N, K}, DType::Float32), ci = cpu_empty({N, K}, DType::Int64);
  Tensor gv = gpu_poisoned({N, K}, DType::Float32), gi = gpu_poisoned({N, K}, DType::Int64);
  cpu().topk_rows(cv, ci, cs, K);
  gpu().topk_rows(gv, gi, to_gpu(cs), K);
  EXPECT_EQ(gpu_values(gi), ci.to_vector());
  EXPECT_LT(rel_err(gv, cv), 1e-7);
  Tensor src = cpu_randn({N, K});
  Tensor csc = cpu_empty({N, E}, DType::Float32), gsc = to_gpu(cpu_empty({N, E}, DType::Float32));
  cpu().scatter_rows(csc, src, ci);
  gpu().scatter_rows(gsc, to_gpu(src), to_gpu(ci));
  EXPECT_LT(rel_err(gsc, csc), 1e-7);
  // sort the flattened expert ids, their token rows, the inverse, the offsets
  Tensor ids = ci.view({N * K});
  Tensor csv = cpu_empty({N * K}, DType::Int64), cp = cpu_empty({N * K}, DType::Int64);
  Tensor gsv = gpu_poisoned({N * K}, DType::Int64), gp = gpu_poisoned({N * K}, DType::Int64);
  cpu().sort_int64(csv, cp, ids);
  gpu().sort_int64(gsv, gp, to_gpu(ids));
  EXPECT_EQ(gpu_values(gsv), csv.to_vector());
  EXPECT_EQ(gpu_values(gp), cp.to_vector());
  Tensor cq = cpu_empty({N * K}, DType::Int64), gq = gpu_poisoned({N * K}, DType::Int64);
  cpu().index_div(cq, cp, K);
  gpu().index_div(gq, to_gpu(cp), K);
  EXPECT_EQ(gpu_values(gq), cq.to_vector());
  Tensor cinv = cpu_empty({N * K}, DType::Int64), ginv = gpu_poisoned({N * K}, DType::Int64);
  cpu().invert_permutation(cinv, cp);
  gpu().invert_permutation(ginv, to_gpu(cp));
  EXPECT_EQ(gpu_values(ginv), cinv.to_vector());
  Tensor cc = cpu_empty({E}, DType::Float32), co = cpu_empty({E}, DType::Float32);
  Tensor gc = gpu_poisoned({E}, DType::Float32), goff = gpu_poisoned({E}, DType::Float32);
  cpu().group_offsets(cc, co, csv);
  gpu().group_offsets(gc, goff, to_gpu(csv));
  EXPECT_EQ(std::memcmp(gpu_bytes(goff).data(), co.data_ptr(), size_t(E) * 4), 0);
  EXPECT_EQ(std::memcmp(gpu_bytes(gc).data(), cc.data_ptr(), size_t(E) * 4), 0);
  EXPECT_EQ(static_cast<int32_t*>(co.data_ptr())[E - 1], N * K);
}

TEST_F(EngineCudaHfOps, GroupedMmMatchesCpuInBothLayouts) {
  const int64_t E = 4, S = 50, Kd = 32, Nd = 48;
  // groups of 10, 0, 25, 15 rows
  std::vector<int32_t> ends = {10, 10, 35, 50};
  Tensor offs = cpu_empty({E}, DType::Float32);
  std::memcpy(offs.data_ptr(), ends.data(), ends.size() * 4);
  Tensor goffs = to_gpu(offs);
  for (DType dt : {DType::Float32, DType::BFloat16}) {
    SCOPED_TRACE(dtype_name(dt));
    const double tol = dt == DType::Float32 ? 1e-3 : 2e-2;  // cuBLAS may use TF32-free fp32; bf16 rounding
    Tensor a = cpu_randn({S, Kd}, dt), b = cpu_randn({E, Kd, Nd}, dt);
    Tensor co = cpu_empty({S, Nd}, dt), go = gpu_poisoned({S, Nd}, dt);
    cpu().grouped_mm(co, a, b, offs);
    gpu().grouped_mm(go, to_gpu(a), to_gpu(b), goffs);
    EXPECT_LT(rel_err(go, co), tol);
    // the weight gradient's layout: out[g] = a^T[:, group] @ grad[group]
    Tensor grad = cpu_randn({S, Nd}, dt);
    Tensor cw = cpu_empty({E, Kd, Nd}, dt), gw = gpu_poisoned({E, Kd, Nd}, dt);
    cpu().grouped_mm(cw, a.t(), grad, offs);
    Tensor ga = to_gpu(a);
    gpu().grouped_mm(gw, ga.t(), to_gpu(grad), goffs);
    EXPECT_LT(rel_err(gw, cw), tol);
  }
}

#endif  // VRAMLAB_HAVE_CUDA

}  // namespace
}  // namespace vramlab::engine
