// log_softmax over the last dim of a 2-D tensor (+ backward), one warp per row, and
// nll_loss (+ backward). Out-of-range targets set an error word the backend checks
// at its next synchronizing call, as a device-side assert surfaces in PyTorch.
#include <cfloat>
#include <initializer_list>

#include "engine/backends/cuda/kernels/dtype_io.cuh"
#include "engine/backends/cuda/kernels/launch.h"

namespace vramlab::engine::cuda {

namespace {

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int k = 16; k > 0; k >>= 1) v += __shfl_xor_sync(0xffffffffu, v, k);
  return v;
}

__device__ __forceinline__ float at(const Mat2& m, int64_t r, int64_t c) {
  return load_f(m.ptr, m.dtype, r * m.s0 + c * m.s1);
}

// Visits row elements [0, n) of row-contiguous tensors sharing the row start `base` (a
// flat element index): f1(c) one column at a time, f8(c) eight aligned columns with one
// 16-byte load per tensor. Large-vocabulary rows (50257 logits) are bandwidth-bound, and
// scalar 2-byte loads leave most of it unused.
__device__ __forceinline__ bool vec_dtype(int dt) { return dt == kF32 || dt == kF16 || dt == kBF16; }

template <class F1, class F8>
__device__ __forceinline__ void walk_row(int64_t base, int64_t n, int lane, bool vec, F1 f1, F8 f8) {
  if (!vec) {
    for (int64_t c = lane; c < n; c += 32) f1(c);
    return;
  }
  const int64_t head = min(n, (8 - base % 8) % 8);
  const int64_t body_end = head + (n - head) / 8 * 8;
  if (lane < head) f1(lane);
  for (int64_t c = head + 8 * lane; c < body_end; c += 256) f8(c);
  for (int64_t c = body_end + lane; c < n; c += 32) f1(c);
}

__global__ void __launch_bounds__(256) log_softmax_rows(Mat2 out, Mat2 in) {
  const int64_t row = int64_t(blockIdx.x) * 8 + (threadIdx.x >> 5);
  if (row >= in.rows) return;
  const int lane = threadIdx.x & 31;
  const bool vec = in.s1 == 1 && out.s1 == 1 && in.s0 == out.s0 && vec_dtype(in.dtype) && vec_dtype(out.dtype);
  const int64_t base = row * in.s0;
  // Max and sum of exp in one pass (online softmax): the sum is rescaled whenever the
  // running max grows, so the row is read twice in all instead of three times.
  float mx = -INFINITY, s = 0.f;
  auto add = [&](float m_new, float part) {  // part: sum of exp(v - m_new) of new values
    if (m_new > mx) {
      s = (mx == -INFINITY ? 0.f : s * expf(mx - m_new)) + part;
      mx = m_new;
    } else if (m_new != -INFINITY) {
      s += part * expf(m_new - mx);
    }
  };
  walk_row(
      base, in.cols, lane, vec,
      [&](int64_t c) {
        const float v = at(in, row, c);
        add(v, v == -INFINITY ? 0.f : 1.f);
      },
      [&](int64_t c) {
        float v[8];
        load8(in.ptr, in.dtype, base + c, v);
        float m8 = v[0];
#pragma unroll
        for (int k = 1; k < 8; ++k) m8 = fmaxf(m8, v[k]);
        float p = 0.f;
        if (m8 != -INFINITY)
#pragma unroll
          for (int k = 0; k < 8; ++k) p += expf(v[k] - m8);
        add(m8, p);
      });
#pragma unroll
  for (int k = 16; k > 0; k >>= 1) {
    const float m2 = __shfl_xor_sync(0xffffffffu, mx, k), s2 = __shfl_xor_sync(0xffffffffu, s, k);
    add(m2, s2);
  }
  // every lane the same figures (the pairwise sums above may round differently per lane)
  mx = __shfl_sync(0xffffffffu, mx, 0);
  s = __shfl_sync(0xffffffffu, s, 0);
  const float lse = mx + logf(s);
  walk_row(
      base, in.cols, lane, vec,
      [&](int64_t c) { store_f(out.ptr, out.dtype, row * out.s0 + c * out.s1, at(in, row, c) - lse); },
      [&](int64_t c) {
        float v[8];
        load8(in.ptr, in.dtype, base + c, v);
#pragma unroll
        for (int k = 0; k < 8; ++k) v[k] -= lse;
        store8(out.ptr, out.dtype, base + c, v);
      });
}

__global__ void __launch_bounds__(256) log_softmax_backward_rows(Mat2 out, Mat2 grad, Mat2 result) {
  const int64_t row = int64_t(blockIdx.x) * 8 + (threadIdx.x >> 5);
  if (row >= result.rows) return;
  const int lane = threadIdx.x & 31;
  const bool vec = out.s1 == 1 && grad.s1 == 1 && result.s1 == 1 && out.s0 == grad.s0 && grad.s0 == result.s0 &&
                   vec_dtype(out.dtype) && vec_dtype(grad.dtype) && vec_dtype(result.dtype);
  const int64_t base = row * result.s0;
  float gs = 0.f;
  walk_row(
      base, result.cols, lane, vec, [&](int64_t c) { gs += at(grad, row, c); },
      [&](int64_t c) {
        float g[8];
        load8(grad.ptr, grad.dtype, base + c, g);
#pragma unroll
        for (int k = 0; k < 8; ++k) gs += g[k];
      });
  gs = warp_sum(gs);
  walk_row(
      base, result.cols, lane, vec,
      [&](int64_t c) {
        store_f(out.ptr, out.dtype, row * out.s0 + c * out.s1, at(grad, row, c) - expf(at(result, row, c)) * gs);
      },
      [&](int64_t c) {
        float g[8], r[8];
        load8(grad.ptr, grad.dtype, base + c, g);
        load8(result.ptr, result.dtype, base + c, r);
#pragma unroll
        for (int k = 0; k < 8; ++k) g[k] -= expf(r[k]) * gs;
        store8(out.ptr, out.dtype, base + c, g);
      });
}

// Rows that fit in shared memory (the vocabulary rows of a language model's loss: GPT-2's
// 50257 bf16 logits are 100 KB): one block a row reads it once, in 16-byte chunks, into
// shared memory, and the max, the sum of exp and the output come from there, so the row
// crosses HBM once each way instead of being read twice (the one-warp kernels above run
// too many rows at once for the second read to stay in L2). Chunks are counted from the
// 16-byte grid of the tensor's pointer: the first and last of a row may hold elements of
// the neighbouring rows, which are read but masked out. Every tensor of a launch has the
// same dtype, row stride and unit column stride, and a 16-byte aligned pointer.
constexpr int kRowThreads = 512;
constexpr int kRowLoads = 4;                   // 16-byte loads in flight a thread
constexpr int64_t kSmemRowBytes = 112 * 1024;  // two rows an SM (228 KB on H100)

template <int ES>
__device__ __forceinline__ void unpack16(const uint4& r, int dt, float (&v)[16 / ES]) {
  if constexpr (ES == 4) {
    v[0] = __uint_as_float(r.x);
    v[1] = __uint_as_float(r.y);
    v[2] = __uint_as_float(r.z);
    v[3] = __uint_as_float(r.w);
  } else if (dt == kF16) {
    const __half2* h = reinterpret_cast<const __half2*>(&r);
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      const float2 f = __half22float2(h[k]);
      v[2 * k] = f.x;
      v[2 * k + 1] = f.y;
    }
  } else {
    const __nv_bfloat162* h = reinterpret_cast<const __nv_bfloat162*>(&r);
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      const float2 f = __bfloat1622float2(h[k]);
      v[2 * k] = f.x;
      v[2 * k + 1] = f.y;
    }
  }
}

template <int ES>
__device__ __forceinline__ uint4 pack16(const float (&v)[16 / ES], int dt) {
  uint4 r;
  if constexpr (ES == 4) {
    r = make_uint4(__float_as_uint(v[0]), __float_as_uint(v[1]), __float_as_uint(v[2]), __float_as_uint(v[3]));
  } else if (dt == kF16) {
    __half2* h = reinterpret_cast<__half2*>(&r);
#pragma unroll
    for (int k = 0; k < 4; ++k) h[k] = __floats2half2_rn(v[2 * k], v[2 * k + 1]);
  } else {
    __nv_bfloat162* h = reinterpret_cast<__nv_bfloat162*>(&r);
#pragma unroll
    for (int k = 0; k < 4; ++k) h[k] = __floats2bfloat162_rn(v[2 * k], v[2 * k + 1]);
  }
  return r;
}

// The row's chunks [c0, c0 + nch) and its elements [lo, hi) (flat indices from the pointer).
struct RowSpan {
  int64_t c0, lo, hi;
  int nch;
};
template <int ES>
__device__ __forceinline__ RowSpan row_span(int64_t row, int64_t s0, int64_t n) {
  constexpr int E = 16 / ES;
  RowSpan r;
  r.lo = row * s0;
  r.hi = r.lo + n;
  r.c0 = r.lo / E;
  r.nch = int((r.hi + E - 1) / E - r.c0);
  return r;
}

// Copies the row's chunks into shared memory, kRowLoads loads in flight a thread, and
// calls f(c, v) for each chunk's values (elements outside the row are left to f to mask).
template <int ES, class F>
__device__ __forceinline__ void stage_row(uint4* dst, const void* ptr, const RowSpan& r, int dt, F f) {
  const uint4* src = reinterpret_cast<const uint4*>(ptr) + r.c0;
  for (int c = threadIdx.x; c < r.nch; c += kRowLoads * kRowThreads) {
    uint4 q[kRowLoads];
#pragma unroll
    for (int u = 0; u < kRowLoads; ++u)
      if (c + u * kRowThreads < r.nch) q[u] = src[c + u * kRowThreads];
#pragma unroll
    for (int u = 0; u < kRowLoads; ++u)
      if (c + u * kRowThreads < r.nch) {
        dst[c + u * kRowThreads] = q[u];
        float v[16 / ES];
        unpack16<ES>(q[u], dt, v);
        f(c + u * kRowThreads, v);
      }
  }
}

// Whether element k of chunk c is in the row (interior chunks: always).
template <int ES>
__device__ __forceinline__ bool in_row(const RowSpan& r, int c, int k) {
  const int64_t i = (r.c0 + c) * (16 / ES) + k;
  return i >= r.lo && i < r.hi;
}

// Block-wide reduction of one float per thread (max when kMax, else sum); all threads get it.
template <bool kMax>
__device__ __forceinline__ float block_reduce(float v, float* red) {
#pragma unroll
  for (int k = 16; k > 0; k >>= 1) {
    const float o = __shfl_xor_sync(0xffffffffu, v, k);
    v = kMax ? fmaxf(v, o) : v + o;
  }
  if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = v;
  __syncthreads();
  v = red[0];
  for (int w = 1; w < kRowThreads / 32; ++w) v = kMax ? fmaxf(v, red[w]) : v + red[w];
  __syncthreads();  // red is reused by the next reduction
  return v;
}

// Stores chunk c of the output: whole interior chunks as one 16-byte store, the row's
// first and last element by element.
template <int ES>
__device__ __forceinline__ void store_chunk(void* out, int dt, const RowSpan& r, int c, const float (&v)[16 / ES]) {
  if (c > 0 && c < r.nch - 1) {
    reinterpret_cast<uint4*>(out)[r.c0 + c] = pack16<ES>(v, dt);
    return;
  }
#pragma unroll
  for (int k = 0; k < 16 / ES; ++k)
    if (in_row<ES>(r, c, k)) store_f(out, dt, (r.c0 + c) * (16 / ES) + k, v[k]);
}

template <int ES>
__global__ void __launch_bounds__(kRowThreads) log_softmax_rows_smem(Mat2 out, Mat2 in) {
  extern __shared__ uint4 row_s[];
  __shared__ float red[kRowThreads / 32];
  constexpr int E = 16 / ES;
  const RowSpan r = row_span<ES>(blockIdx.x, in.s0, in.cols);
  float mx = -INFINITY;
  stage_row<ES>(row_s, in.ptr, r, in.dtype, [&](int c, const float(&v)[E]) {
#pragma unroll
    for (int k = 0; k < E; ++k)
      if (in_row<ES>(r, c, k)) mx = fmaxf(mx, v[k]);
  });
  mx = block_reduce<true>(mx, red);  // its __syncthreads also publishes row_s
  float s = 0.f;
  for (int c = threadIdx.x; c < r.nch; c += kRowThreads) {
    float v[E];
    unpack16<ES>(row_s[c], in.dtype, v);
#pragma unroll
    for (int k = 0; k < E; ++k)
      if (in_row<ES>(r, c, k)) s += expf(v[k] - mx);
  }
  const float lse = mx + logf(block_reduce<false>(s, red));
  for (int c = threadIdx.x; c < r.nch; c += kRowThreads) {
    float v[E];
    unpack16<ES>(row_s[c], in.dtype, v);
#pragma unroll
    for (int k = 0; k < E; ++k) v[k] -= lse;
    store_chunk<ES>(out.ptr, out.dtype, r, c, v);
  }
}

// out = grad - exp(result) * sum(grad): grad staged in shared memory by the sum's pass,
// result read once by the second.
template <int ES>
__global__ void __launch_bounds__(kRowThreads) log_softmax_backward_rows_smem(Mat2 out, Mat2 grad, Mat2 result) {
  extern __shared__ uint4 row_s[];
  __shared__ float red[kRowThreads / 32];
  constexpr int E = 16 / ES;
  const RowSpan r = row_span<ES>(blockIdx.x, grad.s0, grad.cols);
  float gs = 0.f;
  stage_row<ES>(row_s, grad.ptr, r, grad.dtype, [&](int c, const float(&v)[E]) {
#pragma unroll
    for (int k = 0; k < E; ++k)
      if (in_row<ES>(r, c, k)) gs += v[k];
  });
  gs = block_reduce<false>(gs, red);
  const uint4* res = reinterpret_cast<const uint4*>(result.ptr) + r.c0;
  for (int c = threadIdx.x; c < r.nch; c += kRowLoads * kRowThreads) {
    uint4 q[kRowLoads];
#pragma unroll
    for (int u = 0; u < kRowLoads; ++u)
      if (c + u * kRowThreads < r.nch) q[u] = res[c + u * kRowThreads];
#pragma unroll
    for (int u = 0; u < kRowLoads; ++u)
      if (c + u * kRowThreads < r.nch) {
        float g[E], y[E];
        unpack16<ES>(row_s[c + u * kRowThreads], grad.dtype, g);
        unpack16<ES>(q[u], result.dtype, y);
#pragma unroll
        for (int k = 0; k < E; ++k) g[k] -= expf(y[k]) * gs;
        store_chunk<ES>(out.ptr, out.dtype, r, c + u * kRowThreads, g);
      }
  }
}

// The element size when every tensor fits the shared-memory kernels, else 0.
int smem_row_elem_size(std::initializer_list<const Mat2*> ms) {
  const Mat2& a = **ms.begin();
  const int es = a.dtype == kF32 ? 4 : (a.dtype == kF16 || a.dtype == kBF16) ? 2 : 0;
  if (es == 0 || a.rows >= (int64_t(1) << 31)) return 0;
  for (const Mat2* m : ms)
    if (m->dtype != a.dtype || m->s1 != 1 || (m->rows > 1 && m->s0 != a.s0) ||
        reinterpret_cast<uintptr_t>(m->ptr) % 16 != 0)
      return 0;
  // Chunks a row spans: its bytes rounded up to 16, plus one when it starts off the grid.
  const int64_t bytes = (a.cols * es + 15) / 16 * 16 + 16;
  return bytes <= kSmemRowBytes ? es : 0;
}

size_t smem_row_bytes(const Mat2& a, int es) { return size_t((a.cols * es + 15) / 16 * 16 + 16); }

__global__ void __launch_bounds__(512) nll_forward(void* out, void* tw, int32_t dt, Mat2 logp, const long long* target,
                                                   int64_t ts, bool mean, long long* err) {
  float s = 0.f, w = 0.f;
  for (int64_t i = threadIdx.x; i < logp.rows; i += blockDim.x) {
    long long cls = target[i * ts];
    if (cls == -100) continue;  // ignore_index
    if (cls < 0 || cls >= logp.cols) {
      if (atomicCAS(reinterpret_cast<unsigned long long*>(err), 0ull, 1ull) == 0ull) err[1] = cls;
      continue;
    }
    s -= at(logp, i, cls);
    w += 1.f;
  }
  __shared__ float ps[16], pw[16];
  s = warp_sum(s);
  w = warp_sum(w);
  if ((threadIdx.x & 31) == 0) {
    ps[threadIdx.x >> 5] = s;
    pw[threadIdx.x >> 5] = w;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    float ts_ = 0.f, tw_ = 0.f;
    for (int k = 0; k < int(blockDim.x + 31) / 32; ++k) {
      ts_ += ps[k];
      tw_ += pw[k];
    }
    store_f(out, dt, 0, mean ? ts_ / tw_ : ts_);
    store_f(tw, dt, 0, tw_);
  }
}

__global__ void __launch_bounds__(256) nll_backward(Mat2 gi, const void* grad, const void* tw, int32_t dt,
                                                    const long long* target, int64_t ts, bool mean, long long* err) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= gi.rows) return;
  const float scale = -load_f(grad, dt, 0) / (mean ? load_f(tw, dt, 0) : 1.f);
  long long cls = target[i * ts];
  if (cls == -100) return;
  if (cls < 0 || cls >= gi.cols) {
    if (atomicCAS(reinterpret_cast<unsigned long long*>(err), 0ull, 1ull) == 0ull) err[1] = cls;
    return;
  }
  store_f(gi.ptr, gi.dtype, i * gi.s0 + cls * gi.s1, scale);
}

}  // namespace

namespace {
// Lets kernel `f` take up to kSmemRowBytes of dynamic shared memory (over the 48 KB default).
template <class F>
void allow_row_smem(F* f, const char* what) {
  const cudaError_t e = cudaFuncSetAttribute(f, cudaFuncAttributeMaxDynamicSharedMemorySize, int(kSmemRowBytes));
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}
}  // namespace

void launch_log_softmax(const Mat2& out, const Mat2& in, cudaStream_t st) {
  if (in.rows == 0 || in.cols == 0) return;
  if (const int es = smem_row_elem_size({&in, &out})) {
    const size_t smem = smem_row_bytes(in, es);
    if (es == 2) {
      allow_row_smem(log_softmax_rows_smem<2>, "log_softmax");
      log_softmax_rows_smem<2><<<unsigned(in.rows), kRowThreads, smem, st>>>(out, in);
    } else {
      allow_row_smem(log_softmax_rows_smem<4>, "log_softmax");
      log_softmax_rows_smem<4><<<unsigned(in.rows), kRowThreads, smem, st>>>(out, in);
    }
    check_launch("log_softmax kernel (rows in shared memory)");
    return;
  }
  log_softmax_rows<<<unsigned((in.rows + 7) / 8), 256, 0, st>>>(out, in);
  check_launch("log_softmax kernel");
}

void launch_log_softmax_backward(const Mat2& out, const Mat2& grad, const Mat2& result, cudaStream_t st) {
  if (result.rows == 0 || result.cols == 0) return;
  if (const int es = smem_row_elem_size({&grad, &result, &out})) {
    const size_t smem = smem_row_bytes(grad, es);
    if (es == 2) {
      allow_row_smem(log_softmax_backward_rows_smem<2>, "log_softmax_backward");
      log_softmax_backward_rows_smem<2><<<unsigned(grad.rows), kRowThreads, smem, st>>>(out, grad, result);
    } else {
      allow_row_smem(log_softmax_backward_rows_smem<4>, "log_softmax_backward");
      log_softmax_backward_rows_smem<4><<<unsigned(grad.rows), kRowThreads, smem, st>>>(out, grad, result);
    }
    check_launch("log_softmax_backward kernel (rows in shared memory)");
    return;
  }
  log_softmax_backward_rows<<<unsigned((result.rows + 7) / 8), 256, 0, st>>>(out, grad, result);
  check_launch("log_softmax_backward kernel");
}

void launch_nll_loss(void* out, void* tw, int32_t dt, const Mat2& logp, const void* target, int64_t ts, bool mean,
                     long long* err, cudaStream_t st) {
  nll_forward<<<1, 512, 0, st>>>(out, tw, dt, logp, static_cast<const long long*>(target), ts, mean, err);
  check_launch("nll_loss kernel");
}

void launch_nll_loss_backward(const Mat2& gi, const void* grad, const void* tw, int32_t dt, const void* target,
                              int64_t ts, bool mean, long long* err, cudaStream_t st) {
  if (gi.rows == 0) return;
  nll_backward<<<unsigned((gi.rows + 255) / 256), 256, 0, st>>>(gi, grad, tw, dt, static_cast<const long long*>(target),
                                                                ts, mean, err);
  check_launch("nll_loss_backward kernel");
}

}  // namespace vramlab::engine::cuda
