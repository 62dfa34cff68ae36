// log_softmax over the last dim of a 2-D tensor (+ backward), one warp per row, and
// nll_loss (+ backward). Out-of-range targets set an error word the backend checks
// at its next synchronizing call, as a device-side assert surfaces in PyTorch.
#include <cfloat>

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

void launch_log_softmax(const Mat2& out, const Mat2& in, cudaStream_t st) {
  if (in.rows == 0 || in.cols == 0) return;
  log_softmax_rows<<<unsigned((in.rows + 7) / 8), 256, 0, st>>>(out, in);
  check_launch("log_softmax kernel");
}

void launch_log_softmax_backward(const Mat2& out, const Mat2& grad, const Mat2& result, cudaStream_t st) {
  if (result.rows == 0 || result.cols == 0) return;
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
