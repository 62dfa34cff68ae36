// Pointwise kernels. Fast path: every operand contiguous (or one broadcast scalar),
// 8 elements per thread per step through 16-byte loads/stores, grid-stride, plus a
// scalar tail. Generic path: any strides (stride 0 broadcasting) over coalesced dims
// with 32-bit multiply-high index math when the tensor is small enough.
#include <utility>

#include "engine/backends/cuda/kernels/dtype_io.cuh"
#include "engine/backends/cuda/kernels/launch.h"
#include "engine/backends/cuda/kernels/op_math.cuh"

namespace vramlab::engine::cuda {

namespace {

constexpr int kThreads = 256;

template <int Kind>
constexpr int kNumInputs = Kind + 1;

template <int Kind, int Op>
__global__ void __launch_bounds__(kThreads) pointwise_vec(PointwiseArgs a) {
  constexpr int N = kNumInputs<Kind>;
  float scalar[3] = {0.f, 0.f, 0.f};
#pragma unroll
  for (int k = 0; k < N; ++k)
    if (a.in[k].mode == 1) scalar[k] = load_f(a.in[k].ptr, a.in[k].dtype, 0);
  const int64_t nvec = a.numel / 8;
  const int64_t step = int64_t(gridDim.x) * blockDim.x;
  const int64_t tid = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  for (int64_t v = tid; v < nvec; v += step) {
    const int64_t i = v * 8;
    float x[3][8];
#pragma unroll
    for (int k = 0; k < N; ++k) {
      if (a.in[k].mode == 1) {
#pragma unroll
        for (int j = 0; j < 8; ++j) x[k][j] = scalar[k];
      } else {
        load8(a.in[k].ptr, a.in[k].dtype, i, x[k]);
      }
    }
#pragma unroll
    for (int k = N; k < 3; ++k)
#pragma unroll
      for (int j = 0; j < 8; ++j) x[k][j] = 0.f;
    float r[8];
#pragma unroll
    for (int j = 0; j < 8; ++j) r[j] = apply_op<Kind, Op>(x[0][j], x[1][j], x[2][j], a.s);
    store8(a.out.ptr, a.out.dtype, i, r);
  }
  const int64_t t = nvec * 8 + tid;
  if (t < a.numel) {
    float x[3] = {0.f, 0.f, 0.f};
#pragma unroll
    for (int k = 0; k < N; ++k) x[k] = a.in[k].mode == 1 ? scalar[k] : load_f(a.in[k].ptr, a.in[k].dtype, t);
    store_f(a.out.ptr, a.out.dtype, t, apply_op<Kind, Op>(x[0], x[1], x[2], a.s));
  }
}

template <int Kind, int Op, bool Small>
__global__ void __launch_bounds__(kThreads) pointwise_strided(PointwiseArgs a) {
  constexpr int N = kNumInputs<Kind>;
  const int64_t step = int64_t(gridDim.x) * blockDim.x;
  for (int64_t idx = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; idx < a.numel; idx += step) {
    int64_t off[4];
    offsets_of<Small>(a, idx, off);
    float x[3] = {0.f, 0.f, 0.f};
#pragma unroll
    for (int k = 0; k < N; ++k) x[k] = load_f(a.in[k].ptr, a.in[k].dtype, off[k + 1]);
    store_f(a.out.ptr, a.out.dtype, off[0], apply_op<Kind, Op>(x[0], x[1], x[2], a.s));
  }
}

// Rows of 8-element vectors: `a` is the row-vector form made by row_vector_args (the
// innermost dim counted in vectors, each operand's stride there 8 when it is contiguous
// along it, 0 when one value is broadcast along it), so offsets_of gives each vector's
// first element. Broadcasts over rows (RMSNorm's x * rsqrt(mean), * weight; rotary's
// halves times the cos/sin tables) run at the contiguous kernel's 16-byte width.
template <int Kind, int Op, bool Small>
__global__ void __launch_bounds__(kThreads) pointwise_rowvec(PointwiseArgs a) {
  constexpr int N = kNumInputs<Kind>;
  const int inner = a.ndim - 1;
  const int64_t step = int64_t(gridDim.x) * blockDim.x;
  for (int64_t idx = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; idx < a.numel; idx += step) {
    int64_t off[4];
    offsets_of<Small>(a, idx, off);
    float x[3][8];
#pragma unroll
    for (int k = 0; k < N; ++k) {
      if (a.in[k].strides[inner] == 0) {
        const float b = load_f(a.in[k].ptr, a.in[k].dtype, off[k + 1]);
#pragma unroll
        for (int j = 0; j < 8; ++j) x[k][j] = b;
      } else {
        load8(a.in[k].ptr, a.in[k].dtype, off[k + 1], x[k]);
      }
    }
#pragma unroll
    for (int k = N; k < 3; ++k)
#pragma unroll
      for (int j = 0; j < 8; ++j) x[k][j] = 0.f;
    float r[8];
#pragma unroll
    for (int j = 0; j < 8; ++j) r[j] = apply_op<Kind, Op>(x[0][j], x[1][j], x[2][j], a.s);
    store8(a.out.ptr, a.out.dtype, off[0], r);
  }
}

bool float_dtype(int32_t dt) { return dt == kF32 || dt == kF16 || dt == kBF16; }

// The row-vector form of a strided launch, or false when it does not apply: the output
// contiguous along the innermost dim, every input contiguous or broadcast along it, a
// multiple of 8 elements per row, and every vector 16-byte aligned.
bool row_vector_args(const PointwiseArgs& a, int nin, PointwiseArgs* w) {
  const int d = a.ndim - 1;
  if (d < 0 || a.sizes[d] % 8 != 0) return false;
  auto vec_ok = [&](const Operand& o) {
    if (!float_dtype(o.dtype) || reinterpret_cast<uintptr_t>(o.ptr) % 16 != 0) return false;
    for (int k = 0; k < d; ++k)
      if (o.strides[k] % 8 != 0) return false;
    return true;
  };
  if (a.out.strides[d] != 1 || !vec_ok(a.out)) return false;
  for (int k = 0; k < nin; ++k) {
    const Operand& o = a.in[k];
    if (o.strides[d] == 0) continue;  // one value per row: any dtype, any alignment
    if (o.strides[d] != 1 || !vec_ok(o)) return false;
  }
  *w = a;
  w->sizes[d] = a.sizes[d] / 8;
  w->numel = a.numel / 8;
  if (w->numel < (int64_t(1) << 31))
    for (int k = 0; k <= d; ++k) w->div[k] = make_fastdiv(uint32_t(w->sizes[k]));
  w->out.strides[d] = 8;
  for (int k = 0; k < nin; ++k) w->in[k].strides[d] = a.in[k].strides[d] == 0 ? 0 : 8;
  return true;
}

template <int Kind, int Op>
void run(const PointwiseArgs& a, bool fast, int sms, cudaStream_t st) {
  if (a.numel == 0) return;
  PointwiseArgs w;
  if (fast) {
    int64_t items = a.numel / 8 + 1;
    pointwise_vec<Kind, Op><<<grid_for(items, kThreads, sms), kThreads, 0, st>>>(a);
  } else if (row_vector_args(a, kNumInputs<Kind>, &w)) {
    if (w.numel < (int64_t(1) << 31))
      pointwise_rowvec<Kind, Op, true><<<grid_for(w.numel, kThreads, sms), kThreads, 0, st>>>(w);
    else
      pointwise_rowvec<Kind, Op, false><<<grid_for(w.numel, kThreads, sms), kThreads, 0, st>>>(w);
  } else if (a.numel < (int64_t(1) << 31)) {
    pointwise_strided<Kind, Op, true><<<grid_for(a.numel, kThreads, sms), kThreads, 0, st>>>(a);
  } else {
    pointwise_strided<Kind, Op, false><<<grid_for(a.numel, kThreads, sms), kThreads, 0, st>>>(a);
  }
  check_launch("pointwise kernel");
}

template <int Kind, int... Ops>
void dispatch(int op, const PointwiseArgs& a, bool fast, int sms, cudaStream_t st, std::integer_sequence<int, Ops...>) {
  bool done = ((op == Ops ? (run<Kind, Ops>(a, fast, sms, st), true) : false) || ...);
  if (!done) throw std::invalid_argument("unknown pointwise op code " + std::to_string(op));
}

}  // namespace

void launch_unary(int op, const PointwiseArgs& a, bool fast, int sms, cudaStream_t st) {
  dispatch<kUnary>(op, a, fast, sms, st, std::make_integer_sequence<int, 19>{});
}
void launch_binary(int op, const PointwiseArgs& a, bool fast, int sms, cudaStream_t st) {
  dispatch<kBinary>(op, a, fast, sms, st, std::make_integer_sequence<int, 12>{});
}
void launch_ternary(int op, const PointwiseArgs& a, bool fast, int sms, cudaStream_t st) {
  dispatch<kTernary>(op, a, fast, sms, st, std::make_integer_sequence<int, 3>{});
}

}  // namespace vramlab::engine::cuda
