// Counter-based random numbers (Philox4x32-10): element i of a tensor draws from
// counter i under key `seed`, so results do not depend on the launch shape.
#include "engine/backends/cuda/kernels/dtype_io.cuh"
#include "engine/backends/cuda/kernels/launch.h"

namespace vramlab::engine::cuda {

namespace {

constexpr int kThreads = 256;

__device__ __forceinline__ uint4 philox(uint4 ctr, uint2 key) {
#pragma unroll
  for (int r = 0; r < 10; ++r) {
    uint32_t lo0 = 0xD2511F53u * ctr.x, hi0 = __umulhi(0xD2511F53u, ctr.x);
    uint32_t lo1 = 0xCD9E8D57u * ctr.z, hi1 = __umulhi(0xCD9E8D57u, ctr.z);
    ctr = make_uint4(hi1 ^ ctr.y ^ key.x, lo1, hi0 ^ ctr.w ^ key.y, lo0);
    key.x += 0x9E3779B9u;
    key.y += 0xBB67AE85u;
  }
  return ctr;
}

template <int Kind, bool Small>
__global__ void __launch_bounds__(kThreads) random_fill(PointwiseArgs a) {
  const uint2 key = make_uint2(uint32_t(a.seed), uint32_t(a.seed >> 32));
  const int64_t step = int64_t(gridDim.x) * blockDim.x;
  for (int64_t idx = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; idx < a.numel; idx += step) {
    uint4 r = philox(make_uint4(uint32_t(idx), uint32_t(uint64_t(idx) >> 32), 0u, 0u), key);
    // 53-bit uniforms in [0, 1).
    double u1 = double(((uint64_t(r.x) << 32) | r.y) >> 11) * (1.0 / 9007199254740992.0);
    double v;
    if constexpr (Kind == 0) {
      double u2 = double(((uint64_t(r.z) << 32) | r.w) >> 11) * (1.0 / 9007199254740992.0);
      double rad = sqrt(-2.0 * log(1.0 - u1));  // 1 - u1 in (0, 1]
      v = a.r0 + a.r1 * rad * cospi(2.0 * u2);
    } else {
      v = a.r0 + (a.r1 - a.r0) * u1;
    }
    int64_t off[4];
    offsets_of<Small>(a, idx, off);
    store_d(a.out.ptr, a.out.dtype, off[0], v);
  }
}

template <int Kind>
void go(const PointwiseArgs& a, int sms, cudaStream_t st) {
  if (a.numel < (int64_t(1) << 31))
    random_fill<Kind, true><<<grid_for(a.numel, kThreads, sms), kThreads, 0, st>>>(a);
  else
    random_fill<Kind, false><<<grid_for(a.numel, kThreads, sms), kThreads, 0, st>>>(a);
}

}  // namespace

void launch_random(int kind, const PointwiseArgs& a, int sms, cudaStream_t st) {
  if (a.numel == 0) return;
  if (kind == 0)
    go<0>(a, sms, st);
  else
    go<1>(a, sms, st);
  check_launch("random kernel");
}

}  // namespace vramlab::engine::cuda
