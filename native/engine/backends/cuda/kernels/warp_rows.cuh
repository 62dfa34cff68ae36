#pragma once
// What the one-warp-per-row kernels share (transformer.cu's attention fallback and layer
// norm, hf_ops.cu's softmax and attention with dropout): lane arithmetic, warp reductions,
// and a lane's slice of a row of a (B, H, S, D) view.
#include <cstdint>

#include "engine/backends/cuda/kernels/dtype_io.cuh"
#include "engine/backends/cuda/kernels/kernel_args.h"

namespace vramlab::engine::cuda::warp_rows {

__device__ __forceinline__ int lane() { return int(threadIdx.x & 31); }

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int k = 16; k > 0; k >>= 1) v += __shfl_xor_sync(0xffffffffu, v, k);
  return v;
}

__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
  for (int k = 16; k > 0; k >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, k));
  return v;
}

__device__ __forceinline__ int64_t off4(const View4& t, int64_t b, int64_t h, int64_t s, int64_t d) {
  return b * t.stride[0] + h * t.stride[1] + s * t.stride[2] + d * t.stride[3];
}

// This lane's elements (d = lane + 32 k) of row s of a (B, H, S, D) view.
template <int PL>
__device__ __forceinline__ void load_row(const View4& t, int64_t b, int64_t h, int64_t s, float (&r)[PL]) {
#pragma unroll
  for (int k = 0; k < PL; ++k) {
    const int64_t d = lane() + 32 * k;
    r[k] = d < t.size[3] ? load_f(t.ptr, t.dtype, off4(t, b, h, s, d)) : 0.f;
  }
}

template <int PL>
__device__ __forceinline__ float dot_row(const float (&a)[PL], const View4& t, int64_t b, int64_t h, int64_t s) {
  float p = 0;
#pragma unroll
  for (int k = 0; k < PL; ++k) {
    const int64_t d = lane() + 32 * k;
    if (d < t.size[3]) p += a[k] * load_f(t.ptr, t.dtype, off4(t, b, h, s, d));
  }
  return warp_sum(p);
}

template <int PL>
__device__ __forceinline__ void store_row(const View4& t, int64_t b, int64_t h, int64_t s, const float (&r)[PL]) {
#pragma unroll
  for (int k = 0; k < PL; ++k) {
    const int64_t d = lane() + 32 * k;
    if (d < t.size[3]) store_f(t.ptr, t.dtype, off4(t, b, h, s, d), r[k]);
  }
}

}  // namespace vramlab::engine::cuda::warp_rows
