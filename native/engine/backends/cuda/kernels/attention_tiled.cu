// Tiled attention, FlashAttention-2 style: the fast path of launch_attention and
// launch_attention_backward (transformer.cu keeps the one-warp-per-row kernels as the
// fallback for what this file does not take).
//
// Layout of the work. A block of 4 warps owns a tile of 64 rows; each warp owns 16 of
// them, and everything a warp does to its rows (scores, softmax, the products that
// feed its rows' accumulators) touches only its own rows of shared memory, so the block
// synchronises only around loading the tiles it shares (K and V in the forward, Q and
// dO in the dK/dV pass).
//   forward      block = 64 queries, loop over 64-key tiles: S = Q K^T, online softmax,
//                O = O * corr + P V; out = O / l, lse = m + log l.
//   dQ           block = 64 queries, loop over 64-key tiles: P = exp(S - lse),
//                dS = P (dO V^T - D), dQ += dS K.
//   dK, dV       block = 64 keys, loop over 32-query tiles, all transposed so each warp
//                still owns rows (keys): P^T = exp(K Q^T - lse), dV += P^T dO,
//                dS^T = P^T (V dO^T - D), dK += dS^T Q.
// D = rowsum(dO * O) is recomputed by both backward kernels (per query tile) rather than
// stored: kernels here allocate nothing, every buffer is one the engine passed in.
//
// Matrix products: bf16/fp16 use tensor cores through nvcuda::wmma (16x16x16, float
// accumulation); fp32 runs a register-blocked product on the CUDA cores (TF32 would
// miss the 1e-4 float tolerance). Both read and write shared memory, so the softmax code
// is the same for every dtype. The forward's O accumulator lives in float shared memory
// (the online softmax rescales its rows, and wmma's register layout is unspecified);
// dQ, dK and dV, only ever added to, stay in wmma fragments for bf16/fp16 (WarpAcc).
#include <mma.h>

#include <cfloat>
#include <cstdint>
#include <type_traits>

#include "engine/backends/cuda/kernels/dtype_io.cuh"
#include "engine/backends/cuda/kernels/launch.h"
#include "engine/backends/cuda/kernels/tile_launch.cuh"

namespace vramlab::engine::cuda {

namespace {

using namespace tile_launch;

using namespace nvcuda;

constexpr int kThreads = 128;  // 4 warps x 16 rows = 64-row tiles
constexpr int kRowsPerWarp = 16;

__device__ __forceinline__ int lane_id() { return int(threadIdx.x & 31); }
__device__ __forceinline__ int warp_id() { return int(threadIdx.x >> 5); }

template <class T>
__device__ __forceinline__ T from_f(float x);
template <>
__device__ __forceinline__ float from_f<float>(float x) {
  return x;
}
template <>
__device__ __forceinline__ __half from_f<__half>(float x) {
  return __float2half_rn(x);
}
template <>
__device__ __forceinline__ __nv_bfloat16 from_f<__nv_bfloat16>(float x) {
  return __float2bfloat16_rn(x);
}
__device__ __forceinline__ float to_f(float x) { return x; }
__device__ __forceinline__ float to_f(__half x) { return __half2float(x); }
__device__ __forceinline__ float to_f(__nv_bfloat16 x) { return __bfloat162float(x); }

// Row pitches in shared memory: 16 bytes of padding per row keeps rows 16-byte aligned
// (vector stores, wmma's ldm) and shifts consecutive rows by 4 banks.
template <class T>
constexpr int pitch(int cols) {
  return cols + int(16 / sizeof(T));
}
constexpr int fpitch(int cols) { return cols + 4; }

// C (16 x N, float) = or += A (16 x K) * op(B), all in shared memory; one warp.
// kBT: op(B) = B^T with B stored N x K row-major; else B stored K x N row-major.
template <class T, int N, int K, bool kBT>
__device__ __forceinline__ void warp_mm(float* C, int ldc, const T* A, int lda, const T* B, int ldb, bool accumulate) {
  static_assert(N % 16 == 0 && K % 16 == 0, "16x16 tiles");
  if constexpr (std::is_same_v<T, float>) {
    // Each lane: rows lr + 4i (i < 4), columns lc + 8j (j < N/8). Rows 4 apart and
    // columns 8 apart land in distinct banks with the +4 padding.
    constexpr int NJ = N / 8;
    const int ln = lane_id(), lr = ln >> 3, lc = ln & 7;
    float acc[4][NJ];
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
      for (int j = 0; j < NJ; ++j) acc[i][j] = accumulate ? C[(lr + 4 * i) * ldc + lc + 8 * j] : 0.f;
#pragma unroll 4
    for (int k = 0; k < K; ++k) {
      float a[4], b[NJ];
#pragma unroll
      for (int i = 0; i < 4; ++i) a[i] = A[(lr + 4 * i) * lda + k];
#pragma unroll
      for (int j = 0; j < NJ; ++j) b[j] = kBT ? B[(lc + 8 * j) * ldb + k] : B[k * ldb + lc + 8 * j];
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < NJ; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
    }
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
      for (int j = 0; j < NJ; ++j) C[(lr + 4 * i) * ldc + lc + 8 * j] = acc[i][j];
  } else {
    using LayoutB = std::conditional_t<kBT, wmma::col_major, wmma::row_major>;
    wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> a[K / 16];
#pragma unroll
    for (int kk = 0; kk < K / 16; ++kk) wmma::load_matrix_sync(a[kk], A + kk * 16, lda);
#pragma unroll
    for (int n = 0; n < N / 16; ++n) {
      wmma::fragment<wmma::accumulator, 16, 16, 16, float> c;
      if (accumulate)
        wmma::load_matrix_sync(c, C + n * 16, ldc, wmma::mem_row_major);
      else
        wmma::fill_fragment(c, 0.f);
#pragma unroll
      for (int kk = 0; kk < K / 16; ++kk) {
        wmma::fragment<wmma::matrix_b, 16, 16, 16, T, LayoutB> b;
        wmma::load_matrix_sync(b, kBT ? B + n * 16 * ldb + kk * 16 : B + kk * 16 * ldb + n * 16, ldb);
        wmma::mma_sync(c, a[kk], b, c);
      }
      wmma::store_matrix_sync(C + n * 16, c, ldc, wmma::mem_row_major);
    }
  }
}

__device__ __forceinline__ int64_t row_off(const View4& t, int64_t b, int64_t h, int64_t s) {
  return b * t.stride[0] + h * t.stride[1] + s * t.stride[2];
}

// Rows [row0, row0 + ROWS) of head (b, h) of t into dst (pitch ld), 16-byte vectors,
// rows at or past nrows zero-filled. The whole block takes part.
template <class T, int ROWS, int D>
__device__ __forceinline__ void load_tile(T* dst, int ld, const View4& t, int64_t b, int64_t h, int64_t row0,
                                          int64_t nrows) {
  constexpr int kVec = 16 / sizeof(T), kPerRow = D / kVec;
  const T* base = static_cast<const T*>(t.ptr) + b * t.stride[0] + h * t.stride[1];
  for (int i = threadIdx.x; i < ROWS * kPerRow; i += kThreads) {
    const int r = i / kPerRow, c = (i % kPerRow) * kVec;
    const int64_t row = row0 + r;
    uint4 val = make_uint4(0, 0, 0, 0);
    if (row < nrows) val = *reinterpret_cast<const uint4*>(base + row * t.stride[2] + c);
    *reinterpret_cast<uint4*>(dst + r * ld + c) = val;
  }
}

// A warp's 16 float rows (pitch ld) to rows [row0, row0 + 16) of t, each row scaled by
// row_scale[r]; lanes along the head dim, so the stores coalesce.
template <class T, int D>
__device__ __forceinline__ void store_rows(const View4& t, int64_t b, int64_t h, int64_t row0, int64_t nrows,
                                           const float* src, int ld) {
  T* base = static_cast<T*>(t.ptr) + b * t.stride[0] + h * t.stride[1];
  for (int i = lane_id(); i < kRowsPerWarp * D; i += 32) {
    const int r = i / D, d = i % D;
    if (row0 + r < nrows) base[(row0 + r) * t.stride[2] + d] = from_f<T>(src[r * ld + d]);
  }
}

template <int D>
__device__ __forceinline__ void zero_rows(float* p, int ld) {
  for (int i = lane_id(); i < kRowsPerWarp * D; i += 32) p[(i / D) * ld + i % D] = 0.f;
}

// A warp's 16 x N float accumulator that is only ever added to (dQ, dK, dV): wmma
// fragments in registers for bf16/fp16, so the products skip a shared-memory round
// trip per tile; rows of float shared memory for fp32's CUDA-core product.
template <class T, int N>
struct WarpAcc {
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> c[N / 16];
  __device__ __forceinline__ void zero() {
#pragma unroll
    for (int n = 0; n < N / 16; ++n) wmma::fill_fragment(c[n], 0.f);
  }
  // += A (16 x K) * op(B), as warp_mm.
  template <int K, bool kBT>
  __device__ __forceinline__ void add(const T* A, int lda, const T* B, int ldb) {
    using LayoutB = std::conditional_t<kBT, wmma::col_major, wmma::row_major>;
    wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> a[K / 16];
#pragma unroll
    for (int kk = 0; kk < K / 16; ++kk) wmma::load_matrix_sync(a[kk], A + kk * 16, lda);
#pragma unroll
    for (int n = 0; n < N / 16; ++n)
#pragma unroll
      for (int kk = 0; kk < K / 16; ++kk) {
        wmma::fragment<wmma::matrix_b, 16, 16, 16, T, LayoutB> b;
        wmma::load_matrix_sync(b, kBT ? B + n * 16 * ldb + kk * 16 : B + kk * 16 * ldb + n * 16, ldb);
        wmma::mma_sync(c[n], a[kk], b, c[n]);
      }
  }
  // The rows as float into dst (pitch ld); returns dst.
  __device__ __forceinline__ const float* rows(float* dst, int ld) {
#pragma unroll
    for (int n = 0; n < N / 16; ++n) wmma::store_matrix_sync(dst + n * 16, c[n], ld, wmma::mem_row_major);
    __syncwarp();
    return dst;
  }
};

template <int N>
struct WarpAcc<float, N> {
  float* p = nullptr;  // 16 rows, pitch ld
  int ld = 0;
  __device__ __forceinline__ void zero() { zero_rows<N>(p, ld); }
  template <int K, bool kBT>
  __device__ __forceinline__ void add(const float* A, int lda, const float* B, int ldb) {
    warp_mm<float, N, K, kBT>(p, ld, A, lda, B, ldb, true);
  }
  __device__ __forceinline__ const float* rows(float*, int) {
    __syncwarp();
    return p;
  }
};

// ---- shared-memory layouts (bytes), shared by the kernels and their launches ----

template <class T, int D>
struct FwdSmem {
  static constexpr int BR = 64, BC = 64;
  static constexpr int LDT = pitch<T>(D), LDS = fpitch(BC), LDO = fpitch(D);
  static constexpr bool kF = std::is_same_v<T, float>;
  static constexpr int LDP = kF ? LDS : pitch<T>(BC);  // fp32: P overwrites S in place
  static constexpr size_t q = 0, k = q + sizeof(T) * BR * LDT, v = k + sizeof(T) * BC * LDT,
                          s = v + sizeof(T) * BC * LDT, o = s + sizeof(float) * BR * LDS,
                          p = o + sizeof(float) * BR * LDO, bytes = p + (kF ? 0 : sizeof(T) * BR * LDP);
};

template <class T, int D>
struct DqSmem {
  static constexpr int BR = 64, BC = 64;
  static constexpr int LDT = pitch<T>(D), LDS = fpitch(BC), LDO = fpitch(D);
  static constexpr bool kF = std::is_same_v<T, float>;
  // dS overwrites S in place (for bf16/fp16 as the first half of each float row, once
  // the warp holds its row in registers): no separate buffer, 3 blocks an SM at D = 64.
  static constexpr int LDP = LDS * int(sizeof(float) / sizeof(T));
  // dq: fp32's accumulator rows; bf16/fp16 keep dQ in registers and stage it for the
  // store in the K and V tiles, free once the key loop is done.
  static constexpr size_t q = 0, g = q + sizeof(T) * BR * LDT, k = g + sizeof(T) * BR * LDT,
                          v = k + sizeof(T) * BC * LDT, s = v + sizeof(T) * BC * LDT, dp = s + sizeof(float) * BR * LDS,
                          dq = dp + sizeof(float) * BR * LDS, bytes = dq + (kF ? sizeof(float) * BR * LDO : 0);
  static_assert(kF || s - k >= sizeof(float) * BR * LDO, "dQ staging fits the K, V tiles");
};

template <class T, int D>
struct DkvSmem {
  static constexpr int BC = 64, BR = 32;  // 64 keys per block, 32 queries per step
  static constexpr int LDT = pitch<T>(D), LDS = fpitch(BR), LDO = fpitch(D);
  static constexpr bool kF = std::is_same_v<T, float>;
  static constexpr int LDP = kF ? LDS : pitch<T>(BR);
  // dk, dv: fp32's accumulator rows; bf16/fp16 keep them in registers and stage them
  // for the store from offset q on (Q, dO, S, dP, free once the query loop is done).
  static constexpr size_t k = 0, v = k + sizeof(T) * BC * LDT, q = v + sizeof(T) * BC * LDT,
                          g = q + sizeof(T) * BR * LDT, s = g + sizeof(T) * BR * LDT, dp = s + sizeof(float) * BC * LDS,
                          lq = dp + sizeof(float) * BC * LDS, dq = lq + sizeof(float) * BR,
                          dk = dq + sizeof(float) * BR, dv = dk + (kF ? sizeof(float) * BC * LDO : 0),
                          p = dv + (kF ? sizeof(float) * BC * LDO : 0), bytes = p + (kF ? 0 : sizeof(T) * BC * LDP);
  static_assert(kF || lq - q >= sizeof(float) * BC * LDO, "dK/dV staging fits Q, dO, S, dP");
};

// ---- forward ----------------------------------------------------------------------

// grid (B * H, query tiles); the causal mask is top-left aligned (key j seen by query
// i when j <= i), as in transformer.cu.
template <class T, int D>
__global__ void __launch_bounds__(kThreads)
    flash_fwd_kernel(View4 out, View4 lse, View4 q, View4 k, View4 v, bool causal, float scale) {
  using L = FwdSmem<T, D>;
  constexpr int BR = L::BR, BC = L::BC;
  extern __shared__ __align__(128) unsigned char smem[];
  T* Qs = reinterpret_cast<T*>(smem + L::q);
  T* Ks = reinterpret_cast<T*>(smem + L::k);
  T* Vs = reinterpret_cast<T*>(smem + L::v);
  float* Ss = reinterpret_cast<float*>(smem + L::s);
  float* Os = reinterpret_cast<float*>(smem + L::o);
  T* Ps = L::kF ? reinterpret_cast<T*>(Ss) : reinterpret_cast<T*>(smem + L::p);

  const int64_t H = q.size[1], Sq = q.size[2], Sk = k.size[2];
  const int64_t b = blockIdx.x / H, h = blockIdx.x % H;
  const int64_t hk = h / (H / k.size[1]);                       // grouped-query: q head h reads kv head h / (Hq / Hk)
  const int64_t q0 = int64_t(gridDim.y - 1 - blockIdx.y) * BR;  // longest (causal) tiles first
  const int w = warp_id(), ln = lane_id();
  const int r = ln >> 1, half = ln & 1;  // softmax: a lane pair per row, alternate columns
  const int64_t qi = q0 + w * kRowsPerWarp + r;

  load_tile<T, BR, D>(Qs, L::LDT, q, b, h, q0, Sq);
  const T* Qw = Qs + w * kRowsPerWarp * L::LDT;
  float* Sw = Ss + w * kRowsPerWarp * L::LDS;
  T* Pw = Ps + w * kRowsPerWarp * L::LDP;
  float* Ow = Os + w * kRowsPerWarp * L::LDO;
  zero_rows<D>(Ow, L::LDO);

  float m = -INFINITY, l = 0.f;
  const int64_t kend = causal ? (q0 + BR < Sk ? q0 + BR : Sk) : Sk;
  for (int64_t k0 = 0; k0 < kend; k0 += BC) {
    __syncthreads();  // all warps are done with the last K, V tiles (and Q is in)
    load_tile<T, BC, D>(Ks, L::LDT, k, b, hk, k0, Sk);
    load_tile<T, BC, D>(Vs, L::LDT, v, b, hk, k0, Sk);
    __syncthreads();
    warp_mm<T, BC, D, true>(Sw, L::LDS, Qw, L::LDT, Ks, L::LDT, false);  // S = Q K^T
    __syncwarp();
    // Online softmax. Key 0 is in the first tile and every query sees it, so m is
    // finite from the first tile on and exp(-inf - m) = 0 masks cleanly.
    float sv[BC / 2], mx = -INFINITY;
#pragma unroll
    for (int t = 0; t < BC / 2; ++t) {
      const int c = half + 2 * t;
      const int64_t j = k0 + c;
      float s = Sw[r * L::LDS + c] * scale;
      if (j >= Sk || (causal && j > qi)) s = -INFINITY;
      sv[t] = s;
      mx = fmaxf(mx, s);
    }
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
    const float m_new = fmaxf(m, mx);
    const float corr = __expf(m - m_new);
    float sum = 0.f;
#pragma unroll
    for (int t = 0; t < BC / 2; ++t) {
      const float p = __expf(sv[t] - m_new);
      sum += p;
      Pw[r * L::LDP + half + 2 * t] = from_f<T>(p);
    }
    sum += __shfl_xor_sync(0xffffffffu, sum, 1);
    l = l * corr + sum;
    m = m_new;
#pragma unroll 8
    for (int t = 0; t < D / 2; ++t) Ow[r * L::LDO + half + 2 * t] *= corr;
    __syncwarp();
    warp_mm<T, D, BC, false>(Ow, L::LDO, Pw, L::LDP, Vs, L::LDT, true);  // O += P V
    __syncwarp();
  }
  const float inv = 1.f / l;
#pragma unroll 8
  for (int t = 0; t < D / 2; ++t) Ow[r * L::LDO + half + 2 * t] *= inv;
  if (lse.ptr && half == 0 && qi < Sq) store_f(lse.ptr, lse.dtype, row_off(lse, b, h, qi), m + __logf(l));
  __syncwarp();
  store_rows<T, D>(out, b, h, q0 + w * kRowsPerWarp, Sq, Ow, L::LDO);
}

// ---- backward: dQ -------------------------------------------------------------------

// grid (B * H, query tiles). P = exp(S * scale - lse), dS = P (dP - D) * scale with
// dP = dO V^T and D = rowsum(dO * O), dQ = dS K.
template <class T, int D>
__global__ void __launch_bounds__(kThreads) flash_bwd_dq_kernel(View4 dq, View4 dout, View4 q, View4 k, View4 v,
                                                                View4 out, View4 lse, bool causal, float scale) {
  using L = DqSmem<T, D>;
  constexpr int BR = L::BR, BC = L::BC;
  extern __shared__ __align__(128) unsigned char smem[];
  T* Qs = reinterpret_cast<T*>(smem + L::q);
  T* Gs = reinterpret_cast<T*>(smem + L::g);
  T* Ks = reinterpret_cast<T*>(smem + L::k);
  T* Vs = reinterpret_cast<T*>(smem + L::v);
  float* Ss = reinterpret_cast<float*>(smem + L::s);
  float* dPs = reinterpret_cast<float*>(smem + L::dp);
  T* Ps = reinterpret_cast<T*>(Ss);  // dS over S

  const int64_t H = q.size[1], Sq = q.size[2], Sk = k.size[2];
  const int64_t b = blockIdx.x / H, h = blockIdx.x % H;
  const int64_t hk = h / (H / k.size[1]);
  const int64_t q0 = int64_t(gridDim.y - 1 - blockIdx.y) * BR;
  const int w = warp_id(), ln = lane_id();
  const int r = ln >> 1, half = ln & 1;
  const int64_t qi = q0 + w * kRowsPerWarp + r;
  const bool row_ok = qi < Sq;

  load_tile<T, BR, D>(Qs, L::LDT, q, b, h, q0, Sq);
  load_tile<T, BR, D>(Gs, L::LDT, dout, b, h, q0, Sq);
  const T* Qw = Qs + w * kRowsPerWarp * L::LDT;
  const T* Gw = Gs + w * kRowsPerWarp * L::LDT;
  float* Sw = Ss + w * kRowsPerWarp * L::LDS;
  float* dPw = dPs + w * kRowsPerWarp * L::LDS;
  T* Pw = Ps + w * kRowsPerWarp * L::LDP;
  WarpAcc<T, D> dQ;
  if constexpr (L::kF) {
    dQ.p = reinterpret_cast<float*>(smem + L::dq) + w * kRowsPerWarp * L::LDO;
    dQ.ld = L::LDO;
  }
  dQ.zero();
  __syncthreads();

  // This row's lse and D (the lane pair splits the head dim).
  float li = 0.f, di = 0.f;
  if (row_ok) {
    li = load_f(lse.ptr, lse.dtype, row_off(lse, b, h, qi));
    const T* o_row = static_cast<const T*>(out.ptr) + row_off(out, b, h, qi);
    for (int d = half; d < D; d += 2) di += to_f(Gw[r * L::LDT + d]) * to_f(o_row[d]);
  }
  di += __shfl_xor_sync(0xffffffffu, di, 1);

  const int64_t kend = causal ? (q0 + BR < Sk ? q0 + BR : Sk) : Sk;
  for (int64_t k0 = 0; k0 < kend; k0 += BC) {
    __syncthreads();
    load_tile<T, BC, D>(Ks, L::LDT, k, b, hk, k0, Sk);
    load_tile<T, BC, D>(Vs, L::LDT, v, b, hk, k0, Sk);
    __syncthreads();
    warp_mm<T, BC, D, true>(Sw, L::LDS, Qw, L::LDT, Ks, L::LDT, false);   // S = Q K^T
    warp_mm<T, BC, D, true>(dPw, L::LDS, Gw, L::LDT, Vs, L::LDT, false);  // dP = dO V^T
    __syncwarp();
    float ds[BC / 2];
#pragma unroll
    for (int t = 0; t < BC / 2; ++t) {
      const int c = half + 2 * t;
      const int64_t j = k0 + c;
      const bool ok = row_ok && j < Sk && !(causal && j > qi);
      const float p = ok ? __expf(Sw[r * L::LDS + c] * scale - li) : 0.f;
      ds[t] = p * (dPw[r * L::LDS + c] - di) * scale;
    }
    __syncwarp();  // all of S read before dS overwrites it
#pragma unroll
    for (int t = 0; t < BC / 2; ++t) Pw[r * L::LDP + half + 2 * t] = from_f<T>(ds[t]);
    __syncwarp();
    dQ.template add<BC, false>(Pw, L::LDP, Ks, L::LDT);  // dQ += dS K
    __syncwarp();
  }
  __syncthreads();  // the K, V tiles are free: staging for bf16/fp16
  float* stage = reinterpret_cast<float*>(smem + L::k) + w * kRowsPerWarp * L::LDO;
  store_rows<T, D>(dq, b, h, q0 + w * kRowsPerWarp, Sq, dQ.rows(stage, L::LDO), L::LDO);
}

// ---- backward: dK, dV ---------------------------------------------------------------

// grid (B * H, key tiles). Transposed so each warp owns 16 keys: P^T = exp(K Q^T *
// scale - lse), dV += P^T dO, dS^T = P^T (V dO^T - D) * scale, dK += dS^T Q.
// Head dim 64 fits 4 blocks an SM in shared memory; the bound keeps registers from
// being what limits it to 3.
template <class T, int D>
__global__ void __launch_bounds__(kThreads, D == 64 ? 4 : 2)
    flash_bwd_dkdv_kernel(View4 dk, View4 dv, View4 dout, View4 q, View4 k, View4 v, View4 out, View4 lse, bool causal,
                          float scale) {
  using L = DkvSmem<T, D>;
  constexpr int BR = L::BR, BC = L::BC;
  extern __shared__ __align__(128) unsigned char smem[];
  T* Ks = reinterpret_cast<T*>(smem + L::k);
  T* Vs = reinterpret_cast<T*>(smem + L::v);
  T* Qs = reinterpret_cast<T*>(smem + L::q);
  T* Gs = reinterpret_cast<T*>(smem + L::g);
  float* Ss = reinterpret_cast<float*>(smem + L::s);
  float* dPs = reinterpret_cast<float*>(smem + L::dp);
  float* Lq = reinterpret_cast<float*>(smem + L::lq);
  float* Dq = reinterpret_cast<float*>(smem + L::dq);
  T* Ps = L::kF ? reinterpret_cast<T*>(Ss) : reinterpret_cast<T*>(smem + L::p);

  // grid (B * Hk, key tiles): dK, dV of kv head hk summed over the G query heads reading it
  const int64_t Hk = k.size[1], G = q.size[1] / Hk, Sq = q.size[2], Sk = k.size[2];
  const int64_t b = blockIdx.x / Hk, hk = blockIdx.x % Hk;
  const int64_t k0 = int64_t(blockIdx.y) * BC;  // early key tiles see the most queries: first
  const int w = warp_id(), ln = lane_id();
  const int r = ln >> 1, half = ln & 1;
  const int64_t kj = k0 + w * kRowsPerWarp + r;

  load_tile<T, BC, D>(Ks, L::LDT, k, b, hk, k0, Sk);
  load_tile<T, BC, D>(Vs, L::LDT, v, b, hk, k0, Sk);
  const T* Kw = Ks + w * kRowsPerWarp * L::LDT;
  const T* Vw = Vs + w * kRowsPerWarp * L::LDT;
  float* Sw = Ss + w * kRowsPerWarp * L::LDS;
  float* dPw = dPs + w * kRowsPerWarp * L::LDS;
  T* Pw = Ps + w * kRowsPerWarp * L::LDP;
  WarpAcc<T, D> dK, dV;
  if constexpr (L::kF) {
    dK.p = reinterpret_cast<float*>(smem + L::dk) + w * kRowsPerWarp * L::LDO;
    dV.p = reinterpret_cast<float*>(smem + L::dv) + w * kRowsPerWarp * L::LDO;
    dK.ld = dV.ld = L::LDO;
  }
  dK.zero();
  dV.zero();

  // Causal: queries before k0 see none of these keys.
  for (int64_t h = hk * G; h < (hk + 1) * G; ++h)
    for (int64_t i0 = causal ? k0 / BR * BR : 0; i0 < Sq; i0 += BR) {
      __syncthreads();  // everyone is done with the last Q, dO, lse, D
      load_tile<T, BR, D>(Qs, L::LDT, q, b, h, i0, Sq);
      load_tile<T, BR, D>(Gs, L::LDT, dout, b, h, i0, Sq);
      __syncthreads();
      // lse and D of the BR queries: 8 rows per warp, lanes along the head dim.
      for (int rr = 0; rr < BR / 4; ++rr) {
        const int row = w * (BR / 4) + rr;
        const int64_t i = i0 + row;
        float part = 0.f;
        if (i < Sq) {
          const T* o_row = static_cast<const T*>(out.ptr) + row_off(out, b, h, i);
          for (int d = ln; d < D; d += 32) part += to_f(Gs[row * L::LDT + d]) * to_f(o_row[d]);
        }
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) part += __shfl_xor_sync(0xffffffffu, part, o);
        if (ln == 0) {
          Dq[row] = part;
          Lq[row] = i < Sq ? load_f(lse.ptr, lse.dtype, row_off(lse, b, h, i)) : 0.f;
        }
      }
      __syncthreads();
      warp_mm<T, BR, D, true>(Sw, L::LDS, Kw, L::LDT, Qs, L::LDT, false);  // S^T = K Q^T
      __syncwarp();
#pragma unroll
      for (int t = 0; t < BR / 2; ++t) {
        const int c = half + 2 * t;
        const int64_t i = i0 + c;
        const bool ok = i < Sq && kj < Sk && !(causal && kj > i);
        const float p = ok ? __expf(Sw[r * L::LDS + c] * scale - Lq[c]) : 0.f;
        Sw[r * L::LDS + c] = p;  // float P^T, for dS (fp32: Pw is Sw)
        Pw[r * L::LDP + c] = from_f<T>(p);
      }
      __syncwarp();
      dV.template add<BR, false>(Pw, L::LDP, Gs, L::LDT);                   // dV += P^T dO
      warp_mm<T, BR, D, true>(dPw, L::LDS, Vw, L::LDT, Gs, L::LDT, false);  // dP^T = V dO^T
      __syncwarp();
#pragma unroll
      for (int t = 0; t < BR / 2; ++t) {
        const int c = half + 2 * t;
        Pw[r * L::LDP + c] = from_f<T>(Sw[r * L::LDS + c] * (dPw[r * L::LDS + c] - Dq[c]) * scale);  // dS^T
      }
      __syncwarp();
      dK.template add<BR, false>(Pw, L::LDP, Qs, L::LDT);  // dK += dS^T Q
      __syncwarp();
    }
  __syncthreads();  // Q, dO, S, dP are free: staging for bf16/fp16
  float* stage = reinterpret_cast<float*>(smem + L::q) + w * kRowsPerWarp * L::LDO;
  store_rows<T, D>(dk, b, hk, k0 + w * kRowsPerWarp, Sk, dK.rows(stage, L::LDO), L::LDO);
  __syncwarp();  // every lane has read the dK rows before dV's overwrite them
  store_rows<T, D>(dv, b, hk, k0 + w * kRowsPerWarp, Sk, dV.rows(stage, L::LDO), L::LDO);
}

// ---- launches ----------------------------------------------------------------------

// The tiled path takes one dtype (f32, f16, bf16) throughout, a head dim of 64 or 128
// for q, k, v alike, the head dim contiguous, 16-byte aligned rows (base pointers and
// the strides of the other dims), and grids within CUDA's limits.
bool tiled_ok(std::initializer_list<const View4*> views, int64_t* head_dim) {
  const View4& q = **views.begin();
  if (q.dtype != kF32 && q.dtype != kF16 && q.dtype != kBF16) return false;
  const int64_t D = q.size[3];
  if (D != 64 && D != 128) return false;
  const int64_t vec = q.dtype == kF32 ? 4 : 8;  // elements per 16 bytes
  for (const View4* t : views) {
    if (t->dtype != q.dtype || t->size[3] != D || t->stride[3] != 1) return false;
    // k, v, dk, dv may have fewer heads (grouped-query), dividing q's
    if (t->size[0] != q.size[0] || t->size[1] == 0 || q.size[1] % t->size[1] != 0) return false;
    if (reinterpret_cast<uintptr_t>(t->ptr) % 16 != 0) return false;
    for (int i = 0; i < 3; ++i)
      if (t->size[i] > 1 && t->stride[i] % vec != 0) return false;
  }
  const int64_t bh = q.size[0] * q.size[1];
  if (bh <= 0 || bh > int64_t(INT32_MAX)) return false;
  *head_dim = D;
  return true;
}

template <class F>
void with_type_and_dim(int32_t dtype, int64_t D, F&& f) {
  auto dim = [&](auto t) {
    if (D == 64)
      f(t, std::integral_constant<int, 64>{});
    else
      f(t, std::integral_constant<int, 128>{});
  };
  if (dtype == kF32)
    dim(float{});
  else if (dtype == kF16)
    dim(__half{});
  else
    dim(__nv_bfloat16{});
}

}  // namespace

bool launch_attention_tiled(const View4& out, const View4& lse, const View4& q, const View4& k, const View4& v,
                            bool causal, float scale, cudaStream_t stream) {
  int64_t D = 0;
  if (!tiled_ok({&q, &k, &v, &out}, &D)) return false;
  if (tiles(q.size[2], 64) > 65535) return false;
  with_type_and_dim(q.dtype, D, [&](auto t, auto d) {
    using T = decltype(t);
    constexpr int kD = decltype(d)::value;
    using L = FwdSmem<T, kD>;
    auto kernel = flash_fwd_kernel<T, kD>;
    set_smem(kernel, L::bytes);
    dim3 grid(unsigned(q.size[0] * q.size[1]), tiles(q.size[2], L::BR));
    kernel<<<grid, kThreads, L::bytes, stream>>>(out, lse, q, k, v, causal, scale);
  });
  check_launch("attention (tiled)");
  return true;
}

bool launch_attention_backward_tiled(const View4& dq, const View4& dk, const View4& dv, const View4& dout,
                                     const View4& q, const View4& k, const View4& v, const View4& out, const View4& lse,
                                     bool causal, float scale, cudaStream_t stream) {
  int64_t D = 0;
  if (!tiled_ok({&q, &k, &v, &out, &dout, &dq, &dk, &dv}, &D)) return false;
  if (tiles(q.size[2], 64) > 65535 || tiles(k.size[2], 64) > 65535) return false;
  with_type_and_dim(q.dtype, D, [&](auto t, auto d) {
    using T = decltype(t);
    constexpr int kD = decltype(d)::value;
    const unsigned bh = unsigned(q.size[0] * q.size[1]);
    {
      using L = DqSmem<T, kD>;
      auto kernel = flash_bwd_dq_kernel<T, kD>;
      set_smem(kernel, L::bytes);
      kernel<<<dim3(bh, tiles(q.size[2], L::BR)), kThreads, L::bytes, stream>>>(dq, dout, q, k, v, out, lse, causal,
                                                                                scale);
      check_launch("attention_backward (tiled dq)");
    }
    {
      using L = DkvSmem<T, kD>;
      auto kernel = flash_bwd_dkdv_kernel<T, kD>;
      set_smem(kernel, L::bytes);
      const unsigned bhk = unsigned(k.size[0] * k.size[1]);
      kernel<<<dim3(bhk, tiles(k.size[2], L::BC)), kThreads, L::bytes, stream>>>(dk, dv, dout, q, k, v, out, lse,
                                                                                 causal, scale);
      check_launch("attention_backward (tiled dk, dv)");
    }
  });
  return true;
}

}  // namespace vramlab::engine::cuda
