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
//   forward   block = 4 warps x 32 queries (two 16-row tiles a warp), loop over 128-key
//             (head dim 64) or 64-key (128) tiles, K, V double-buffered by cp.async: S =
//             Q K^T, online softmax in registers, O = O * corr + P V. Only the tiles that
//             reach past Sk or the block's first query are masked, and there a warp skips
//             the 16-key chunks its rows see none of; O leaves through shared memory in
//             16-byte row pieces.
//   dQ        block = 4 warps x 16 queries, loop over 64-key tiles: P = exp(S - lse),
//             dS = P (dO V^T - D), dQ += dS K.
//   dK, dV    block = 4 warps x 16 keys, loop over query tiles (Q, dO, O double-buffered),
//             transposed so a warp owns rows (keys): P^T = exp(K Q^T - lse), dV += P^T dO,
//             dS^T = P^T (V dO^T - D), dK += dS^T Q. With grouped-query attention the loop
//             runs over every query head of the key head's group, so dK and dV come out
//             summed over the group with no atomics.
// D = rowsum(dO * O) is recomputed per query tile: the kernels allocate nothing. This
// two-pass backward serves callers without scratch; with the engine's dQ accumulator and
// row sums, attention_mma_bwd.cu's one pass runs instead.
// Softmax runs in base 2 (exp2 of scores pre-multiplied by scale * log2 e), as FA2 does.
// Shared-memory rows are padded by 16 bytes, which makes the 8 row addresses of every
// ldmatrix fall in distinct banks.
#include <type_traits>

#include "engine/backends/cuda/kernels/launch.h"
#include "engine/backends/cuda/kernels/mma_tile.cuh"
#include "engine/backends/cuda/kernels/tile_launch.cuh"

namespace vramlab::engine::cuda {

namespace {

using namespace tile_launch;
using namespace mma;

// ---- forward ------------------------------------------------------------------------------

// A block is 4 warps x 32 queries (kM = 2 16-row tiles a warp: each K or V fragment read
// from shared memory feeds kM products; with one tile a warp shared-memory bandwidth, not
// the tensor cores, is the bound), Q read from shared memory per tile; BC keys a tile, K
// and V double-buffered by cp.async. kSkipRescale: O is rescaled only when some row's max
// moved (a warp vote), which after the first tiles is rare. Fwd<T, D> below picks per head
// dim what measured fastest on an H100 (docs/gpu-runs/2026-11-26-h100-attnfwd.txt).
template <class T, int D, int BC_, bool kSkipRescale_>
struct FwdTiles {
  static constexpr int kM = 2, kWarps = 4, kThreads = 32 * kWarps, BR = 16 * kM * kWarps, BC = BC_, LD = D + 8;
  static constexpr bool kSkipRescale = kSkipRescale_;
  static constexpr size_t tr = sizeof(T) * BR * LD, tc = sizeof(T) * BC * LD;  // tile bytes
  // Q, then K and V of stage 0, K and V of stage 1
  static constexpr size_t q = 0, kv = tr, bytes = kv + 4 * tc;
};
// Head dim 64: 128-key tiles, as FA2 takes for it, so the row max, the shuffles and the
// barriers come once per 128 keys: 0.258 ms where 64-key tiles with Q's fragments held in
// registers took 0.273 (B1 H32 S4096, bf16 causal); the rescale vote costs more than it
// saves here (0.264). Head dim 128: 64-key tiles (S and O fill the registers), with the vote
// (0.252 ms against 0.259 without, B4 H16 S2048).
template <class T, int D>
using Fwd = std::conditional_t<D == 64, FwdTiles<T, D, 128, false>, FwdTiles<T, D, 64, true>>;

// One key tile of a warp's 32 queries: S = Q K^T, the online softmax in registers, O =
// O * corr + P V. kMask: the tile holds keys past Sk or (causal) past some of the block's
// queries; such tiles are masked element by element, and the products of 16-key chunks
// that none of a 16-query tile's rows see are skipped (most of the diagonal tile's upper
// half). Other tiles run with no checks at all.
// q_at, k_at, v_at: this lane's ldmatrix addresses (shared memory, bytes) in the warp's
// Q rows and the stage's K and V tiles (the kernel computes them once).
template <bool kMask, class C, class T, int D>
__device__ __forceinline__ void fwd_tile(float (&o)[C::kM][D / 8][4], float (&mrow)[C::kM][2], float (&l)[C::kM][2],
                                         uint32_t q_at, uint32_t k_at, uint32_t v_at, int k0, int Sk, bool causal,
                                         int row_w, float sl2) {
  constexpr int M = C::kM, BC = C::BC, LD = C::LD, NB = BC / 16;
  const int ln = lane_id(), g = ln >> 2, tq = ln & 3;
  // 16-key chunks of this tile that tile m's rows see (nondecreasing in m)
  int nact[M];
#pragma unroll
  for (int m = 0; m < M; ++m) {
    nact[m] = NB;
    if constexpr (kMask) {
      int lim = Sk;
      if (causal && row_w + 16 * m + 16 < lim) lim = row_w + 16 * m + 16;
      const int n = (lim - k0 + 15) / 16;
      nact[m] = n <= 0 ? 0 : n < NB ? n : NB;
    }
  }
  if (kMask && nact[M - 1] == 0) return;  // this warp sees none of the tile

  float s[M][BC / 8][4];
#pragma unroll
  for (int m = 0; m < M; ++m) zero(s[m]);
#pragma unroll
  for (int kk = 0; kk < D / 16; ++kk) {  // S = Q K^T
    uint32_t a[M][4];
#pragma unroll
    for (int m = 0; m < M; ++m) ldsm_x4_s(a[m], q_at + uint32_t(sizeof(T) * (16 * m * LD + kk * 16)));
#pragma unroll
    for (int np = 0; np < NB; ++np) {
      if (kMask && np >= nact[M - 1]) continue;
      uint32_t bf[4];
      ldsm_x4_s(bf, k_at + uint32_t(sizeof(T) * (np * 16 * LD + kk * 16)));
#pragma unroll
      for (int m = 0; m < M; ++m) {
        if (kMask && np >= nact[m]) continue;
        mma16816<T>(s[m][2 * np], a[m], bf[0], bf[1]);
        mma16816<T>(s[m][2 * np + 1], a[m], bf[2], bf[3]);
      }
    }
  }

  uint32_t pa[M][NB][4];
#pragma unroll
  for (int m = 0; m < M; ++m) {
    float mx[2] = {-INFINITY, -INFINITY};
#pragma unroll
    for (int nt = 0; nt < BC / 8; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        float x = s[m][nt][e];  // the max on raw scores: scale > 0 keeps the order
        if constexpr (kMask) {
          const int j = k0 + nt * 8 + 2 * tq + (e & 1), i = row_w + 16 * m + g + 8 * (e >> 1);
          if (j >= Sk || (causal && j > i)) x = -INFINITY;
        }
        s[m][nt][e] = x;
        mx[e >> 1] = fmaxf(mx[e >> 1], x);
      }
    float corr[2], mb[2];
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 1));
      mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 2));
      const float m_new = fmaxf(mrow[m][r], mx[r] * sl2);
      mb[r] = m_new == -INFINITY ? 0.f : m_new;  // a row with nothing seen yet stays at 0
      corr[r] = ex2(mrow[m][r] - mb[r]);         // exactly 1 when the max did not move
      mrow[m][r] = m_new;
      l[m][r] *= corr[r];
    }
#pragma unroll
    for (int nt = 0; nt < BC / 8; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const float p = ex2(fmaf(s[m][nt][e], sl2, -mb[e >> 1]));
        s[m][nt][e] = p;
        l[m][e >> 1] += p;  // this lane's part of the row sum; the quad adds up at the end
      }
    if (!C::kSkipRescale || __any_sync(0xffffffffu, corr[0] != 1.f || corr[1] != 1.f)) {
#pragma unroll
      for (int dt = 0; dt < D / 8; ++dt) {
        o[m][dt][0] *= corr[0];
        o[m][dt][1] *= corr[0];
        o[m][dt][2] *= corr[1];
        o[m][dt][3] *= corr[1];
      }
    }
    c_to_a<BC, T>(pa[m], s[m]);
  }
#pragma unroll
  for (int kk = 0; kk < NB; ++kk) {  // O += P V
    if (kMask && kk >= nact[M - 1]) continue;
#pragma unroll
    for (int np = 0; np < D / 16; ++np) {
      uint32_t bf[4];
      ldsm_x4_trans_s(bf, v_at + uint32_t(sizeof(T) * (kk * 16 * LD + np * 16)));
#pragma unroll
      for (int m = 0; m < M; ++m) {
        if (kMask && kk >= nact[m]) continue;  // P is zero there
        mma16816<T>(o[m][2 * np], pa[m][kk], bf[0], bf[1]);
        mma16816<T>(o[m][2 * np + 1], pa[m][kk], bf[2], bf[3]);
      }
    }
  }
}

// grid (B * Hq, query tiles), longest (causal) tiles first. The causal mask is top-left
// aligned (key j seen by query i when j <= i), as the CPU reference's.
template <class C, class T, int D>
__global__ void __launch_bounds__(C::kThreads, D == 64 ? 2 : 1)
    attn_fwd_mma(View4 out, View4 lse, View4 q, View4 k, View4 v, bool causal, float scale) {
  constexpr int BR = C::BR, BC = C::BC, LD = C::LD, NT = C::kThreads, M = C::kM;
  extern __shared__ __align__(128) unsigned char smem[];
  T* Qs = reinterpret_cast<T*>(smem + C::q);
  auto Ks = [&](int s) { return reinterpret_cast<T*>(smem + C::kv + (2 * s) * C::tc); };
  auto Vs = [&](int s) { return reinterpret_cast<T*>(smem + C::kv + (2 * s + 1) * C::tc); };

  const int64_t Hq = q.size[1], Sq = q.size[2], Sk = k.size[2];
  const int64_t b = blockIdx.x / Hq, h = blockIdx.x % Hq, hk = h / (Hq / k.size[1]);
  const int64_t q0 = int64_t(gridDim.y - 1 - blockIdx.y) * BR;
  const int w = int(threadIdx.x >> 5), ln = lane_id(), g = ln >> 2, tq = ln & 3;
  const int64_t row_w = q0 + 16 * M * w;  // this warp's first query
  const int64_t kend = causal ? (q0 + BR < Sk ? q0 + BR : Sk) : Sk;
  const int ntiles = int((kend + BC - 1) / BC);
  // tiles before nfull need no mask: within Sk and (causal) before the block's first query
  const int nfull = int((causal && q0 + 1 < Sk ? q0 + 1 : Sk) / BC);
  const float sl2 = scale * kLog2e;
  T* Qw = Qs + 16 * M * w * LD;
  // this lane's ldmatrix addresses: Q's A fragments (rows ln % 16, column half ln / 16),
  // K's B fragments ([n][k]: row ln % 8 + 8 (ln / 16), k half (ln / 8) % 2), V's
  // transposed ones ([k][n]: row ln % 8 + 8 ((ln / 8) % 2), n half ln / 16); v_lane is
  // V's offset from K's lane address within a stage's K, V pair
  const uint32_t q_at = smem_u32(Qw) + uint32_t(sizeof(T) * ((ln & 15) * LD + (ln >> 4) * 8));
  const uint32_t k_lane = uint32_t(sizeof(T) * (((ln & 7) + ((ln >> 4) << 3)) * LD + ((ln >> 3) & 1) * 8));
  const uint32_t k_at0 = smem_u32(smem + C::kv) + k_lane;
  const uint32_t v_lane = uint32_t(sizeof(T) * (((ln & 7) + ((ln >> 3) & 1) * 8) * LD + (ln >> 4) * 8)) - k_lane;

  load_tile<T, BR, D, NT>(Qs, q, b, h, q0, Sq);
  load_tile<T, BC, D, NT>(Ks(0), k, b, hk, 0, Sk);
  load_tile<T, BC, D, NT>(Vs(0), v, b, hk, 0, Sk);
  cp_async_commit();

  float o[M][D / 8][4];
#pragma unroll
  for (int m = 0; m < M; ++m) zero(o[m]);
  float mrow[M][2], l[M][2];  // per tile m, rows g and g + 8 (base 2)
#pragma unroll
  for (int m = 0; m < M; ++m) mrow[m][0] = mrow[m][1] = -INFINITY, l[m][0] = l[m][1] = 0.f;

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
    const uint32_t k_at = k_at0 + uint32_t(st * 2 * C::tc), v_at = k_at + uint32_t(C::tc) + v_lane;
    if (t < nfull)
      fwd_tile<false, C, T, D>(o, mrow, l, q_at, k_at, v_at, int(k0), int(Sk), causal, int(row_w), sl2);
    else
      fwd_tile<true, C, T, D>(o, mrow, l, q_at, k_at, v_at, int(k0), int(Sk), causal, int(row_w), sl2);
    __syncthreads();  // every warp is done with this stage
  }

  // O / l through this warp's own Q rows in shared memory (no other warp reads them), then
  // to out in 16-byte row pieces: whole 32-byte sectors, where the accumulators' layout
  // would write 4 bytes a lane.
#pragma unroll
  for (int m = 0; m < M; ++m) {
    float inv[2];
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      l[m][r] += __shfl_xor_sync(0xffffffffu, l[m][r], 1);
      l[m][r] += __shfl_xor_sync(0xffffffffu, l[m][r], 2);
      inv[r] = 1.f / l[m][r];
      const int64_t i = row_w + 16 * m + g + 8 * r;
      if (lse.ptr && tq == 0 && i < Sq)
        store_f(lse.ptr, lse.dtype, row_off(lse, b, h, i), (mrow[m][r] + __log2f(l[m][r])) * kLn2);
    }
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      T* p = Qw + (16 * m + g + 8 * r) * LD + 2 * tq;
#pragma unroll
      for (int dt = 0; dt < D / 8; ++dt)
        *reinterpret_cast<uint32_t*>(p + dt * 8) = pack2<T>(o[m][dt][2 * r] * inv[r], o[m][dt][2 * r + 1] * inv[r]);
    }
  }
  __syncwarp();
  {
    constexpr int kPerRow = D / 8;
    T* base = static_cast<T*>(out.ptr) + b * out.stride[0] + h * out.stride[1];
#pragma unroll
    for (int it = 0; it < 16 * M * kPerRow / 32; ++it) {
      const int idx = it * 32 + ln, r = idx / kPerRow, c = (idx % kPerRow) * 8;
      const int64_t i = row_w + r;
      if (i < Sq)
        *reinterpret_cast<uint4*>(base + i * out.stride[2] + c) = *reinterpret_cast<const uint4*>(Qw + r * LD + c);
    }
  }
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
        float p = ex2(fmaf(s[nt][e], sl2, -ll[r]));
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
        float p = ex2(fmaf(s[nt][e], sl2, -Ls[c]));
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

}  // namespace

bool launch_attention_mma(const View4& out, const View4& lse, const View4& q, const View4& k, const View4& v,
                          bool causal, float scale, cudaStream_t stream) {
  int64_t D = 0;
  if (k.size[2] <= 0 || !mma_ok(q, k, {&out}, {&v}, &D)) return false;
  with_type_and_dim(q.dtype, D, [&](auto t, auto d) {
    using T = decltype(t);
    constexpr int kD = decltype(d)::value;
    using C = Fwd<T, kD>;
    auto kernel = attn_fwd_mma<C, T, kD>;
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
