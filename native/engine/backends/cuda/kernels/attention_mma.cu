// FlashAttention-2 on tensor cores for fp16/bf16, head dims 64 and 128: the fast path of
// launch_attention and launch_attention_backward (attention_tiled.cu keeps fp32 and what
// this file does not take; transformer.cu the one-warp-per-row kernels).
//
// The building block is one warp's 16-row tile product on mma.sync m16n8k16 (fp32
// accumulation), operands fed from shared memory by ldmatrix. Its fragments (PTX ISA,
// "Matrix Fragments for mma.m16n8k16"), with g = lane / 4 and t = lane % 4:
//   A (16 x 16): a0 = row g, cols 2t..2t+1;  a1 = row g + 8, same cols;
//                a2 = row g, cols 2t+8..2t+9; a3 = row g + 8, same cols.
//   B (16 x 8):  b0 = rows (k) 2t..2t+1, col (n) g;  b1 = rows 2t+8..2t+9, col g.
//   C (16 x 8):  c0, c1 = row g, cols 2t..2t+1;  c2, c3 = row g + 8, same cols.
// Two C tiles side by side (16 x 16) hold exactly an A fragment's elements, so a
// softmax computed on the accumulators feeds the next product without leaving the
// registers (c_to_a): P V in the forward, dS K, P^T dO and dS^T Q in the backward.
//
//   forward   block = 8 warps x 16 queries, loop over 64-key tiles (K, V double-buffered
//             by cp.async): S = Q K^T, online softmax in registers, O = O * corr + P V.
//   dQ        block = 4 warps x 16 queries, loop over 64-key tiles: P = exp(S - lse),
//             dS = P (dO V^T - D), dQ += dS K.
//   dK, dV    block = 4 warps x 16 keys, loop over query tiles (Q, dO, O double-buffered),
//             transposed so a warp owns rows (keys): P^T = exp(K Q^T - lse), dV += P^T dO,
//             dS^T = P^T (V dO^T - D), dK += dS^T Q. With grouped-query attention the loop
//             runs over every query head of the key head's group, so dK and dV come out
//             summed over the group with no atomics.
// D = rowsum(dO * O) is recomputed per query tile: the kernels allocate nothing, and the
// workspaces the engine models for PyTorch's backends are not handed to the backend.
// Softmax runs in base 2 (exp2 of scores pre-multiplied by scale * log2 e), as FA2 does.
// Shared-memory rows are padded by 16 bytes, which makes the 8 row addresses of every
// ldmatrix fall in distinct banks.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

#include "engine/backends/cuda/kernels/dtype_io.cuh"
#include "engine/backends/cuda/kernels/launch.h"
#include "engine/backends/cuda/kernels/tile_launch.cuh"

namespace vramlab::engine::cuda {

namespace {

using namespace tile_launch;

constexpr float kLog2e = 1.4426950408889634f;
constexpr float kLn2 = 0.6931471805599453f;

// ---- PTX ------------------------------------------------------------------------------

__device__ __forceinline__ uint32_t smem_u32(const void* p) { return uint32_t(__cvta_generic_to_shared(p)); }

// 16 bytes global -> shared, zero-filled when !valid (then src is only a valid address).
__device__ __forceinline__ void cp_async16(void* dst, const void* src, bool valid) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_u32(dst)), "l"(src), "r"(valid ? 16 : 0));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

__device__ __forceinline__ void ldsm_x4(uint32_t (&r)[4], const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_u32(p)));
}
__device__ __forceinline__ void ldsm_x4_trans(uint32_t (&r)[4], const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_u32(p)));
}

// d += a b on one m16n8k16 tile.
template <class T>
__device__ __forceinline__ void mma16816(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  if constexpr (std::is_same_v<T, __nv_bfloat16>)
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  else
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// Two floats as one register of two 16-bit values, the lower column in the low half.
template <class T>
__device__ __forceinline__ uint32_t pack2(float lo, float hi) {
  if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<uint32_t*>(&v);
  } else {
    __half2 v = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<uint32_t*>(&v);
  }
}

__device__ __forceinline__ int lane_id() { return int(threadIdx.x & 31); }
__device__ __forceinline__ float to_f(__half x) { return __half2float(x); }
__device__ __forceinline__ float to_f(__nv_bfloat16 x) { return __bfloat162float(x); }

// ---- warp tile products -----------------------------------------------------------------

// A fragments of a 16 x K tile stored row-major in shared memory (pitch lda).
template <int K, class T>
__device__ __forceinline__ void load_a(uint32_t (&a)[K / 16][4], const T* A, int lda) {
  const int ln = lane_id();
#pragma unroll
  for (int kk = 0; kk < K / 16; ++kk) ldsm_x4(a[kk], A + (ln & 15) * lda + kk * 16 + (ln >> 4) * 8);
}

// B fragments of n-tiles np*16 .. np*16 + 15 at k-chunk kk: b[0], b[1] for the first
// n8 tile, b[2], b[3] for the second. kNK: B stored [n][k] (row n holds B's column n,
// as K for Q K^T); else stored [k][n] (as V for P V), read transposed.
template <bool kNK, class T>
__device__ __forceinline__ void load_b(uint32_t (&b)[4], const T* B, int ldb, int np, int kk) {
  const int ln = lane_id();
  if constexpr (kNK)
    ldsm_x4(b, B + (np * 16 + (ln & 7) + ((ln >> 4) << 3)) * ldb + kk * 16 + ((ln >> 3) & 1) * 8);
  else
    ldsm_x4_trans(b, B + (kk * 16 + (ln & 7) + ((ln >> 3) & 1) * 8) * ldb + np * 16 + (ln >> 4) * 8);
}

// acc (16 x N) += A (16 x K, fragments in registers) * B (K x N, shared memory).
template <int N, int K, bool kNK, class T>
__device__ __forceinline__ void mma_rs(float (&acc)[N / 8][4], const uint32_t (&a)[K / 16][4], const T* B, int ldb) {
#pragma unroll
  for (int kk = 0; kk < K / 16; ++kk)
#pragma unroll
    for (int np = 0; np < N / 16; ++np) {
      uint32_t b[4];
      load_b<kNK>(b, B, ldb, np, kk);
      mma16816<T>(acc[2 * np], a[kk], b[0], b[1]);
      mma16816<T>(acc[2 * np + 1], a[kk], b[2], b[3]);
    }
}

// acc (16 x N) += A (16 x K) * B (K x N), both in shared memory (A row-major, pitch lda).
template <int N, int K, bool kNK, class T>
__device__ __forceinline__ void mma_ss(float (&acc)[N / 8][4], const T* A, int lda, const T* B, int ldb) {
  const int ln = lane_id();
#pragma unroll
  for (int kk = 0; kk < K / 16; ++kk) {
    uint32_t a[1][4];
    ldsm_x4(a[0], A + (ln & 15) * lda + kk * 16 + (ln >> 4) * 8);
#pragma unroll
    for (int np = 0; np < N / 16; ++np) {
      uint32_t b[4];
      load_b<kNK>(b, B, ldb, np, kk);
      mma16816<T>(acc[2 * np], a[0], b[0], b[1]);
      mma16816<T>(acc[2 * np + 1], a[0], b[2], b[3]);
    }
  }
}

// Accumulators (16 x N, float) as the A fragments of the next product, rounded to T.
template <int N, class T>
__device__ __forceinline__ void c_to_a(uint32_t (&a)[N / 16][4], const float (&c)[N / 8][4]) {
#pragma unroll
  for (int kk = 0; kk < N / 16; ++kk) {
    a[kk][0] = pack2<T>(c[2 * kk][0], c[2 * kk][1]);
    a[kk][1] = pack2<T>(c[2 * kk][2], c[2 * kk][3]);
    a[kk][2] = pack2<T>(c[2 * kk + 1][0], c[2 * kk + 1][1]);
    a[kk][3] = pack2<T>(c[2 * kk + 1][2], c[2 * kk + 1][3]);
  }
}

template <int N>
__device__ __forceinline__ void zero(float (&c)[N][4]) {
#pragma unroll
  for (int i = 0; i < N; ++i) c[i][0] = c[i][1] = c[i][2] = c[i][3] = 0.f;
}

// ---- global <-> shared ---------------------------------------------------------------------

__device__ __forceinline__ int64_t row_off(const View4& t, int64_t b, int64_t h, int64_t s) {
  return b * t.stride[0] + h * t.stride[1] + s * t.stride[2];
}

// Rows [row0, row0 + ROWS) of head (b, h) of t into dst (pitch D + 8) by cp.async, rows at
// or past nrows zero-filled. All NT threads of the block take part; the caller commits.
template <class T, int ROWS, int D, int NT>
__device__ __forceinline__ void load_tile(T* dst, const View4& t, int64_t b, int64_t h, int64_t row0, int64_t nrows) {
  constexpr int kPerRow = D / 8, LD = D + 8;
  const T* base = static_cast<const T*>(t.ptr) + b * t.stride[0] + h * t.stride[1];
  for (int i = threadIdx.x; i < ROWS * kPerRow; i += NT) {
    const int r = i / kPerRow, c = (i % kPerRow) * 8;
    const int64_t row = row0 + r;
    const bool ok = row < nrows;
    cp_async16(dst + r * LD + c, ok ? base + row * t.stride[2] + c : base, ok);
  }
}

// A warp's 16 x D accumulator rows (scaled by rs[0] for row g, rs[1] for row g + 8) to
// rows [row0, row0 + 16) of head (b, h) of t; rows at or past nrows are skipped.
template <class T, int D>
__device__ __forceinline__ void store_acc(const View4& t, int64_t b, int64_t h, int64_t row0, int64_t nrows,
                                          const float (&acc)[D / 8][4], float rs0, float rs1) {
  const int ln = lane_id(), g = ln >> 2, tq = ln & 3;
  T* base = static_cast<T*>(t.ptr) + b * t.stride[0] + h * t.stride[1];
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int64_t row = row0 + g + 8 * r;
    if (row >= nrows) continue;
    const float s = r ? rs1 : rs0;
    T* p = base + row * t.stride[2] + 2 * tq;
#pragma unroll
    for (int dt = 0; dt < D / 8; ++dt)
      *reinterpret_cast<uint32_t*>(p + dt * 8) = pack2<T>(acc[dt][2 * r] * s, acc[dt][2 * r + 1] * s);
  }
}

// ---- forward ------------------------------------------------------------------------------

template <class T, int D>
struct Fwd {
  static constexpr int kWarps = 8, kThreads = 32 * kWarps, BR = 16 * kWarps, BC = 64, LD = D + 8;
  static constexpr size_t tr = sizeof(T) * BR * LD, tc = sizeof(T) * BC * LD;  // tile bytes
  // Q, then K and V of stage 0, K and V of stage 1
  static constexpr size_t q = 0, kv = tr, bytes = kv + 4 * tc;
};

// grid (B * Hq, query tiles), longest (causal) tiles first. The causal mask is top-left
// aligned (key j seen by query i when j <= i), as the CPU reference's.
template <class T, int D>
__global__ void __launch_bounds__(Fwd<T, D>::kThreads, D == 64 ? 2 : 1)
    attn_fwd_mma(View4 out, View4 lse, View4 q, View4 k, View4 v, bool causal, float scale) {
  using C = Fwd<T, D>;
  constexpr int BR = C::BR, BC = C::BC, LD = C::LD, NT = C::kThreads;
  extern __shared__ __align__(128) unsigned char smem[];
  T* Qs = reinterpret_cast<T*>(smem + C::q);
  auto Ks = [&](int s) { return reinterpret_cast<T*>(smem + C::kv + (2 * s) * C::tc); };
  auto Vs = [&](int s) { return reinterpret_cast<T*>(smem + C::kv + (2 * s + 1) * C::tc); };

  const int64_t Hq = q.size[1], Sq = q.size[2], Sk = k.size[2];
  const int64_t b = blockIdx.x / Hq, h = blockIdx.x % Hq, hk = h / (Hq / k.size[1]);
  const int64_t q0 = int64_t(gridDim.y - 1 - blockIdx.y) * BR;
  const int w = int(threadIdx.x >> 5), ln = lane_id(), g = ln >> 2, tq = ln & 3;
  const int64_t row_w = q0 + 16 * w;  // this warp's first query
  const int64_t kend = causal ? (q0 + BR < Sk ? q0 + BR : Sk) : Sk;
  const int ntiles = int((kend + BC - 1) / BC);
  const float sl2 = scale * kLog2e;

  load_tile<T, BR, D, NT>(Qs, q, b, h, q0, Sq);
  load_tile<T, BC, D, NT>(Ks(0), k, b, hk, 0, Sk);
  load_tile<T, BC, D, NT>(Vs(0), v, b, hk, 0, Sk);
  cp_async_commit();

  uint32_t qa[D / 16][4];
  float o[D / 8][4];
  zero(o);
  float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.f, 0.f};  // per row g, g + 8 (base 2)

  for (int t = 0; t < ntiles; ++t) {
    const int st = t & 1;
    const int64_t k0 = int64_t(t) * BC;
    if (t + 1 < ntiles) {
      load_tile<T, BC, D, NT>(Ks(st ^ 1), k, b, hk, k0 + BC, Sk);
      load_tile<T, BC, D, NT>(Vs(st ^ 1), v, b, hk, k0 + BC, Sk);
      cp_async_commit();
      cp_async_wait<1>();
    } else {
      cp_async_wait<0>();
    }
    __syncthreads();
    if (t == 0) load_a<D>(qa, Qs + 16 * w * LD, LD);

    float s[BC / 8][4];
    zero(s);
    mma_rs<BC, D, true>(s, qa, Ks(st), LD);  // S = Q K^T

    const bool mask = k0 + BC > Sk || (causal && k0 + BC - 1 > row_w);
    float mx[2] = {-INFINITY, -INFINITY};
#pragma unroll
    for (int nt = 0; nt < BC / 8; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        float x = s[nt][e] * sl2;
        if (mask) {
          const int64_t j = k0 + nt * 8 + 2 * tq + (e & 1), i = row_w + g + 8 * (e >> 1);
          if (j >= Sk || (causal && j > i)) x = -INFINITY;
        }
        s[nt][e] = x;
        mx[e >> 1] = fmaxf(mx[e >> 1], x);
      }
    float corr[2], mb[2];
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 1));
      mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 2));
      const float m_new = fmaxf(m[r], mx[r]);
      mb[r] = m_new == -INFINITY ? 0.f : m_new;  // a row with nothing seen yet stays at 0
      corr[r] = exp2f(m[r] - mb[r]);
      m[r] = m_new;
      l[r] *= corr[r];
    }
#pragma unroll
    for (int nt = 0; nt < BC / 8; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const float p = exp2f(s[nt][e] - mb[e >> 1]);
        s[nt][e] = p;
        l[e >> 1] += p;  // this lane's part of the row sum; the quad adds up at the end
      }
#pragma unroll
    for (int dt = 0; dt < D / 8; ++dt) {
      o[dt][0] *= corr[0];
      o[dt][1] *= corr[0];
      o[dt][2] *= corr[1];
      o[dt][3] *= corr[1];
    }
    uint32_t pa[BC / 16][4];
    c_to_a<BC, T>(pa, s);
    mma_rs<D, BC, false>(o, pa, Vs(st), LD);  // O += P V
    __syncthreads();                          // every warp is done with this stage
  }

  float inv[2];
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    l[r] += __shfl_xor_sync(0xffffffffu, l[r], 1);
    l[r] += __shfl_xor_sync(0xffffffffu, l[r], 2);
    inv[r] = 1.f / l[r];
    const int64_t i = row_w + g + 8 * r;
    if (lse.ptr && tq == 0 && i < Sq) store_f(lse.ptr, lse.dtype, row_off(lse, b, h, i), (m[r] + __log2f(l[r])) * kLn2);
  }
  store_acc<T, D>(out, b, h, row_w, Sq, o, inv[0], inv[1]);
}

// ---- backward: dQ ---------------------------------------------------------------------------

template <class T, int D>
struct Dq {
  static constexpr int kWarps = 4, kThreads = 32 * kWarps, BR = 16 * kWarps, BC = 64, LD = D + 8;
  static constexpr size_t tr = sizeof(T) * BR * LD, tc = sizeof(T) * BC * LD;  // tile bytes
  // Q, dO, then K and V of stage 0, K and V of stage 1
  static constexpr size_t q = 0, g = tr, kv = 2 * tr, bytes = kv + 4 * tc;
};

// D = rowsum(dO * O) and lse (times log2 e) of rows g and g + 8 of a warp's 16 rows: the
// lane pair 2r, 2r + 1 sums row r over half the head dim each, then the values move to
// the lanes whose accumulator rows they are.
template <class T, int D>
__device__ __forceinline__ void warp_row_stats(float (&dd)[2], float (&ll)[2], const T* Gw, int ld, const View4& out,
                                               const View4& lse, int64_t b, int64_t h, int64_t row0, int64_t nrows) {
  const int ln = lane_id(), r = ln >> 1, half = ln & 1;
  const int64_t i = row0 + r;
  float part = 0.f, lv = 0.f;
  if (i < nrows) {
    const T* o_row = static_cast<const T*>(out.ptr) + row_off(out, b, h, i) + half * (D / 2);
    const T* g_row = Gw + r * ld + half * (D / 2);
#pragma unroll
    for (int c = 0; c < D / 2; c += 8) {
      const uint4 ov = *reinterpret_cast<const uint4*>(o_row + c), gv = *reinterpret_cast<const uint4*>(g_row + c);
      const T* op = reinterpret_cast<const T*>(&ov);
      const T* gp = reinterpret_cast<const T*>(&gv);
#pragma unroll
      for (int e = 0; e < 8; ++e) part += to_f(op[e]) * to_f(gp[e]);
    }
    lv = load_f(lse.ptr, lse.dtype, row_off(lse, b, h, i)) * kLog2e;
  }
  part += __shfl_xor_sync(0xffffffffu, part, 1);
  const int g = ln >> 2;
  dd[0] = __shfl_sync(0xffffffffu, part, 2 * g);
  dd[1] = __shfl_sync(0xffffffffu, part, 2 * (g + 8));
  ll[0] = __shfl_sync(0xffffffffu, lv, 2 * g);
  ll[1] = __shfl_sync(0xffffffffu, lv, 2 * (g + 8));
}

// grid (B * Hq, query tiles). P = exp(S * scale - lse), dS = P (dP - D) * scale with
// dP = dO V^T, dQ = dS K.
template <class T, int D>
__global__ void __launch_bounds__(Dq<T, D>::kThreads, D == 64 ? 3 : 2)
    attn_bwd_dq_mma(View4 dq, View4 dout, View4 q, View4 k, View4 v, View4 out, View4 lse, bool causal, float scale) {
  using C = Dq<T, D>;
  constexpr int BR = C::BR, BC = C::BC, LD = C::LD, NT = C::kThreads;
  extern __shared__ __align__(128) unsigned char smem[];
  T* Qs = reinterpret_cast<T*>(smem + C::q);
  T* Gs = reinterpret_cast<T*>(smem + C::g);
  auto Ks = [&](int s) { return reinterpret_cast<T*>(smem + C::kv + (2 * s) * C::tc); };
  auto Vs = [&](int s) { return reinterpret_cast<T*>(smem + C::kv + (2 * s + 1) * C::tc); };

  const int64_t Hq = q.size[1], Sq = q.size[2], Sk = k.size[2];
  const int64_t b = blockIdx.x / Hq, h = blockIdx.x % Hq, hk = h / (Hq / k.size[1]);
  const int64_t q0 = int64_t(gridDim.y - 1 - blockIdx.y) * BR;
  const int w = int(threadIdx.x >> 5), ln = lane_id(), g = ln >> 2, tq = ln & 3;
  const int64_t row_w = q0 + 16 * w;
  const int64_t kend = causal ? (q0 + BR < Sk ? q0 + BR : Sk) : Sk;
  const int ntiles = int((kend + BC - 1) / BC);
  const float sl2 = scale * kLog2e;

  load_tile<T, BR, D, NT>(Qs, q, b, h, q0, Sq);
  load_tile<T, BR, D, NT>(Gs, dout, b, h, q0, Sq);
  load_tile<T, BC, D, NT>(Ks(0), k, b, hk, 0, Sk);
  load_tile<T, BC, D, NT>(Vs(0), v, b, hk, 0, Sk);
  cp_async_commit();
  const T* Qw = Qs + 16 * w * LD;
  const T* Gw = Gs + 16 * w * LD;

  float acc[D / 8][4];
  zero(acc);
  float dd[2] = {0.f, 0.f}, ll[2] = {0.f, 0.f};

  for (int t = 0; t < ntiles; ++t) {
    const int st = t & 1;
    const int64_t k0 = int64_t(t) * BC;
    if (t + 1 < ntiles) {
      load_tile<T, BC, D, NT>(Ks(st ^ 1), k, b, hk, k0 + BC, Sk);
      load_tile<T, BC, D, NT>(Vs(st ^ 1), v, b, hk, k0 + BC, Sk);
      cp_async_commit();
      cp_async_wait<1>();
    } else {
      cp_async_wait<0>();
    }
    __syncthreads();
    if (t == 0) warp_row_stats<T, D>(dd, ll, Gw, LD, out, lse, b, h, row_w, Sq);

    float s[BC / 8][4], dp[BC / 8][4];
    zero(s);
    zero(dp);
    mma_ss<BC, D, true>(s, Qw, LD, Ks(st), LD);   // S = Q K^T
    mma_ss<BC, D, true>(dp, Gw, LD, Vs(st), LD);  // dP = dO V^T
    const bool mask = k0 + BC > Sk || (causal && k0 + BC - 1 > row_w);
#pragma unroll
    for (int nt = 0; nt < BC / 8; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int r = e >> 1;
        float p = exp2f(s[nt][e] * sl2 - ll[r]);
        if (mask) {
          const int64_t j = k0 + nt * 8 + 2 * tq + (e & 1), i = row_w + g + 8 * r;
          if (j >= Sk || (causal && j > i)) p = 0.f;
        }
        s[nt][e] = p * (dp[nt][e] - dd[r]) * scale;  // dS
      }
    uint32_t dsa[BC / 16][4];
    c_to_a<BC, T>(dsa, s);
    mma_rs<D, BC, false>(acc, dsa, Ks(st), LD);  // dQ += dS K
    __syncthreads();
  }
  store_acc<T, D>(dq, b, h, row_w, Sq, acc, 1.f, 1.f);
}

// ---- backward: dK, dV -------------------------------------------------------------------------

template <class T, int D>
struct Dkv {
  static constexpr int kWarps = 4, kThreads = 32 * kWarps, BC = 16 * kWarps, BR = D == 64 ? 64 : 32, LD = D + 8;
  static constexpr size_t tr = sizeof(T) * BR * LD, tc = sizeof(T) * BC * LD;  // tile bytes
  // K, V, then per stage Q, dO, O; then the query tile's lse and D (floats)
  static constexpr size_t k = 0, v = tc, stage = 2 * tc, stage_bytes = 3 * tr, stats = stage + 2 * stage_bytes,
                          bytes = stats + 2 * sizeof(float) * BR;
};

// grid (B * Hk, key tiles); the loop runs over the Hq / Hk query heads of this key head
// and their query tiles.
template <class T, int D>
__global__ void __launch_bounds__(Dkv<T, D>::kThreads, D == 64 ? 3 : 2)
    attn_bwd_dkdv_mma(View4 dk, View4 dv, View4 dout, View4 q, View4 k, View4 v, View4 out, View4 lse, bool causal,
                      float scale) {
  using C = Dkv<T, D>;
  constexpr int BR = C::BR, BC = C::BC, LD = C::LD, NT = C::kThreads;
  extern __shared__ __align__(128) unsigned char smem[];
  T* Ks = reinterpret_cast<T*>(smem + C::k);
  T* Vs = reinterpret_cast<T*>(smem + C::v);
  auto Qs = [&](int s) { return reinterpret_cast<T*>(smem + C::stage + s * C::stage_bytes); };
  auto Gs = [&](int s) { return reinterpret_cast<T*>(smem + C::stage + s * C::stage_bytes + C::tr); };
  auto Os = [&](int s) { return reinterpret_cast<T*>(smem + C::stage + s * C::stage_bytes + 2 * C::tr); };
  float* Ls = reinterpret_cast<float*>(smem + C::stats);
  float* Ds = Ls + BR;

  const int64_t Hq = q.size[1], Hk = k.size[1], Sq = q.size[2], Sk = k.size[2], group = Hq / Hk;
  const int64_t b = blockIdx.x / Hk, hk = blockIdx.x % Hk;
  const int64_t k0 = int64_t(blockIdx.y) * BC;
  const int w = int(threadIdx.x >> 5), ln = lane_id(), g = ln >> 2, tq = ln & 3;
  const int64_t key_w = k0 + 16 * w;
  // Causal: queries before k0 see none of these keys.
  const int64_t i_start = causal ? k0 / BR * BR : 0;
  const int per_head = i_start < Sq ? int((Sq - i_start + BR - 1) / BR) : 0;
  const int n = int(group) * per_head;
  const float sl2 = scale * kLog2e;

  auto issue = [&](int it, int s) {
    const int64_t hq = hk * group + it / per_head, i0 = i_start + int64_t(it % per_head) * BR;
    load_tile<T, BR, D, NT>(Qs(s), q, b, hq, i0, Sq);
    load_tile<T, BR, D, NT>(Gs(s), dout, b, hq, i0, Sq);
    load_tile<T, BR, D, NT>(Os(s), out, b, hq, i0, Sq);
  };
  load_tile<T, BC, D, NT>(Ks, k, b, hk, k0, Sk);
  load_tile<T, BC, D, NT>(Vs, v, b, hk, k0, Sk);
  if (n > 0) issue(0, 0);
  cp_async_commit();
  const T* Kw = Ks + 16 * w * LD;
  const T* Vw = Vs + 16 * w * LD;

  float dka[D / 8][4], dva[D / 8][4];
  zero(dka);
  zero(dva);

  for (int it = 0; it < n; ++it) {
    const int st = it & 1;
    const int64_t hq = hk * group + it / per_head, i0 = i_start + int64_t(it % per_head) * BR;
    if (it + 1 < n) {
      issue(it + 1, st ^ 1);
      cp_async_commit();
      cp_async_wait<1>();
    } else {
      cp_async_wait<0>();
    }
    __syncthreads();
    // lse and D of the BR queries: kThreads / BR adjacent lanes per row.
    {
      constexpr int kTpr = NT / BR, kSpan = D / kTpr;
      const int r = int(threadIdx.x) / kTpr, part = int(threadIdx.x) % kTpr;
      const T* gp = Gs(st) + r * LD + part * kSpan;
      const T* op = Os(st) + r * LD + part * kSpan;
      float sum = 0.f;
#pragma unroll
      for (int c = 0; c < kSpan; c += 8) {
        const uint4 gv = *reinterpret_cast<const uint4*>(gp + c), ov = *reinterpret_cast<const uint4*>(op + c);
        const T* ge = reinterpret_cast<const T*>(&gv);
        const T* oe = reinterpret_cast<const T*>(&ov);
#pragma unroll
        for (int e = 0; e < 8; ++e) sum += to_f(ge[e]) * to_f(oe[e]);
      }
#pragma unroll
      for (int o = 1; o < kTpr; o <<= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
      if (part == 0) {
        const int64_t i = i0 + r;
        Ds[r] = sum;
        Ls[r] = i < Sq ? load_f(lse.ptr, lse.dtype, row_off(lse, b, hq, i)) * kLog2e : 0.f;
      }
    }
    __syncthreads();

    float s[BR / 8][4], dp[BR / 8][4];
    zero(s);
    mma_ss<BR, D, true>(s, Kw, LD, Qs(st), LD);  // S^T = K Q^T
    const bool mask = i0 + BR > Sq || (causal && key_w + 15 > i0);
#pragma unroll
    for (int nt = 0; nt < BR / 8; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int c = nt * 8 + 2 * tq + (e & 1);
        float p = exp2f(s[nt][e] * sl2 - Ls[c]);
        if (mask) {
          const int64_t i = i0 + c, j = key_w + g + 8 * (e >> 1);
          if (i >= Sq || (causal && j > i)) p = 0.f;
        }
        s[nt][e] = p;  // P^T
      }
    {
      uint32_t pa[BR / 16][4];
      c_to_a<BR, T>(pa, s);
      mma_rs<D, BR, false>(dva, pa, Gs(st), LD);  // dV += P^T dO
    }
    zero(dp);
    mma_ss<BR, D, true>(dp, Vw, LD, Gs(st), LD);  // dP^T = V dO^T
#pragma unroll
    for (int nt = 0; nt < BR / 8; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int c = nt * 8 + 2 * tq + (e & 1);
        s[nt][e] = s[nt][e] * (dp[nt][e] - Ds[c]) * scale;  // dS^T
      }
    {
      uint32_t dsa[BR / 16][4];
      c_to_a<BR, T>(dsa, s);
      mma_rs<D, BR, false>(dka, dsa, Qs(st), LD);  // dK += dS^T Q
    }
    __syncthreads();
  }
  cp_async_wait<0>();  // n == 0: the K, V loads are still owed
  store_acc<T, D>(dk, b, hk, key_w, Sk, dka, 1.f, 1.f);
  store_acc<T, D>(dv, b, hk, key_w, Sk, dva, 1.f, 1.f);
}

// ---- launches ----------------------------------------------------------------------------------

// This path takes fp16 or bf16 throughout, head dim 64 or 128 for every view, the head dim
// contiguous, 16-byte aligned rows, q's batch on k and v, a query head count that is a
// multiple of the key heads' (grouped-query attention), and grids within CUDA's limits.
// qs: the views laid out like q (out, dout, dq); ks: like k (v, dk, dv).
bool mma_ok(const View4& q, const View4& k, std::initializer_list<const View4*> qs,
            std::initializer_list<const View4*> ks, int64_t* head_dim) {
  if (q.dtype != kF16 && q.dtype != kBF16) return false;
  const int64_t D = q.size[3];
  if (D != 64 && D != 128) return false;
  if (k.size[1] <= 0 || q.size[1] % k.size[1] != 0) return false;
  auto fits = [&](const View4& t, const View4& like) {
    if (t.dtype != q.dtype || t.size[3] != D || t.stride[3] != 1) return false;
    for (int i = 0; i < 3; ++i)
      if (t.size[i] != like.size[i]) return false;
    if (reinterpret_cast<uintptr_t>(t.ptr) % 16 != 0) return false;
    for (int i = 0; i < 3; ++i)
      if (t.size[i] > 1 && t.stride[i] % 8 != 0) return false;
    return true;
  };
  if (!fits(q, q) || !fits(k, k) || k.size[0] != q.size[0]) return false;
  for (const View4* t : qs)
    if (!fits(*t, q)) return false;
  for (const View4* t : ks)
    if (!fits(*t, k)) return false;
  if (q.size[0] * q.size[1] > int64_t(INT32_MAX)) return false;
  if ((q.size[2] + 15) / 16 > 65535 || (k.size[2] + 15) / 16 > 65535) return false;
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
  if (dtype == kF16)
    dim(__half{});
  else
    dim(__nv_bfloat16{});
}

}  // namespace

bool launch_attention_mma(const View4& out, const View4& lse, const View4& q, const View4& k, const View4& v,
                          bool causal, float scale, cudaStream_t stream) {
  int64_t D = 0;
  if (k.size[2] <= 0 || !mma_ok(q, k, {&out}, {&v}, &D)) return false;
  with_type_and_dim(q.dtype, D, [&](auto t, auto d) {
    using T = decltype(t);
    constexpr int kD = decltype(d)::value;
    using C = Fwd<T, kD>;
    auto kernel = attn_fwd_mma<T, kD>;
    set_smem(kernel, C::bytes);
    dim3 grid(unsigned(q.size[0] * q.size[1]), tiles(q.size[2], C::BR));
    kernel<<<grid, C::kThreads, C::bytes, stream>>>(out, lse, q, k, v, causal, scale);
  });
  check_launch("attention (mma)");
  return true;
}

bool launch_attention_backward_mma(const View4& dq, const View4& dk, const View4& dv, const View4& dout, const View4& q,
                                   const View4& k, const View4& v, const View4& out, const View4& lse, bool causal,
                                   float scale, cudaStream_t stream) {
  int64_t D = 0;
  if (k.size[2] <= 0 || !mma_ok(q, k, {&out, &dout, &dq}, {&v, &dk, &dv}, &D)) return false;
  with_type_and_dim(q.dtype, D, [&](auto t, auto d) {
    using T = decltype(t);
    constexpr int kD = decltype(d)::value;
    {
      using C = Dq<T, kD>;
      auto kernel = attn_bwd_dq_mma<T, kD>;
      set_smem(kernel, C::bytes);
      kernel<<<dim3(unsigned(q.size[0] * q.size[1]), tiles(q.size[2], C::BR)), C::kThreads, C::bytes, stream>>>(
          dq, dout, q, k, v, out, lse, causal, scale);
      check_launch("attention_backward (mma dq)");
    }
    {
      using C = Dkv<T, kD>;
      auto kernel = attn_bwd_dkdv_mma<T, kD>;
      set_smem(kernel, C::bytes);
      kernel<<<dim3(unsigned(k.size[0] * k.size[1]), tiles(k.size[2], C::BC)), C::kThreads, C::bytes, stream>>>(
          dk, dv, dout, q, k, v, out, lse, causal, scale);
      check_launch("attention_backward (mma dk, dv)");
    }
  });
  return true;
}

}  // namespace vramlab::engine::cuda
