// The CUDA backend against the CPU reference backend, op by op on random inputs
// (outputs poisoned with NaN first), plus real training runs and memory parity with
// the simulated device. Everything skips cleanly where no GPU (or no CUDA build) is.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "allocator/caching_allocator.h"
#include "device/device.h"
#include "engine/autocast/autocast.h"
#include "engine/backends/allocator_memory.h"
#include "engine/backends/backend.h"
#include "engine/core/context.h"
#include "engine/core/grad_mode.h"
#include "engine/models/family.h"
#include "engine/nn/nn.h"
#include "engine/ops/ops.h"
#include "engine/optim/optimizer.h"
#include "engine/experiment/experiment.h"
#include "spec_util.h"
#ifdef VRAMLAB_HAVE_CUDA
#include "engine/backends/cuda/cuda_backend.h"
#include "engine/backends/cuda/pointwise_args.h"
#include "engine/backends/cuda/reduce_plan.h"
#endif

namespace vramlab::engine {
namespace {

// ---------------------------------------------------------------------------------
// A teacher-student regression task, shared by the CPU check (runs everywhere: the
// task itself is learnable in 200 Adam steps) and the GPU runs (fp32 and bf16).
struct TrainResult {
  double first = 0, last = 0;
};

TrainResult train_teacher_student(bool bf16, int steps = 200) {
  const int64_t in = 8, teacher_hidden = 16, student_hidden = 32, out = 2, batch = 64;
  auto& ctx = current_context();
  ctx.manual_seed(1234);
  auto teacher = make_mlp(in, teacher_hidden, 1, out);  // a fixed random function
  auto student = make_mlp(in, student_hidden, 2, out);
  AdamOptions o;
  o.lr = 1e-2;
  Adam opt(student->parameters(), o);
  TrainResult r;
  for (int step = 0; step < steps; ++step) {
    Tensor x = randn({batch, in});
    Tensor y;
    {
      NoGradGuard ng;
      y = (*teacher)(x);
    }
    Tensor pred;
    if (bf16) {
      AutocastGuard ag(true, DType::BFloat16);
      pred = (*student)(x);
    } else {
      pred = (*student)(x);
    }
    Tensor loss = mse_loss(pred.float_(), y);
    double v = loss.item();
    if (step < 5) r.first += v / 5;  // mean of the first and last five steps
    if (step >= steps - 5) r.last += v / 5;
    loss.backward();
    opt.step();
    opt.zero_grad(true);
  }
  return r;
}

TEST(EngineCudaTask, TeacherStudentIsLearnableOnTheCpuReference) {
  RoundingMemory mem;
  EngineContext ctx(make_cpu_backend(), &mem, DeviceInfo{});
  ContextGuard g(ctx);
  for (bool bf16 : {false, true}) {
    TrainResult r = train_teacher_student(bf16);
    EXPECT_GT(r.first, 0);
    EXPECT_LT(r.last, r.first / 10) << (bf16 ? "bf16" : "fp32") << ": first " << r.first << " last " << r.last;
  }
}

TEST(EngineCuda, FactoryReturnsNullWithAReasonOrABackend) {
  std::string why;
  auto be = make_cuda_backend(&why);
  if (!be) {
    EXPECT_FALSE(why.empty());
    GTEST_SKIP() << "no CUDA backend here: " << why;
  }
  EXPECT_STREQ(be->name(), "cuda");
  EXPECT_TRUE(be->has_data());
  EXPECT_TRUE(be->models_cuda());
}

#ifdef VRAMLAB_HAVE_CUDA

// ---------------------------------------------------------------------------------
// The host-side planning of the CUDA kernels, checked without a GPU: the index math
// the kernels run (coalesced dims, multiply-high division, reduction split) is
// replayed here on CPU tensors and must reach exactly the elements it should.

uint32_t host_fastdiv(const cuda::FastDiv& f, uint32_t n) {
  return uint32_t(((uint64_t(n) * f.m >> 32) + n) >> f.shift);
}

TEST(EngineCudaPlan, FastDivisionIsExact) {
  for (uint32_t d : {1u, 2u, 3u, 7u, 10u, 129u, 1000u, 4096u, 65537u, 1u << 30, (1u << 31) - 1})
    for (uint32_t n : {0u, 1u, d - 1, d, d + 1, 12345u, 999999u, (1u << 31) - 1}) {
      auto f = cuda::make_fastdiv(d);
      ASSERT_EQ(host_fastdiv(f, n), n / d) << n << " / " << d;
    }
}

class EngineCudaPlanOnCpu : public ::testing::Test {
 protected:
  void SetUp() override { guard_ = std::make_unique<ContextGuard>(ctx_); }
  void TearDown() override { guard_.reset(); }
  RoundingMemory mem_;
  EngineContext ctx_{make_cpu_backend(), &mem_, DeviceInfo{}};
  std::unique_ptr<ContextGuard> guard_;
};

// Element offset (relative to data_ptr) of logical index `idx` of t.
int64_t natural_offset(const Tensor& t, int64_t idx) {
  int64_t off = 0;
  for (int64_t d = t.dim() - 1; d >= 0; --d) {
    int64_t s = t.sizes()[size_t(d)];
    off += (idx % s) * t.strides()[size_t(d)];
    idx /= s;
  }
  return off;
}

TEST_F(EngineCudaPlanOnCpu, PointwisePlanVisitsEveryElementWithMatchingInputs) {
  Tensor base = randn({6, 5, 8});
  Tensor out_t = randn({8, 5, 6});
  struct Case {
    Tensor out, in;
    bool fast;
    int ndim;
  } cases[] = {
      {randn({6, 5, 8}), base, true, 1},                                                // dense: one dim
      {randn({6, 5, 8}), base.transpose(0, 2).contiguous().transpose(0, 2), false, 3},  // permuted input
      {out_t.transpose(0, 2), base, false, 3},                                          // permuted output
      {randn({6, 5, 8}), expand_to(randn({8}), {6, 5, 8}), false, 2},                   // row broadcast
      {randn({6, 5, 8}), expand_to(randn({}), {6, 5, 8}), true, 1},                     // scalar broadcast
      {randn({6, 5, 4}), base.slice(2, 2, 6), false, 2},                                // offset slice
  };
  for (auto& c : cases) {
    auto plan = cuda::plan_pointwise(c.out, {&c.in}, "test");
    const auto& a = plan.args;
    EXPECT_EQ(plan.fast, c.fast);
    EXPECT_EQ(a.ndim, c.ndim);
    ASSERT_EQ(a.numel, c.out.numel());
    std::map<int64_t, int64_t> expect;  // out offset -> in offset
    for (int64_t i = 0; i < c.out.numel(); ++i) expect[natural_offset(c.out, i)] = natural_offset(c.in, i);
    std::map<int64_t, int> seen;
    for (int64_t idx = 0; idx < a.numel; ++idx) {
      uint32_t rem = uint32_t(idx);
      int64_t off_out = 0, off_in = 0;
      for (int d = a.ndim - 1; d >= 0; --d) {  // the kernels' 32-bit path
        uint32_t q = d > 0 ? host_fastdiv(a.div[d], rem) : 0;
        uint32_t cidx = d > 0 ? rem - q * uint32_t(a.sizes[d]) : rem;
        rem = q;
        off_out += int64_t(cidx) * a.out.strides[d];
        off_in += int64_t(cidx) * a.in[0].strides[d];
      }
      ASSERT_TRUE(expect.count(off_out)) << "offset " << off_out << " is not an element of out";
      EXPECT_EQ(off_in, expect[off_out]);
      seen[off_out]++;
    }
    EXPECT_EQ(seen.size(), expect.size());
    for (auto& [o, n] : seen) EXPECT_EQ(n, 1) << "element " << o << " visited " << n << " times";
    EXPECT_EQ(a.out.ptr, c.out.data_ptr());
    EXPECT_EQ(a.in[0].ptr, c.in.data_ptr());
  }
}

TEST_F(EngineCudaPlanOnCpu, ReducePlanSumsTheRightElements) {
  struct Case {
    Shape in, out;
    bool transposed;
    bool row;
  } cases[] = {{{64, 300}, {1, 300}, false, false},     {{64, 300}, {64, 1}, false, true},
               {{64, 300}, {1, 1}, false, true},        {{6, 50, 40}, {1, 50, 1}, false, true},
               {{6, 50, 40}, {6, 1, 40}, false, false}, {{300, 64}, {1, 300}, true, true},
               {{2048, 1024}, {1, 1}, false, true},     {{4096, 1024}, {1, 1024}, false, false}};
  std::vector<float> scratch(1 << 20);
  for (auto& c : cases) {
    Tensor in = rand_uniform(c.in, 0.5, 1.5);
    if (c.transposed) in = in.t();
    Tensor out = empty(c.out);
    auto plan = cuda::plan_sum_reduce(out, in, scratch.data(), int64_t(scratch.size()), 132);
    const auto& a = plan.args;
    EXPECT_EQ(plan.row, c.row) << shape_str(c.in) << " -> " << shape_str(c.out);
    ASSERT_GE(a.chunks, 1);
    ASSERT_LE(a.chunks * a.num_out, int64_t(scratch.size()));
    ASSERT_GE(a.chunks * a.chunk_len, a.num_red);
    ASSERT_LT((a.chunks - 1) * a.chunk_len, a.num_red) << "an empty chunk";
    // Replay: out[o] = sum over chunks c, r in chunk of in[kept(o) + red(r)].
    const float* src = static_cast<const float*>(in.data_ptr());
    auto kept = [&](int64_t o, const int64_t* strides) {
      int64_t off = 0;
      for (int d = a.out_ndim - 1; d >= 0; --d) {
        off += (o % a.out_sizes[d]) * strides[d];
        o /= a.out_sizes[d];
      }
      return off;
    };
    auto red = [&](int64_t r) {
      int64_t off = 0;
      for (int d = a.red_ndim - 1; d >= 0; --d) {
        off += (r % a.red_sizes[d]) * a.red_strides[d];
        r /= a.red_sizes[d];
      }
      return off;
    };
    Tensor ref = empty(c.out);
    ctx_.backend().sum_reduce(ref, in);
    const float* want = static_cast<const float*>(ref.data_ptr());
    for (int64_t o = 0; o < a.num_out; ++o) {
      double acc = 0;
      for (int64_t ch = 0; ch < a.chunks; ++ch)
        for (int64_t r = ch * a.chunk_len; r < std::min(a.num_red, (ch + 1) * a.chunk_len); ++r)
          acc += src[kept(o, a.out_in_strides) + red(r)];
      EXPECT_NEAR(acc, want[kept(o, a.out_out_strides)], 1e-3 * std::abs(acc)) << "output " << o;
    }
  }
}

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
const DType kFloatTypes[] = {DType::Float32, DType::Float16, DType::BFloat16};

double tol_for(DType t) { return t == DType::Float32 ? 1e-5 : 1e-2; }

// ||out - ref|| / ||ref||, with any NaN (an unwritten poisoned element) failing.
double rel_err(const std::vector<double>& out, const std::vector<double>& ref) {
  if (out.size() != ref.size()) return 1e30;
  double num = 0, den = 0;
  for (size_t i = 0; i < out.size(); ++i) {
    if (std::isnan(out[i]) != std::isnan(ref[i])) return 1e30;
    if (std::isnan(ref[i])) continue;
    num += (out[i] - ref[i]) * (out[i] - ref[i]);
    den += ref[i] * ref[i];
  }
  return den == 0 ? (num == 0 ? 0 : 1e30) : std::sqrt(num / den);
}

// Rounds float32 values to TF32 (10-bit mantissa, nearest even) in place.
void round_to_tf32(const Tensor& t) {
  auto* p = static_cast<uint32_t*>(t.data_ptr());
  for (int64_t i = 0; i < t.numel(); ++i) {
    uint32_t b = p[i];
    b += 0x0FFFu + ((b >> 13) & 1u);
    p[i] = b & ~0x1FFFu;
  }
}

class EngineCudaOps : public ::testing::Test {
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

  Backend& cpu_be() { return cpu_->backend(); }
  cuda::CudaBackend& gpu_be() { return *gpu_be_; }

  // Random CPU tensor: normal(0, 1), or uniform [lo, hi) when lo < hi.
  Tensor cpu_rand(const Shape& shape, DType dt, double lo = 0, double hi = 0) {
    ContextGuard g(*cpu_);
    return lo < hi ? rand_uniform(shape, lo, hi, dt) : randn(shape, dt);
  }
  Tensor cpu_empty(const Shape& shape, DType dt) {
    ContextGuard g(*cpu_);
    return empty(shape, dt);
  }
  // Uploads a contiguous CPU tensor; the copy has the same sizes, strides and dtype.
  Tensor to_gpu(const Tensor& c) {
    EXPECT_TRUE(c.is_contiguous());
    ContextGuard g(*gpu_);
    Tensor t = empty(c.sizes(), c.dtype());
    gpu_be().copy_from_host(t, c.data_ptr(), c.nbytes());
    return t;
  }
  Tensor gpu_poisoned(const Shape& shape, DType dt) {
    ContextGuard g(*gpu_);
    Tensor t = empty(shape, dt);
    gpu_be().fill(t, dt == DType::Int64 ? -7 : kNaN);
    return t;
  }
  // Values of any GPU view in logical (row-major) order.
  std::vector<double> values(const Tensor& t) {
    ContextGuard g(*gpu_);
    Tensor c = empty(t.sizes(), t.dtype());
    gpu_be().unary(UnaryOp::Copy, c, t, 0);
    std::vector<uint8_t> bytes(c.nbytes());
    gpu_be().copy_to_host(bytes.data(), c, bytes.size());
    ContextGuard g2(*cpu_);
    Tensor h = empty(c.sizes(), c.dtype());
    if (!bytes.empty()) std::memcpy(h.data_ptr(), bytes.data(), bytes.size());
    return h.to_vector();
  }
  std::vector<double> cpu_values(const Tensor& t) { return t.to_vector(); }
  // The backward's scratch as the engine allocates it for the flash backend
  // (ops/attention.cpp): dq_accum (B, S rounded to 128, H, D rounded to 32) and softmax_d
  // (B, H, S rounded), NaN-filled, as views over (B, H, S[, D]).
  Backend::AttentionScratch flash_scratch(int64_t B, int64_t H, int64_t S, int64_t D) {
    const int64_t Sr = (S + 127) / 128 * 128, Dr = (D + 31) / 32 * 32;
    Tensor acc = gpu_poisoned({B, Sr, H, Dr}, DType::Float32), rs = gpu_poisoned({B, H, Sr}, DType::Float32);
    return {make_view(acc, {B, H, S, D}, {Sr * H * Dr, Dr, H * Dr, 1}, 0),
            make_view(rs, {B, H, S}, {H * Sr, Sr, 1}, 0)};
  }
  // Grouped-query heads for the float64 reference, which attends with one key head per query
  // head: k or v (B, Hk, S, D) repeated over each group's Hq / Hk query heads ...
  Tensor repeat_heads(const Tensor& t, int64_t Hq) {
    const int64_t B = t.sizes()[0], Hk = t.sizes()[1], S = t.sizes()[2], D = t.sizes()[3], G = Hq / Hk;
    Tensor r = cpu_empty({B, Hq, S, D}, DType::Float64);
    for (int64_t h = 0; h < Hq; ++h)
      cpu_be().unary(UnaryOp::Copy, make_view(r, {B, S, D}, {Hq * S * D, D, 1}, h * S * D),
                     make_view(t, {B, S, D}, {Hk * S * D, D, 1}, (h / G) * S * D), 0);
    return r;
  }
  // ... and its float64 dK or dV (B, Hq, S, D) summed back over each group into (B, Hk, S, D).
  static std::vector<double> sum_over_groups(const Tensor& r, int64_t Hk) {
    const int64_t B = r.sizes()[0], Hq = r.sizes()[1], SD = r.sizes()[2] * r.sizes()[3], G = Hq / Hk;
    std::vector<double> acc(size_t(B * Hk * SD), 0.0);
    const auto* p = static_cast<const double*>(r.data_ptr());
    for (int64_t b = 0; b < B; ++b)
      for (int64_t h = 0; h < Hq; ++h)
        for (int64_t i = 0; i < SD; ++i) acc[size_t((b * Hk + h / G) * SD + i)] += p[(b * Hq + h) * SD + i];
    return acc;
  }
  // cuDNN's: one flat float workspace, the accumulator (B, H, S, D) first, then the row sums.
  Backend::AttentionScratch cudnn_scratch(int64_t B, int64_t H, int64_t S, int64_t D) {
    Tensor ws = gpu_poisoned({B * H * S * D + B * H * S + 64}, DType::Float32);
    return {make_view(ws, {B, H, S, D}, {H * S * D, S * D, D, 1}, 0),
            make_view(ws, {B, H, S}, {H * S, S, 1}, B * H * S * D)};
  }

  std::shared_ptr<cuda::CudaBackend> gpu_be_;
  std::shared_ptr<Device> device_;
  std::shared_ptr<alloc::CachingAllocator> alloc_;
  std::unique_ptr<AllocatorMemory> gpu_mem_;
  std::unique_ptr<EngineContext> gpu_;
  RoundingMemory cpu_mem_;
  std::unique_ptr<EngineContext> cpu_;
};

// An input made on the CPU, the same bytes on the GPU, and one view fn applied to both.
struct Pair {
  Tensor cpu, gpu;
};
using ViewFn = std::function<Tensor(const Tensor&)>;
Tensor identity(const Tensor& t) { return t; }

struct UnaryCase {
  UnaryOp op;
  double s;
  bool positive;  // domain: (0.5, 2.5)
};
const UnaryCase kUnary[] = {
    {UnaryOp::Copy, 0, false},         {UnaryOp::Neg, 0, false},         {UnaryOp::Relu, 0, false},
    {UnaryOp::Gelu, 0, false},         {UnaryOp::GeluTanh, 0, false},    {UnaryOp::Sqrt, 0, true},
    {UnaryOp::Exp, 0, false},          {UnaryOp::Log, 0, true},          {UnaryOp::Abs, 0, false},
    {UnaryOp::Square, 0, false},       {UnaryOp::Reciprocal, 0, true},   {UnaryOp::AddScalar, 0.75, false},
    {UnaryOp::MulScalar, -1.5, false}, {UnaryOp::DivScalar, 3.0, false}, {UnaryOp::RSubScalar, 2.0, false},
    {UnaryOp::PowScalar, 1.7, true},   {UnaryOp::Silu, 0, false},        {UnaryOp::Rsqrt, 0, true}};

TEST_F(EngineCudaOps, UnaryOpsMatchCpuOnContiguousAndStridedInputs) {
  struct Layout {
    Shape base;
    ViewFn view;
    const char* name;
  } layouts[] = {{{37, 129}, identity, "contiguous (odd size: vector tail)"},
                 {{4, 4096}, identity, "contiguous large"},
                 {{129, 37}, [](const Tensor& t) { return t.t(); }, "transposed"},
                 {{37, 258}, [](const Tensor& t) { return t.slice(1, 0, 258).slice(1, 1, 130); }, "offset slice"}};
  for (DType dt : kFloatTypes)
    for (const auto& c : kUnary)
      for (const auto& l : layouts) {
        Tensor in_c = c.positive ? cpu_rand(l.base, dt, 0.5, 2.5) : cpu_rand(l.base, dt);
        Tensor in_g = to_gpu(in_c);
        Tensor vc = l.view(in_c), vg = l.view(in_g);
        Tensor ref = cpu_empty(vc.sizes(), dt);
        cpu_be().unary(c.op, ref, vc, c.s);
        Tensor out = gpu_poisoned(vg.sizes(), dt);
        gpu_be().unary(c.op, out, vg, c.s);
        EXPECT_LE(rel_err(values(out), cpu_values(ref)), tol_for(dt))
            << unary_op_name(c.op) << " " << dtype_name(dt) << " " << l.name;
      }
}

struct BinaryCase {
  BinaryOp op;
  double s;
  bool b_positive;
};
const BinaryCase kBinary[] = {{BinaryOp::Add, 0.5, false},
                              {BinaryOp::Sub, 2.0, false},
                              {BinaryOp::Mul, 0, false},
                              {BinaryOp::Div, 0, true},
                              {BinaryOp::ThresholdBackward, 0, false},
                              {BinaryOp::GeluBackward, 0, false},
                              {BinaryOp::GeluTanhBackward, 0, false},
                              {BinaryOp::SqDiff, 0, false},
                              {BinaryOp::Lerp, 0.3, false},
                              {BinaryOp::Maximum, 0, false},
                              {BinaryOp::SiluBackward, 0, false}};

// 128 columns: broadcasts over rows take the 16-byte row-vector path.
TEST_F(EngineCudaOps, BinaryOpsMatchCpuWithBroadcastingAndMixedDtypes) {
  for (Shape shape : {Shape{33, 130}, Shape{12, 128}})
    for (DType dt : kFloatTypes)
      for (const auto& c : kBinary) {
        struct Variant {
          Shape b_shape;
          DType a_dt, b_dt;
          const char* name;
        } variants[] = {{shape, dt, dt, "same shape"},
                        {{1, shape[1]}, dt, dt, "row broadcast"},
                        {{shape[0], 1}, dt, dt, "column broadcast"},
                        {{}, dt, dt, "scalar broadcast"},
                        {shape, dt, DType::Float32, "mixed dtypes"}};
        for (const auto& v : variants) {
          Tensor a_c = cpu_rand(shape, v.a_dt);
          Tensor b_c = c.b_positive ? cpu_rand(v.b_shape, v.b_dt, 0.5, 2.5) : cpu_rand(v.b_shape, v.b_dt);
          Tensor a_g = to_gpu(a_c), b_g = to_gpu(b_c);
          DType out_dt = v.b_dt == DType::Float32 ? DType::Float32 : dt;
          Tensor ref = cpu_empty(shape, out_dt);
          cpu_be().binary(c.op, ref, a_c, expand_to(b_c, shape), c.s);
          Tensor out = gpu_poisoned(shape, out_dt);
          gpu_be().binary(c.op, out, a_g, expand_to(b_g, shape), c.s);
          EXPECT_LE(rel_err(values(out), cpu_values(ref)), tol_for(dt))
              << binary_op_name(c.op) << " " << dtype_name(dt) << " " << v.name;
        }
      }
}

TEST_F(EngineCudaOps, TernaryOpsMatchCpuIncludingInPlaceOptimizerForms) {
  const Shape shape{65, 67};
  struct Case {
    TernaryOp op;
    double s;
    const char* name;
  } cases[] = {{TernaryOp::Addcmul, 0.7, "addcmul"},
               {TernaryOp::Addcdiv, -0.3, "addcdiv"},
               {TernaryOp::MseBackward, 0.5, "mse_backward"}};
  for (DType dt : kFloatTypes)
    for (const auto& c : cases)
      for (bool in_place : {false, true}) {
        Tensor a_c = cpu_rand(shape, dt), b_c = cpu_rand(shape, dt), c_c = cpu_rand(shape, dt, 0.5, 2.5);
        Tensor a_g = to_gpu(a_c), b_g = to_gpu(b_c), c_g = to_gpu(c_c);
        Tensor ref = in_place ? a_c : cpu_empty(shape, dt);
        cpu_be().ternary(c.op, ref, a_c, b_c, c_c, c.s);
        Tensor out = in_place ? a_g : gpu_poisoned(shape, dt);
        gpu_be().ternary(c.op, out, a_g, b_g, c_g, c.s);
        EXPECT_LE(rel_err(values(out), cpu_values(ref)), tol_for(dt))
            << c.name << " " << dtype_name(dt) << (in_place ? " in place" : "");
      }
  // Scalar-broadcast third operand (mse backward's expanded grad).
  Tensor a_c = cpu_rand(shape, DType::Float32), b_c = cpu_rand(shape, DType::Float32);
  Tensor g_c = cpu_rand({}, DType::Float32, 0.5, 1.5);
  Tensor ref = cpu_empty(shape, DType::Float32);
  cpu_be().ternary(TernaryOp::MseBackward, ref, a_c, b_c, expand_to(g_c, shape), 0.25);
  Tensor out = gpu_poisoned(shape, DType::Float32);
  gpu_be().ternary(TernaryOp::MseBackward, out, to_gpu(a_c), to_gpu(b_c), expand_to(to_gpu(g_c), shape), 0.25);
  EXPECT_LE(rel_err(values(out), cpu_values(ref)), 1e-5);
}

TEST_F(EngineCudaOps, CastsAndCopiesAreBitExact) {
  const Shape shape{45, 77};
  for (DType from : kFloatTypes)
    for (DType to : kFloatTypes)
      for (bool transposed : {false, true}) {
        Tensor in_c = cpu_rand(transposed ? Shape{77, 45} : shape, from);
        Tensor in_g = to_gpu(in_c);
        Tensor vc = transposed ? in_c.t() : in_c, vg = transposed ? in_g.t() : in_g;
        Tensor ref = cpu_empty(shape, to);
        cpu_be().unary(UnaryOp::Copy, ref, vc, 0);
        Tensor out = gpu_poisoned(shape, to);
        gpu_be().unary(UnaryOp::Copy, out, vg, 0);
        EXPECT_EQ(values(out), cpu_values(ref))
            << dtype_name(from) << " -> " << dtype_name(to) << (transposed ? " transposed" : "");
      }
  // Broadcast copy (the bias prefill of addmm) and int64 <-> float conversions.
  Tensor bias_c = cpu_rand({77}, DType::Float32);
  Tensor ref = cpu_empty(shape, DType::Float32);
  cpu_be().unary(UnaryOp::Copy, ref, expand_to(bias_c, shape), 0);
  Tensor out = gpu_poisoned(shape, DType::Float32);
  gpu_be().unary(UnaryOp::Copy, out, expand_to(to_gpu(bias_c), shape), 0);
  EXPECT_EQ(values(out), cpu_values(ref));
  Tensor f_c = cpu_rand({1000}, DType::Float32, -50, 50);
  Tensor i_ref = cpu_empty({1000}, DType::Int64);
  cpu_be().unary(UnaryOp::Copy, i_ref, f_c, 0);
  Tensor i_out = gpu_poisoned({1000}, DType::Int64);
  gpu_be().unary(UnaryOp::Copy, i_out, to_gpu(f_c), 0);
  EXPECT_EQ(values(i_out), cpu_values(i_ref));
  Tensor back = gpu_poisoned({1000}, DType::Float32);
  gpu_be().unary(UnaryOp::Copy, back, i_out, 0);
  EXPECT_EQ(values(back), cpu_values(i_ref));
}

// Same-dtype copies whose innermost dim is contiguous on both sides go 16 bytes at a
// time: a (B, S, H, D) buffer seen as (B, H, S, D), a slice of columns, a 3-D gather.
TEST_F(EngineCudaOps, RowContiguousCopiesMoveWholeRows) {
  for (DType dt : kFloatTypes) {
    Tensor in_c = cpu_rand({3, 10, 4, 64}, dt), in_g = to_gpu(in_c);
    for (Tensor (*pick)(const Tensor&) : {
             +[](const Tensor& t) { return t.transpose(1, 2); },
             +[](const Tensor& t) { return t.slice(3, 8, 40); },
             +[](const Tensor& t) { return t.slice(1, 2, 9).transpose(0, 2); },
         }) {
      Tensor vc = pick(in_c), vg = pick(in_g);
      Tensor ref = cpu_empty(vc.sizes(), dt), out = gpu_poisoned(vg.sizes(), dt);
      cpu_be().unary(UnaryOp::Copy, ref, vc, 0);
      gpu_be().unary(UnaryOp::Copy, out, vg, 0);
      EXPECT_EQ(values(out), cpu_values(ref)) << dtype_name(dt) << " " << shape_str(vc.sizes());
    }
    // rotary's form: one half of the head dim times a (S, D/2) table broadcast over B, H
    Tensor tab_c = cpu_rand({10, 32}, dt), tab_g = to_gpu(tab_c);
    const Shape half{3, 4, 10, 32};
    Tensor a_c = in_c.transpose(1, 2).slice(3, 32, 64), a_g = in_g.transpose(1, 2).slice(3, 32, 64);
    Tensor ref = cpu_empty(half, dt), out = gpu_poisoned(half, dt);
    cpu_be().binary(BinaryOp::Mul, ref, a_c, expand_to(tab_c, half), 0);
    gpu_be().binary(BinaryOp::Mul, out, a_g, expand_to(tab_g, half), 0);
    EXPECT_LE(rel_err(values(out), cpu_values(ref)), tol_for(dt)) << dtype_name(dt) << " rotary half";
  }
}

TEST_F(EngineCudaOps, FillWritesEveryElementOfAnyView) {
  for (DType dt : {DType::Float32, DType::Float16, DType::BFloat16, DType::Int64}) {
    Tensor t = gpu_poisoned({37, 41}, dt);
    gpu_be().fill(t, dt == DType::Int64 ? -100 : 3.25);
    for (double v : values(t)) ASSERT_EQ(v, dt == DType::Int64 ? -100 : 3.25) << dtype_name(dt);
    gpu_be().fill(t, 0.0);  // the memset path
    for (double v : values(t)) ASSERT_EQ(v, 0.0) << dtype_name(dt);
    Tensor col = t.slice(1, 3, 4);  // strided column
    gpu_be().fill(col, 5);
    auto all = values(t);
    for (int64_t r = 0; r < 37; ++r)
      for (int64_t c = 0; c < 41; ++c) ASSERT_EQ(all[size_t(r * 41 + c)], c == 3 ? 5.0 : 0.0);
  }
}

TEST_F(EngineCudaOps, RandomNumbersHaveTheRequestedDistribution) {
  ContextGuard g(*gpu_);
  const int64_t n = 1 << 20;
  for (DType dt : kFloatTypes) {
    Tensor t = empty({n}, dt);
    gpu_be().random_normal(t, 2.0, 3.0, 42);
    auto v = values(t);
    double m = 0, s2 = 0;
    for (double x : v) m += x;
    m /= double(n);
    for (double x : v) s2 += (x - m) * (x - m);
    double sd = std::sqrt(s2 / double(n));
    EXPECT_NEAR(m, 2.0, 0.02) << dtype_name(dt);
    EXPECT_NEAR(sd, 3.0, 0.03) << dtype_name(dt);
    gpu_be().random_uniform(t, -1.0, 3.0, 7);
    v = values(t);
    double lo = 1e9, hi = -1e9;
    m = 0;
    for (double x : v) {
      lo = std::min(lo, x);
      hi = std::max(hi, x);
      m += x;
    }
    EXPECT_GE(lo, -1.0);
    EXPECT_LE(hi, 3.0);
    EXPECT_NEAR(m / double(n), 1.0, 0.01) << dtype_name(dt);
  }
  // Same seed, same numbers; another seed, other numbers; int64 labels in range.
  Tensor a = empty({1000}), b = empty({1000});
  gpu_be().random_normal(a, 0, 1, 5);
  gpu_be().random_normal(b, 0, 1, 5);
  EXPECT_EQ(values(a), values(b));
  gpu_be().random_normal(b, 0, 1, 6);
  EXPECT_NE(values(a), values(b));
  Tensor labels = randint({4096}, 10);
  std::vector<int> seen(10, 0);
  for (double x : values(labels)) {
    ASSERT_GE(x, 0);
    ASSERT_LT(x, 10);
    seen[size_t(x)]++;
  }
  for (int c : seen) EXPECT_GT(c, 300);
}

TEST_F(EngineCudaOps, SumReduceMatchesCpuOverAnyDims) {
  struct Case {
    Shape in;
    Shape out;
    bool transposed;
    const char* name;
  } cases[] = {{{64, 300}, {1, 300}, false, "dim 0 (bias grad)"},
               {{64, 300}, {64, 1}, false, "dim 1 (rows)"},
               {{64, 300}, {1, 1}, false, "all"},
               {{6, 50, 40}, {1, 50, 1}, false, "dims 0 and 2"},
               {{6, 50, 40}, {6, 1, 40}, false, "middle dim"},
               {{300, 64}, {1, 300}, true, "transposed input, dim 0"},
               {{2048, 1024}, {1, 1}, false, "2M elements to one (split + finalize)"},
               {{4096, 1024}, {1, 1024}, false, "tall columns (split + finalize)"},
               {{8, 100000}, {8, 1}, false, "long rows"},
               {{5, 7}, {5, 7}, false, "nothing reduced"}};
  for (DType dt : kFloatTypes)
    for (DType out_dt : {dt, DType::Float32})
      for (const auto& c : cases) {
        // float16 cannot hold sums past 65504: those rows would compare inf with inf.
        if (out_dt == DType::Float16 && shape_numel(c.in) / shape_numel(c.out) * 1.5 > 60000) continue;
        // Positive mean: the reference is not a near-cancellation of large terms.
        Tensor in_c = cpu_rand(c.in, dt, 0.5, 1.5);
        Tensor in_g = to_gpu(in_c);
        Tensor vc = c.transposed ? in_c.t() : in_c, vg = c.transposed ? in_g.t() : in_g;
        Tensor ref = cpu_empty(c.out, out_dt);
        cpu_be().sum_reduce(ref, vc);
        Tensor out = gpu_poisoned(c.out, out_dt);
        gpu_be().sum_reduce(out, vg);
        EXPECT_LE(rel_err(values(out), cpu_values(ref)), tol_for(out_dt))
            << c.name << " " << dtype_name(dt) << " -> " << dtype_name(out_dt);
      }
}

TEST_F(EngineCudaOps, GemmMatchesCpuForEveryLayoutBiasAndPrecision) {
  ContextGuard g(*gpu_);  // gemm takes the engine's cuBLAS workspace from this context
  struct Prec {
    DType dt;
    bool tf32;
    double tol;
  } precs[] = {{DType::Float32, false, 1e-5},
               {DType::Float32, true, 1e-3},
               {DType::Float16, false, 1e-2},
               {DType::BFloat16, false, 1e-2}};
  struct Dims {
    int64_t M, K, N;
  } dims[] = {{67, 45, 83}, {256, 320, 192}, {1, 33, 17}};
  for (const auto& p : precs)
    for (const auto& d : dims)
      for (int layout = 0; layout < 8; ++layout) {
        bool a_col = layout & 1, b_col = layout & 2, out_col = layout & 4;
        for (bool with_bias : {false, true}) {
          Tensor a_c = cpu_rand(a_col ? Shape{d.K, d.M} : Shape{d.M, d.K}, p.dt);
          Tensor b_c = cpu_rand(b_col ? Shape{d.N, d.K} : Shape{d.K, d.N}, p.dt);
          if (p.tf32) {  // tf32-exact inputs: the check holds whether cuBLAS rounds or truncates
            round_to_tf32(a_c);
            round_to_tf32(b_c);
          }
          Tensor bias_c = cpu_rand({d.N}, p.dt);
          Tensor a_g = to_gpu(a_c), b_g = to_gpu(b_c), bias_g = to_gpu(bias_c);
          Tensor av_c = a_col ? a_c.t() : a_c, bv_c = b_col ? b_c.t() : b_c;
          Tensor av_g = a_col ? a_g.t() : a_g, bv_g = b_col ? b_g.t() : b_g;
          Tensor ref = cpu_empty({d.M, d.N}, p.dt);
          Tensor eb_c = expand_to(bias_c, {d.M, d.N}), eb_g = expand_to(bias_g, {d.M, d.N});
          cpu_be().gemm(ref, av_c, bv_c, with_bias ? &eb_c : nullptr, false);
          Tensor out_base = gpu_poisoned(out_col ? Shape{d.N, d.M} : Shape{d.M, d.N}, p.dt);
          Tensor out = out_col ? out_base.t() : out_base;
          gpu_be().gemm(out, av_g, bv_g, with_bias ? &eb_g : nullptr, p.tf32);
          EXPECT_LE(rel_err(values(out), cpu_values(ref)), p.tol)
              << dtype_name(p.dt) << (p.tf32 ? " tf32" : "") << " " << d.M << "x" << d.K << "x" << d.N
              << " a_col=" << a_col << " b_col=" << b_col << " out_col=" << out_col << " bias=" << with_bias;
        }
      }
  // Bias cases with row-major out took cuBLASLt's bias epilogue (ATen's nn.Linear path).
  EXPECT_GT(gpu_be().cublaslt_runs(), 0);
  // The workspace cuBLAS got is the engine's: category workspace, PyTorch's size.
  EXPECT_EQ(gpu_->category_bytes(Category::Workspace), int64_t(gpu_->cublas_workspace_size()));

  // The tf32 flag really engages TF32 on full-precision inputs: off by more than fp32
  // rounding from the fp32 product, within TF32's 10-bit mantissa of it.
  Tensor a_c = cpu_rand({1024, 1024}, DType::Float32), b_c = cpu_rand({1024, 1024}, DType::Float32);
  Tensor a_g = to_gpu(a_c), b_g = to_gpu(b_c);
  Tensor full = gpu_poisoned({1024, 1024}, DType::Float32), fast = gpu_poisoned({1024, 1024}, DType::Float32);
  gpu_be().gemm(full, a_g, b_g, nullptr, false);
  gpu_be().gemm(fast, a_g, b_g, nullptr, true);
  double diff = rel_err(values(fast), values(full));
  EXPECT_GT(diff, 1e-5);
  EXPECT_LT(diff, 3e-3);
}

TEST_F(EngineCudaOps, LogSoftmaxAndNllLossMatchCpu) {
  for (DType dt : kFloatTypes)
    // 1001 columns: rows start off the 16-byte grid (head, 8-wide body, tail); 3000: on it.
    // Rows up to 112 KB are staged in shared memory, one block a row (30011: fp32 rows take
    // the one-warp kernel, half-precision ones shared memory; 60001: every dtype the warp).
    for (Shape shape : {Shape{37, 10}, Shape{16, 3000}, Shape{40, 1001}, Shape{6, 30011}, Shape{6, 60001}}) {
      Tensor x_c = cpu_rand(shape, dt);
      Tensor ref = cpu_empty(shape, dt);
      cpu_be().log_softmax(ref, x_c);
      Tensor lp = gpu_poisoned(shape, dt);
      gpu_be().log_softmax(lp, to_gpu(x_c));
      EXPECT_LE(rel_err(values(lp), cpu_values(ref)), tol_for(dt)) << "log_softmax " << dtype_name(dt);

      Tensor g_c = cpu_rand(shape, dt);
      Tensor gref = cpu_empty(shape, dt);
      cpu_be().log_softmax_backward(gref, g_c, ref);
      Tensor gout = gpu_poisoned(shape, dt);
      gpu_be().log_softmax_backward(gout, to_gpu(g_c), to_gpu(ref));
      EXPECT_LE(rel_err(values(gout), cpu_values(gref)), tol_for(dt)) << "log_softmax_backward " << dtype_name(dt);

      // Targets in range with two ignored rows.
      Tensor t_c = cpu_rand({shape[0]}, DType::Float32, 0, double(shape[1]) - 1e-3);
      Tensor tgt_c = cpu_empty({shape[0]}, DType::Int64);
      cpu_be().unary(UnaryOp::Copy, tgt_c, t_c, 0);
      static_cast<int64_t*>(tgt_c.data_ptr())[1] = -100;
      static_cast<int64_t*>(tgt_c.data_ptr())[5] = -100;
      Tensor tgt_g = to_gpu(tgt_c);
      Tensor ref_g = to_gpu(ref);
      for (bool mean : {true, false}) {
        Tensor lc = cpu_empty({}, dt), twc = cpu_empty({}, dt);
        cpu_be().nll_loss(lc, twc, ref, tgt_c, mean);
        Tensor lg = gpu_poisoned({}, dt), twg = gpu_poisoned({}, dt);
        gpu_be().nll_loss(lg, twg, ref_g, tgt_g, mean);
        EXPECT_LE(rel_err(values(lg), cpu_values(lc)), tol_for(dt)) << "nll_loss " << dtype_name(dt);
        EXPECT_EQ(values(twg), cpu_values(twc));

        Tensor go_c = cpu_rand({}, dt, 0.5, 1.5);
        Tensor gi_c = cpu_empty(shape, dt);
        cpu_be().fill(gi_c, 0);
        cpu_be().nll_loss_backward(gi_c, go_c, tgt_c, twc, mean);
        Tensor gi_g = gpu_poisoned(shape, dt);
        gpu_be().fill(gi_g, 0);
        gpu_be().nll_loss_backward(gi_g, to_gpu(go_c), tgt_g, twg, mean);
        EXPECT_LE(rel_err(values(gi_g), cpu_values(gi_c)), tol_for(dt)) << "nll_loss_backward " << dtype_name(dt);
      }
    }
  // An out-of-range target surfaces at the next synchronising call, as an exception.
  Tensor lp = gpu_poisoned({4, 3}, DType::Float32);
  gpu_be().fill(lp, -1.0);
  Tensor tgt_c = cpu_empty({4}, DType::Int64);
  for (int i = 0; i < 4; ++i) static_cast<int64_t*>(tgt_c.data_ptr())[i] = i == 2 ? 7 : 0;
  Tensor l = gpu_poisoned({}, DType::Float32), tw = gpu_poisoned({}, DType::Float32);
  gpu_be().nll_loss(l, tw, lp, to_gpu(tgt_c), true);
  EXPECT_THROW(gpu_be().synchronize(), std::out_of_range);
  EXPECT_NO_THROW(gpu_be().synchronize());  // reported once
}

// ---- transformer kernels against the float64 CPU reference ----

double ttol(DType t) { return t == DType::Float32 ? 1e-4 : 2e-2; }

TEST_F(EngineCudaOps, EmbeddingRowsAndTheirGradient) {
  for (DType dt : {DType::Float32, DType::BFloat16}) {
    Tensor w_c = cpu_rand({50, 72}, dt), g_c = cpu_rand({40, 72}, dt);
    Tensor idx_c;
    {
      ContextGuard g(*cpu_);
      idx_c = randint({40}, 50);
    }
    Tensor w_g = to_gpu(w_c), g_g = to_gpu(g_c), idx_g = to_gpu(idx_c);
    Tensor ref = cpu_empty({40, 72}, dt), out = gpu_poisoned({40, 72}, dt);
    cpu_be().index_select_rows(ref, w_c, idx_c);
    gpu_be().index_select_rows(out, w_g, idx_g);
    EXPECT_LE(rel_err(values(out), cpu_values(ref)), ttol(dt)) << dtype_name(dt);
    Tensor gw_c = cpu_empty({50, 72}, dt), gw_g = gpu_poisoned({50, 72}, dt);
    cpu_be().fill(gw_c, 0);
    gpu_be().fill(gw_g, 0);
    cpu_be().index_add_rows(gw_c, g_c, idx_c);
    gpu_be().index_add_rows(gw_g, g_g, idx_g);
    EXPECT_LE(rel_err(values(gw_g), cpu_values(gw_c)), ttol(dt)) << dtype_name(dt) << " backward";
  }
}

TEST_F(EngineCudaOps, LayerNormForwardAndBackward) {
  // 38 rows: one chunk; 2100 rows: fp32 weight gradients summed over row chunks atomically;
  // 768 columns: the 16-byte path (rows of a multiple of 8 elements). With up to 1024 such
  // columns the backward is one pass plus a sum of per-block partials (640: lanes with 2
  // and 3 vectors, 1024: 4 vectors a lane, 2500 rows over more warps than the grid has).
  for (Shape shape : {Shape{2, 19, 100}, Shape{3, 700, 100}, Shape{2, 37, 768}, Shape{3, 700, 640},
                      Shape{1, 2500, 1024}, Shape{4, 300, 256}})
    for (DType dt : {DType::Float32, DType::BFloat16}) {
      const int64_t rows = shape[0] * shape[1], C = shape[2];
      Tensor x_c = cpu_rand(shape, dt), w_c = cpu_rand({C}, dt), b_c = cpu_rand({C}, dt), dy_c = cpu_rand(shape, dt);
      Tensor x_g = to_gpu(x_c), w_g = to_gpu(w_c), b_g = to_gpu(b_c), dy_g = to_gpu(dy_c);
      Tensor y_c = cpu_empty(shape, dt), m_c = cpu_empty({rows}, DType::Float32),
             r_c = cpu_empty({rows}, DType::Float32);
      Tensor y_g = gpu_poisoned(shape, dt), m_g = gpu_poisoned({rows}, DType::Float32),
             r_g = gpu_poisoned({rows}, DType::Float32);
      cpu_be().layer_norm(y_c, m_c, r_c, x_c, &w_c, &b_c, 1e-5);
      gpu_be().layer_norm(y_g, m_g, r_g, x_g, &w_g, &b_g, 1e-5);
      EXPECT_LE(rel_err(values(y_g), cpu_values(y_c)), ttol(dt)) << dtype_name(dt);
      EXPECT_LE(rel_err(values(r_g), cpu_values(r_c)), 1e-4) << dtype_name(dt);
      Tensor dx_c = cpu_empty(shape, dt), dw_c = cpu_empty({C}, dt), db_c = cpu_empty({C}, dt);
      Tensor dx_g = gpu_poisoned(shape, dt), dw_g = gpu_poisoned({C}, dt), db_g = gpu_poisoned({C}, dt);
      cpu_be().layer_norm_backward(&dx_c, &dw_c, &db_c, dy_c, x_c, m_c, r_c, &w_c);
      gpu_be().layer_norm_backward(&dx_g, &dw_g, &db_g, dy_g, x_g, m_g, r_g, &w_g);
      EXPECT_LE(rel_err(values(dx_g), cpu_values(dx_c)), ttol(dt)) << dtype_name(dt) << " dx";
      EXPECT_LE(rel_err(values(dw_g), cpu_values(dw_c)), ttol(dt)) << dtype_name(dt) << " dweight";
      EXPECT_LE(rel_err(values(db_g), cpu_values(db_c)), ttol(dt)) << dtype_name(dt) << " dbias";
    }
}

TEST_F(EngineCudaOps, CausalAttentionForwardAndBackwardOnTransposedViews) {
  // q, k, v as the models make them: (B, S, H, D) buffers seen as (B, H, S, D); head
  // dims that take each register width of the kernels (1, 2, 4 elements per lane).
  const int64_t B = 2, S = 37, H = 3;
  for (int64_t D : {int64_t(24), int64_t(64), int64_t(96)})
    for (DType dt : {DType::Float32, DType::BFloat16})
      for (bool causal : {true, false}) {
        const double scale = 1.0 / std::sqrt(double(D));
        auto bhsd = [](const Tensor& t) { return t.transpose(1, 2); };
        Tensor q_c = cpu_rand({B, S, H, D}, dt), k_c = cpu_rand({B, S, H, D}, dt), v_c = cpu_rand({B, S, H, D}, dt);
        Tensor go_c = cpu_rand({B, H, S, D}, dt);
        Tensor q_g = to_gpu(q_c), k_g = to_gpu(k_c), v_g = to_gpu(v_c), go_g = to_gpu(go_c);
        Tensor o_c = cpu_empty({B, H, S, D}, dt), l_c = cpu_empty({B, H, S}, DType::Float32);
        Tensor o_g = gpu_poisoned({B, H, S, D}, dt), l_g = gpu_poisoned({B, H, S}, DType::Float32);
        cpu_be().attention(o_c, &l_c, bhsd(q_c), bhsd(k_c), bhsd(v_c), causal, scale);
        gpu_be().attention(o_g, &l_g, bhsd(q_g), bhsd(k_g), bhsd(v_g), causal, scale);
        const std::string what =
            std::string(dtype_name(dt)) + (causal ? " causal" : " full") + " D=" + std::to_string(D);
        EXPECT_LE(rel_err(values(o_g), cpu_values(o_c)), ttol(dt)) << what << " out";
        EXPECT_LE(rel_err(values(l_g), cpu_values(l_c)), 1e-4) << what << " logsumexp";
        // the backward from the reference's forward, so only the backward kernels differ
        Tensor o_in = to_gpu(o_c), l_in = to_gpu(l_c);
        Tensor dq_c = cpu_empty({B, H, S, D}, dt), dk_c = cpu_empty({B, H, S, D}, dt),
               dv_c = cpu_empty({B, H, S, D}, dt);
        Tensor dq_g = gpu_poisoned({B, H, S, D}, dt), dk_g = gpu_poisoned({B, H, S, D}, dt),
               dv_g = gpu_poisoned({B, H, S, D}, dt);
        cpu_be().attention_backward(dq_c, dk_c, dv_c, go_c, bhsd(q_c), bhsd(k_c), bhsd(v_c), o_c, l_c, causal, scale,
                                    {});
        gpu_be().attention_backward(dq_g, dk_g, dv_g, go_g, bhsd(q_g), bhsd(k_g), bhsd(v_g), o_in, l_in, causal, scale,
                                    flash_scratch(B, H, S, D));
        EXPECT_LE(rel_err(values(dq_g), cpu_values(dq_c)), ttol(dt)) << what << " dq";
        EXPECT_LE(rel_err(values(dk_g), cpu_values(dk_c)), ttol(dt)) << what << " dk";
        EXPECT_LE(rel_err(values(dv_g), cpu_values(dv_c)), ttol(dt)) << what << " dv";
      }
}

// The tiled kernels (attention_tiled.cu: head dims 64 and 128, every float dtype):
// sequences that end mid-tile, fewer queries than keys and the reverse, q, k, v as
// views of one packed (B, S, 3, H, D) buffer (as the models' qkv projection makes them),
// and the log-sum-exp as a view of a buffer padded to 32 queries (the efficient
// backend's layout).
TEST_F(EngineCudaOps, TiledAttentionOnRaggedSequencesPackedViewsAndEveryDtype) {
  const int64_t B = 2, H = 2;
  struct Lens {
    int64_t sq, sk;
  };
  for (int64_t D : {int64_t(64), int64_t(128)})
    for (DType dt : kFloatTypes)
      for (bool causal : {true, false})
        for (Lens n : {Lens{300, 300}, Lens{70, 150}, Lens{150, 70}}) {
          const double scale = 1.0 / std::sqrt(double(D));
          const int64_t Sq = n.sq, Sk = n.sk, Sp = (Sq + 31) / 32 * 32;
          const bool packed = Sq == Sk;
          // (B, S, 3, H, D) seen as three (B, H, S, D) views, or (B, S, H, D) transposed
          auto heads = [&](const Tensor& buf, int64_t S, int64_t which) {
            if (!packed) return buf.transpose(1, 2);
            return make_view(buf, {B, H, S, D}, {S * 3 * H * D, D, 3 * H * D, 1}, which * H * D);
          };
          Tensor qkv_c, q_b, k_b, v_b;
          if (packed) {
            qkv_c = cpu_rand({B, Sq, 3, H, D}, dt);
          } else {
            q_b = cpu_rand({B, Sq, H, D}, dt);
            k_b = cpu_rand({B, Sk, H, D}, dt);
            v_b = cpu_rand({B, Sk, H, D}, dt);
          }
          Tensor qkv_g = packed ? to_gpu(qkv_c) : Tensor();
          Tensor q_bg = packed ? Tensor() : to_gpu(q_b), k_bg = packed ? Tensor() : to_gpu(k_b),
                 v_bg = packed ? Tensor() : to_gpu(v_b);
          Tensor q_c = heads(packed ? qkv_c : q_b, Sq, 0), k_c = heads(packed ? qkv_c : k_b, Sk, 1),
                 v_c = heads(packed ? qkv_c : v_b, Sk, 2);
          Tensor q_g = heads(packed ? qkv_g : q_bg, Sq, 0), k_g = heads(packed ? qkv_g : k_bg, Sk, 1),
                 v_g = heads(packed ? qkv_g : v_bg, Sk, 2);
          Tensor go_c = cpu_rand({B, H, Sq, D}, dt), go_g = to_gpu(go_c);
          Tensor o_c = cpu_empty({B, H, Sq, D}, dt), l_c = cpu_empty({B, H, Sq}, DType::Float32);
          Tensor o_g = gpu_poisoned({B, H, Sq, D}, dt), lbuf_g = gpu_poisoned({B, H, Sp}, DType::Float32);
          Tensor l_g = make_view(lbuf_g, {B, H, Sq}, {H * Sp, Sp, 1}, 0);
          cpu_be().attention(o_c, &l_c, q_c, k_c, v_c, causal, scale);
          gpu_be().attention(o_g, &l_g, q_g, k_g, v_g, causal, scale);
          const std::string what = std::string(dtype_name(dt)) + (causal ? " causal" : " full") +
                                   " D=" + std::to_string(D) + " Sq=" + std::to_string(Sq) +
                                   " Sk=" + std::to_string(Sk);
          EXPECT_LE(rel_err(values(o_g), cpu_values(o_c)), ttol(dt)) << what << " out";
          EXPECT_LE(rel_err(values(l_g), cpu_values(l_c)), 1e-4) << what << " logsumexp";
          // the backward from the reference's forward (lse in the padded layout too)
          Tensor o_in = to_gpu(o_c), l_in = to_gpu(l_c);
          Tensor lbuf_in = gpu_poisoned({B, H, Sp}, DType::Float32);
          Tensor l_in_pad = make_view(lbuf_in, {B, H, Sq}, {H * Sp, Sp, 1}, 0);
          gpu_be().unary(UnaryOp::Copy, l_in_pad, l_in, 0);
          // The reference backward in float64 on the same values: the CPU backend adds each
          // key's term into the gradient tensor itself, so in bf16 its own rounding over
          // 300 keys (about sqrt(300) half-ulps) would already use up the 2e-2.
          auto f64 = [&](const Tensor& t) {
            Tensor c = cpu_empty(t.sizes(), DType::Float64);
            cpu_be().unary(UnaryOp::Copy, c, t, 0);
            return c;
          };
          Tensor dq_c = cpu_empty({B, H, Sq, D}, DType::Float64), dk_c = cpu_empty({B, H, Sk, D}, DType::Float64),
                 dv_c = cpu_empty({B, H, Sk, D}, DType::Float64);
          Tensor dq_g = gpu_poisoned({B, H, Sq, D}, dt), dk_g = gpu_poisoned({B, H, Sk, D}, dt),
                 dv_g = gpu_poisoned({B, H, Sk, D}, dt);
          cpu_be().attention_backward(dq_c, dk_c, dv_c, f64(go_c), f64(q_c), f64(k_c), f64(v_c), f64(o_c), f64(l_c),
                                      causal, scale, {});
          // no scratch: the two-pass tensor-core kernels (fp16/bf16) and the tiled ones (fp32)
          gpu_be().attention_backward(dq_g, dk_g, dv_g, go_g, q_g, k_g, v_g, o_in, l_in_pad, causal, scale, {});
          EXPECT_LE(rel_err(values(dq_g), cpu_values(dq_c)), ttol(dt)) << what << " dq";
          EXPECT_LE(rel_err(values(dk_g), cpu_values(dk_c)), ttol(dt)) << what << " dk";
          EXPECT_LE(rel_err(values(dv_g), cpu_values(dv_c)), ttol(dt)) << what << " dv";
        }
}

// Grouped-query attention on the tensor-core kernels (attention_mma.cu): query head h
// reads key/value head h / (Hq / Hk), and dK, dV come out summed over each group. The
// reference is plain multi-head attention on k, v with every head repeated for its group
// (float64), its dK, dV summed over the group here.
TEST_F(EngineCudaOps, GroupedQueryAttentionMatchesRepeatedHeads) {
  const int64_t B = 2, Hq = 6, Hk = 2;
  auto f64 = [&](const Tensor& t) {
    Tensor c = cpu_empty(t.sizes(), DType::Float64);
    cpu_be().unary(UnaryOp::Copy, c, t, 0);
    return c;
  };
  for (int64_t D : {int64_t(64), int64_t(128)})
    for (DType dt : {DType::Float16, DType::BFloat16})
      for (bool causal : {true, false}) {
        const int64_t S = 150;
        const double scale = 1.0 / std::sqrt(double(D));
        Tensor q_c = cpu_rand({B, Hq, S, D}, dt), k_c = cpu_rand({B, Hk, S, D}, dt), v_c = cpu_rand({B, Hk, S, D}, dt);
        Tensor go_c = cpu_rand({B, Hq, S, D}, dt);
        // k, v repeated per group, in float64
        Tensor kr = repeat_heads(k_c, Hq), vr = repeat_heads(v_c, Hq);
        Tensor o_c = cpu_empty({B, Hq, S, D}, DType::Float64), l_c = cpu_empty({B, Hq, S}, DType::Float64);
        cpu_be().attention(o_c, &l_c, f64(q_c), kr, vr, causal, scale);
        Tensor q_g = to_gpu(q_c), k_g = to_gpu(k_c), v_g = to_gpu(v_c), go_g = to_gpu(go_c);
        Tensor o_g = gpu_poisoned({B, Hq, S, D}, dt), l_g = gpu_poisoned({B, Hq, S}, DType::Float32);
        gpu_be().attention(o_g, &l_g, q_g, k_g, v_g, causal, scale);
        const std::string what =
            std::string(dtype_name(dt)) + (causal ? " causal" : " full") + " D=" + std::to_string(D);
        EXPECT_LE(rel_err(values(o_g), cpu_values(o_c)), ttol(dt)) << what << " out";
        EXPECT_LE(rel_err(values(l_g), cpu_values(l_c)), 1e-4) << what << " logsumexp";
        // the backward from the GPU's forward (out in T, lse in float), the reference on the same values
        Tensor dq_c = cpu_empty({B, Hq, S, D}, DType::Float64), dkr = cpu_empty({B, Hq, S, D}, DType::Float64),
               dvr = cpu_empty({B, Hq, S, D}, DType::Float64);
        Tensor o_back = cpu_empty({B, Hq, S, D}, dt), l_back = cpu_empty({B, Hq, S}, DType::Float32);
        {
          ContextGuard g(*gpu_);
          gpu_be().copy_to_host(o_back.data_ptr(), o_g, o_g.nbytes());
          gpu_be().copy_to_host(l_back.data_ptr(), l_g, l_g.nbytes());
        }
        cpu_be().attention_backward(dq_c, dkr, dvr, f64(go_c), f64(q_c), kr, vr, f64(o_back), f64(l_back), causal,
                                    scale, {});
        Tensor dq_g = gpu_poisoned({B, Hq, S, D}, dt), dk_g = gpu_poisoned({B, Hk, S, D}, dt),
               dv_g = gpu_poisoned({B, Hk, S, D}, dt);
        gpu_be().attention_backward(dq_g, dk_g, dv_g, go_g, q_g, k_g, v_g, o_g, l_g, causal, scale, {});
        EXPECT_LE(rel_err(values(dq_g), cpu_values(dq_c)), ttol(dt)) << what << " dq";
        EXPECT_LE(rel_err(values(dk_g), sum_over_groups(dkr, Hk)), ttol(dt)) << what << " dk";
        EXPECT_LE(rel_err(values(dv_g), sum_over_groups(dvr, Hk)), ttol(dt)) << what << " dv";
      }
}

// The tensor-core forward (attention_mma.cu: 128 queries a block, 128-key tiles at head
// dim 64 and 64-key ones at 128, the diagonal tile's unseen key chunks skipped): lengths
// on either side of those tiles, fewer queries than keys (a one-query decode step, a
// prompt after a cache) and more (causal rows past the last key see every key), against
// float64 attention on the same values; out and logsumexp poisoned first.
TEST_F(EngineCudaOps, TensorCoreAttentionForwardAcrossTileEdgesAndUnequalLengths) {
  struct Case {
    int64_t sq, sk;
    bool causal;
  };
  const Case cases[] = {{1, 300, false},   {1, 1, true},      {129, 129, true}, {127, 257, true}, {255, 129, true},
                        {200, 383, false}, {383, 200, false}, {64, 64, true},   {16, 700, true}};
  const int64_t B = 2, H = 2;
  auto f64 = [&](const Tensor& t) {
    Tensor c = cpu_empty(t.sizes(), DType::Float64);
    cpu_be().unary(UnaryOp::Copy, c, t, 0);
    return c;
  };
  for (int64_t D : {int64_t(64), int64_t(128)})
    for (DType dt : {DType::Float16, DType::BFloat16})
      for (const Case& c : cases) {
        const double scale = 1.0 / std::sqrt(double(D));
        const std::string what = std::string(dtype_name(dt)) + (c.causal ? " causal" : " full") +
                                 " D=" + std::to_string(D) + " Sq=" + std::to_string(c.sq) +
                                 " Sk=" + std::to_string(c.sk);
        Tensor q_c = cpu_rand({B, H, c.sq, D}, dt), k_c = cpu_rand({B, H, c.sk, D}, dt),
               v_c = cpu_rand({B, H, c.sk, D}, dt);
        Tensor o_c = cpu_empty({B, H, c.sq, D}, DType::Float64), l_c = cpu_empty({B, H, c.sq}, DType::Float64);
        cpu_be().attention(o_c, &l_c, f64(q_c), f64(k_c), f64(v_c), c.causal, scale);
        Tensor o_g = gpu_poisoned({B, H, c.sq, D}, dt), l_g = gpu_poisoned({B, H, c.sq}, DType::Float32);
        gpu_be().attention(o_g, &l_g, to_gpu(q_c), to_gpu(k_c), to_gpu(v_c), c.causal, scale);
        // the same inputs on both sides: only P and out rounded to 16 bits differ (about one
        // half-ulp each, 2^-9 in bf16, 2^-11 in fp16), so a key masked wrongly shows
        const double tol = dt == DType::Float16 ? 3e-3 : 1e-2;
        EXPECT_LE(rel_err(values(o_g), cpu_values(o_c)), tol) << what << " out";
        EXPECT_LE(rel_err(values(l_g), cpu_values(l_c)), 1e-4) << what << " logsumexp";
      }
}

// The one-pass backward (attention_mma_bwd.cu), which computes in the scratch the engine
// allocates for PyTorch's backends: in flash's layout (rows padded to 128, head dim to
// 32) and cuDNN's flat workspace, both NaN-filled first (the kernels zero what they
// accumulate in); sequences that end mid-tile (37, 150, 300: neither the 128-key blocks nor
// the 64- or 128-query tiles divide them; 129 and 257 one past them), fewer queries than
// keys and the reverse, grouped-query heads.
// The reference: float64 attention on k, v repeated per group, from the GPU's forward.
TEST_F(EngineCudaOps, OnePassAttentionBackwardInTheEnginesScratchMatchesTheReference) {
  struct Case {
    int64_t hq, hk, sq, sk;
    bool causal, cudnn_layout;
  };
  const Case cases[] = {{6, 2, 300, 300, true, false}, {6, 2, 300, 300, false, true}, {2, 2, 37, 37, true, true},
                        {2, 2, 150, 150, true, false}, {2, 2, 70, 150, false, false}, {2, 2, 150, 70, false, true},
                        {2, 2, 129, 257, true, false}, {4, 2, 257, 129, true, true}};
  const int64_t B = 2;
  auto f64 = [&](const Tensor& t) {
    Tensor c = cpu_empty(t.sizes(), DType::Float64);
    cpu_be().unary(UnaryOp::Copy, c, t, 0);
    return c;
  };
  for (int64_t D : {int64_t(64), int64_t(128)})
    for (DType dt : {DType::Float16, DType::BFloat16})
      for (const Case& c : cases) {
        const int64_t Hq = c.hq, Hk = c.hk, Sq = c.sq, Sk = c.sk;
        const double scale = 1.0 / std::sqrt(double(D));
        const std::string what = std::string(dtype_name(dt)) + (c.causal ? " causal" : " full") +
                                 " D=" + std::to_string(D) + " Hq/Hk=" + std::to_string(Hq) + "/" + std::to_string(Hk) +
                                 " Sq=" + std::to_string(Sq) + " Sk=" + std::to_string(Sk) +
                                 (c.cudnn_layout ? " cudnn scratch" : " flash scratch");
        Tensor q_c = cpu_rand({B, Hq, Sq, D}, dt), k_c = cpu_rand({B, Hk, Sk, D}, dt),
               v_c = cpu_rand({B, Hk, Sk, D}, dt), go_c = cpu_rand({B, Hq, Sq, D}, dt);
        Tensor kr = repeat_heads(k_c, Hq), vr = repeat_heads(v_c, Hq);
        Tensor q_g = to_gpu(q_c), k_g = to_gpu(k_c), v_g = to_gpu(v_c), go_g = to_gpu(go_c);
        Tensor o_g = gpu_poisoned({B, Hq, Sq, D}, dt), l_g = gpu_poisoned({B, Hq, Sq}, DType::Float32);
        gpu_be().attention(o_g, &l_g, q_g, k_g, v_g, c.causal, scale);
        Tensor o_back = cpu_empty({B, Hq, Sq, D}, dt), l_back = cpu_empty({B, Hq, Sq}, DType::Float32);
        {
          ContextGuard g(*gpu_);
          gpu_be().copy_to_host(o_back.data_ptr(), o_g, o_g.nbytes());
          gpu_be().copy_to_host(l_back.data_ptr(), l_g, l_g.nbytes());
        }
        Tensor dq_c = cpu_empty({B, Hq, Sq, D}, DType::Float64), dkr = cpu_empty({B, Hq, Sk, D}, DType::Float64),
               dvr = cpu_empty({B, Hq, Sk, D}, DType::Float64);
        cpu_be().attention_backward(dq_c, dkr, dvr, f64(go_c), f64(q_c), kr, vr, f64(o_back), f64(l_back), c.causal,
                                    scale, {});
        Backend::AttentionScratch scratch = c.cudnn_layout ? cudnn_scratch(B, Hq, Sq, D) : flash_scratch(B, Hq, Sq, D);
        Tensor dq_g = gpu_poisoned({B, Hq, Sq, D}, dt), dk_g = gpu_poisoned({B, Hk, Sk, D}, dt),
               dv_g = gpu_poisoned({B, Hk, Sk, D}, dt);
        gpu_be().attention_backward(dq_g, dk_g, dv_g, go_g, q_g, k_g, v_g, o_g, l_g, c.causal, scale, scratch);
        EXPECT_LE(rel_err(values(dq_g), cpu_values(dq_c)), ttol(dt)) << what << " dq";
        EXPECT_LE(rel_err(values(dk_g), sum_over_groups(dkr, Hk)), ttol(dt)) << what << " dk";
        EXPECT_LE(rel_err(values(dv_g), sum_over_groups(dvr, Hk)), ttol(dt)) << what << " dv";
        // the row sums hold D = rowsum(dO * O): the one-pass kernels ran, in the engine's buffer
        std::vector<double> go_v = cpu_values(go_c), o_v = cpu_values(o_back), rs(size_t(B * Hq * Sq), 0.0);
        for (size_t r = 0; r < rs.size(); ++r)
          for (int64_t d = 0; d < D; ++d) rs[r] += go_v[r * size_t(D) + size_t(d)] * o_v[r * size_t(D) + size_t(d)];
        EXPECT_LE(rel_err(values(scratch.row_sums), rs), 1e-4) << what << " row sums";
      }
}

TEST_F(EngineCudaOps, ArangeRotaryTablesAndArgmax) {
  Tensor a_c = cpu_empty({300}, DType::Int64), a_g = gpu_poisoned({300}, DType::Int64);
  cpu_be().arange(a_c, 5);
  gpu_be().arange(a_g, 5);
  EXPECT_EQ(values(a_g), cpu_values(a_c));
  Tensor c_c = cpu_empty({64, 16}, DType::Float32), s_c = cpu_empty({64, 16}, DType::Float32);
  Tensor c_g = gpu_poisoned({64, 16}, DType::Float32), s_g = gpu_poisoned({64, 16}, DType::Float32);
  cpu_be().rope_tables(c_c, s_c, 10000.0);
  gpu_be().rope_tables(c_g, s_g, 10000.0);
  EXPECT_LE(rel_err(values(c_g), cpu_values(c_c)), 1e-4);
  EXPECT_LE(rel_err(values(s_g), cpu_values(s_c)), 1e-4);
  Tensor x_c = cpu_rand({7, 1000}, DType::Float32), x_g = to_gpu(x_c);
  Tensor m_c = cpu_empty({7}, DType::Int64), m_g = gpu_poisoned({7}, DType::Int64);
  cpu_be().argmax_last(m_c, x_c);
  gpu_be().argmax_last(m_g, x_g);
  EXPECT_EQ(values(m_g), cpu_values(m_c));
}

TEST_F(EngineCudaOps, ItemAndAllFinite) {
  Tensor x_c = cpu_rand({1000}, DType::Float32);
  Tensor x_g = to_gpu(x_c);
  ContextGuard g(*gpu_);
  EXPECT_EQ(gpu_be().item(make_view(x_g, {}, {}, 17)), static_cast<float*>(x_c.data_ptr())[17]);
  EXPECT_TRUE(gpu_be().all_finite(x_g));
  for (double bad : {std::numeric_limits<double>::infinity(), kNaN}) {
    for (DType dt : kFloatTypes) {
      Tensor y = empty({513, 3}, dt);
      gpu_be().fill(y, 1.5);
      EXPECT_TRUE(gpu_be().all_finite(y));
      gpu_be().fill(make_view(y, {}, {}, 1000), bad);
      EXPECT_FALSE(gpu_be().all_finite(y)) << dtype_name(dt);
      EXPECT_TRUE(gpu_be().all_finite(y.slice(0, 0, 300))) << "the bad element is outside the view";
    }
  }
}

// Engine-level ops on the GPU: a linear layer forward and backward against the CPU.
TEST_F(EngineCudaOps, LinearForwardBackwardMatchesCpuThroughTheOpLayer) {
  Tensor x_c = cpu_rand({64, 48}, DType::Float32), w_c = cpu_rand({32, 48}, DType::Float32);
  Tensor b_c = cpu_rand({32}, DType::Float32);
  auto run = [&](EngineContext& ctx, Tensor x, Tensor w, Tensor b) {
    ContextGuard g(ctx);
    w.requires_grad_(true);
    b.requires_grad_(true);
    Tensor y = relu(linear(x, w, b));
    Tensor loss = sum(mul(y, y));
    loss.backward();
    return std::make_tuple(y, w.grad(), b.grad());
  };
  auto [yc, gwc, gbc] = run(*cpu_, x_c, w_c, b_c);
  auto [yg, gwg, gbg] = run(*gpu_, to_gpu(x_c), to_gpu(w_c), to_gpu(b_c));
  EXPECT_LE(rel_err(values(yg), cpu_values(yc)), 1e-5);
  EXPECT_LE(rel_err(values(gwg), cpu_values(gwc)), 1e-5);
  EXPECT_LE(rel_err(values(gbg), cpu_values(gbc)), 1e-5);
}

TEST_F(EngineCudaOps, TeacherStudentTrainingConvergesInFp32AndBf16) {
  for (bool bf16 : {false, true}) {
    ContextGuard g(*gpu_);
    TrainResult r = train_teacher_student(bf16);
    EXPECT_GT(r.first, 0);
    EXPECT_LT(r.last, r.first / 10) << (bf16 ? "bf16" : "fp32") << ": first " << r.first << " last " << r.last;
  }
}

// Memory readings on the GPU equal the simulated device's for the same protocol.
TEST(EngineCudaParity, ProtocolReadingsEqualTheSimulatedDevice) {
  std::string why;
  if (!make_cuda_backend(&why)) GTEST_SKIP() << "no CUDA backend: " << why;
  std::string name = open_device("cuda:0")->info().name;
  std::string sim = name.find("H200") != std::string::npos   ? "sim:h200-141gb"
                    : name.find("H100") != std::string::npos ? "sim:h100-80gb"
                                                             : "";
  if (sim.empty()) GTEST_SKIP() << "no simulated preset for " << name;
  for (Precision precision : {Precision::Fp32, Precision::Bf16}) {
    RunSpec cfg =
        vramlab::spectest::spec(R"({"model":{"kind":"residual","dim":1024,"depth":4},"batch":512,"optimizer":"adam"})");
    cfg.precision = precision;
    cfg.device = sim;
    RunResult s = run_experiment(cfg);
    cfg.device = "cuda:0";
    RunResult c = run_experiment(cfg);
    EXPECT_EQ(c.base, s.base) << word(precision);
    ASSERT_EQ(c.readings.size(), s.readings.size());
    for (size_t i = 0; i < s.readings.size(); ++i)
      EXPECT_EQ(c.readings[i], s.readings[i]) << word(precision) << " " << s.readings[i].first;
  }
}

#endif  // VRAMLAB_HAVE_CUDA

}  // namespace
}  // namespace vramlab::engine
