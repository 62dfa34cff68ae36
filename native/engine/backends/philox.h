#pragma once
// Counter-based random numbers shared by the CPU reference and the CUDA kernels, so a
// dropout mask is the same bytes on every data backend: Philox4x32-10 of counter i under
// key `seed`, its first word's top 24 bits as a float in [0, 1).
#include <cstdint>

#ifdef __CUDACC__
#define VRAMLAB_HD __host__ __device__ __forceinline__
#else
#define VRAMLAB_HD inline
#endif

namespace vramlab::engine {

VRAMLAB_HD uint32_t philox_mulhi(uint32_t a, uint32_t b) { return uint32_t((uint64_t(a) * b) >> 32); }

VRAMLAB_HD float philox_uniform(uint64_t seed, uint64_t i) {
  uint32_t c0 = uint32_t(i), c1 = uint32_t(i >> 32), c2 = 0, c3 = 0;
  uint32_t k0 = uint32_t(seed), k1 = uint32_t(seed >> 32);
  for (int r = 0; r < 10; ++r) {
    const uint32_t lo0 = 0xD2511F53u * c0, hi0 = philox_mulhi(0xD2511F53u, c0);
    const uint32_t lo1 = 0xCD9E8D57u * c2, hi1 = philox_mulhi(0xCD9E8D57u, c2);
    const uint32_t n0 = hi1 ^ c1 ^ k0, n2 = hi0 ^ c3 ^ k1;
    c0 = n0;
    c1 = lo1;
    c2 = n2;
    c3 = lo0;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  return float(c0 >> 8) * (1.0f / 16777216.0f);
}

// Whether element i survives dropout with probability p of being dropped.
VRAMLAB_HD bool philox_keep(uint64_t seed, uint64_t i, double p) { return double(philox_uniform(seed, i)) >= p; }

}  // namespace vramlab::engine
