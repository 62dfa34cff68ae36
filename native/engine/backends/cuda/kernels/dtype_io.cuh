#pragma once
// Loads and stores of any engine dtype as float (the op math type, as PyTorch's
// opmath_type), 8-wide vector loads for the contiguous fast path, and launch checks.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

#include "engine/backends/cuda/kernels/kernel_args.h"

namespace vramlab::engine::cuda {

inline void check_launch(const char* what) {
  cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + " launch failed: " + cudaGetErrorString(e));
}

__device__ __forceinline__ float load_f(const void* p, int dt, int64_t i) {
  switch (dt) {
    case kF32:
      return static_cast<const float*>(p)[i];
    case kF16:
      return __half2float(static_cast<const __half*>(p)[i]);
    case kBF16:
      return __bfloat162float(static_cast<const __nv_bfloat16*>(p)[i]);
    case kF64:
      return float(static_cast<const double*>(p)[i]);
    default:
      return float(static_cast<const long long*>(p)[i]);
  }
}

__device__ __forceinline__ void store_f(void* p, int dt, int64_t i, float v) {
  switch (dt) {
    case kF32:
      static_cast<float*>(p)[i] = v;
      break;
    case kF16:
      static_cast<__half*>(p)[i] = __float2half_rn(v);
      break;
    case kBF16:
      static_cast<__nv_bfloat16*>(p)[i] = __float2bfloat16_rn(v);
      break;
    case kF64:
      static_cast<double*>(p)[i] = double(v);
      break;
    default:
      static_cast<long long*>(p)[i] = static_cast<long long>(v);
      break;
  }
}

__device__ __forceinline__ void store_d(void* p, int dt, int64_t i, double v) {
  switch (dt) {
    case kF64:
      static_cast<double*>(p)[i] = v;
      break;
    case kI64:
      static_cast<long long*>(p)[i] = static_cast<long long>(v);
      break;
    default:
      store_f(p, dt, i, float(v));
      break;
  }
}

// 8 consecutive elements starting at i (i % 8 == 0, base 16-byte aligned); f32/f16/bf16.
__device__ __forceinline__ void load8(const void* p, int dt, int64_t i, float (&v)[8]) {
  if (dt == kF32) {
    const float4* q = reinterpret_cast<const float4*>(static_cast<const float*>(p) + i);
    float4 x = q[0], y = q[1];
    v[0] = x.x;
    v[1] = x.y;
    v[2] = x.z;
    v[3] = x.w;
    v[4] = y.x;
    v[5] = y.y;
    v[6] = y.z;
    v[7] = y.w;
  } else if (dt == kF16) {
    uint4 r = *reinterpret_cast<const uint4*>(static_cast<const __half*>(p) + i);
    const __half2* h = reinterpret_cast<const __half2*>(&r);
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      float2 f = __half22float2(h[k]);
      v[2 * k] = f.x;
      v[2 * k + 1] = f.y;
    }
  } else {
    uint4 r = *reinterpret_cast<const uint4*>(static_cast<const __nv_bfloat16*>(p) + i);
    const __nv_bfloat162* h = reinterpret_cast<const __nv_bfloat162*>(&r);
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      float2 f = __bfloat1622float2(h[k]);
      v[2 * k] = f.x;
      v[2 * k + 1] = f.y;
    }
  }
}

__device__ __forceinline__ void store8(void* p, int dt, int64_t i, const float (&v)[8]) {
  if (dt == kF32) {
    float4* q = reinterpret_cast<float4*>(static_cast<float*>(p) + i);
    q[0] = make_float4(v[0], v[1], v[2], v[3]);
    q[1] = make_float4(v[4], v[5], v[6], v[7]);
  } else if (dt == kF16) {
    uint4 r;
    __half2* h = reinterpret_cast<__half2*>(&r);
#pragma unroll
    for (int k = 0; k < 4; ++k) h[k] = __floats2half2_rn(v[2 * k], v[2 * k + 1]);
    *reinterpret_cast<uint4*>(static_cast<__half*>(p) + i) = r;
  } else {
    uint4 r;
    __nv_bfloat162* h = reinterpret_cast<__nv_bfloat162*>(&r);
#pragma unroll
    for (int k = 0; k < 4; ++k) h[k] = __floats2bfloat162_rn(v[2 * k], v[2 * k + 1]);
    *reinterpret_cast<uint4*>(static_cast<__nv_bfloat16*>(p) + i) = r;
  }
}

__device__ __forceinline__ uint32_t fastdiv(const FastDiv& f, uint32_t n) { return (__umulhi(n, f.m) + n) >> f.shift; }

// Element offsets of linear index `idx` for `nops` operands over coalesced dims.
template <bool Small>
__device__ __forceinline__ void offsets_of(const PointwiseArgs& a, int64_t idx, int64_t (&off)[4]) {
  off[0] = off[1] = off[2] = off[3] = 0;
  if constexpr (Small) {
    uint32_t rem = uint32_t(idx);
    for (int d = a.ndim - 1; d >= 0; --d) {
      uint32_t q = d > 0 ? fastdiv(a.div[d], rem) : 0;
      uint32_t c = d > 0 ? rem - q * uint32_t(a.sizes[d]) : rem;
      rem = q;
      off[0] += int64_t(c) * a.out.strides[d];
      for (int k = 0; k < a.nin; ++k) off[k + 1] += int64_t(c) * a.in[k].strides[d];
    }
  } else {
    int64_t rem = idx;
    for (int d = a.ndim - 1; d >= 0; --d) {
      int64_t c = d > 0 ? rem % a.sizes[d] : rem;
      rem = d > 0 ? rem / a.sizes[d] : 0;
      off[0] += c * a.out.strides[d];
      for (int k = 0; k < a.nin; ++k) off[k + 1] += c * a.in[k].strides[d];
    }
  }
}

inline int grid_for(int64_t work_items, int threads, int num_sms) {
  int64_t blocks = (work_items + threads - 1) / threads;
  int64_t cap = int64_t(num_sms) * 16;  // grid-stride beyond a few waves
  if (blocks > cap) blocks = cap;
  return int(blocks < 1 ? 1 : blocks);
}

}  // namespace vramlab::engine::cuda
