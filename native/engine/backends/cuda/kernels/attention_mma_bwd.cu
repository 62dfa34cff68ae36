// FlashAttention-2's backward in one pass over the keys, on tensor cores (fp16/bf16, head
// dims 64 and 128, grouped-query heads), for when the engine hands over the float dQ
// accumulator and the softmax row sums it allocates as PyTorch's backends do (flash:
// dq_accum and softmax_d; cuDNN: its workspace): the kernels allocate nothing.
//
//   prep      D = rowsum(dO * O) into the row sums, the dQ accumulator zeroed.
//   main      block = 4 warps x 16 keys (K, V in shared memory), loop over the query tiles
//             of every query head of the key head's group (Q, dO, lse, D double-buffered
//             by cp.async), each warp owning its keys' rows: P^T = exp(K Q^T - lse),
//             dV += P^T dO, dS^T = P^T (V dO^T - D), dK += dS^T Q (dK, dV in registers);
//             dS^T goes through shared memory so the warps split dQ's tile += dS K and
//             add it to the accumulator with float atomics.
//   convert   dQ = the accumulator, rounded to the element type.
// Five matrix products per tile where the two-pass path (attention_mma.cu) needs seven.
#include "engine/backends/cuda/kernels/launch.h"
#include "engine/backends/cuda/kernels/mma_tile.cuh"
#include "engine/backends/cuda/kernels/tile_launch.cuh"

namespace vramlab::engine::cuda {

namespace {

using namespace tile_launch;
using namespace mma;

// ---- prep and convert: kD / 8 lanes per row, 8 elements each ----------------------------------

template <class T, int D>
__global__ void __launch_bounds__(256) attn_bwd_prep(View4 rsum, View4 acc, View4 dout, View4 out, int64_t rows) {
  constexpr int kTpr = D / 8;
  const int64_t r = (int64_t(blockIdx.x) * 256 + threadIdx.x) / kTpr;
  const int part = int(threadIdx.x) % kTpr;
  const int64_t H = dout.size[1], S = dout.size[2];
  float sum = 0.f;
  int64_t b = 0, h = 0, i = 0;
  if (r < rows) {
    i = r % S;
    b = r / S / H;
    h = r / S % H;
    const uint4 gv =
        *reinterpret_cast<const uint4*>(static_cast<const T*>(dout.ptr) + row_off(dout, b, h, i) + part * 8);
    const uint4 ov = *reinterpret_cast<const uint4*>(static_cast<const T*>(out.ptr) + row_off(out, b, h, i) + part * 8);
    const T* ge = reinterpret_cast<const T*>(&gv);
    const T* oe = reinterpret_cast<const T*>(&ov);
#pragma unroll
    for (int e = 0; e < 8; ++e) sum += to_f(ge[e]) * to_f(oe[e]);
    float4* a = reinterpret_cast<float4*>(static_cast<float*>(acc.ptr) + row_off(acc, b, h, i) + part * 8);
    a[0] = a[1] = make_float4(0.f, 0.f, 0.f, 0.f);
  }
#pragma unroll
  for (int o = 1; o < kTpr; o <<= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
  if (r < rows && part == 0) static_cast<float*>(rsum.ptr)[row_off(rsum, b, h, i)] = sum;
}

template <class T, int D>
__global__ void __launch_bounds__(256) attn_bwd_convert(View4 dq, View4 acc, int64_t rows) {
  constexpr int kTpr = D / 8;
  const int64_t r = (int64_t(blockIdx.x) * 256 + threadIdx.x) / kTpr;
  if (r >= rows) return;
  const int part = int(threadIdx.x) % kTpr;
  const int64_t H = dq.size[1], S = dq.size[2], i = r % S, b = r / S / H, h = r / S % H;
  const float4* a =
      reinterpret_cast<const float4*>(static_cast<const float*>(acc.ptr) + row_off(acc, b, h, i) + part * 8);
  const float4 x = a[0], y = a[1];
  uint4 o;
  o.x = pack2<T>(x.x, x.y);
  o.y = pack2<T>(x.z, x.w);
  o.z = pack2<T>(y.x, y.y);
  o.w = pack2<T>(y.z, y.w);
  *reinterpret_cast<uint4*>(static_cast<T*>(dq.ptr) + row_off(dq, b, h, i) + part * 8) = o;
}

// ---- main -------------------------------------------------------------------------------------

// 4 warps: measured faster on an H100 than 8 (128 keys a block, half the dQ atomics).
template <class T, int D>
struct Fused {
  static constexpr int kWarps = 4, kThreads = 32 * kWarps, BC = 16 * kWarps, BR = D == 64 ? 64 : 32, LD = D + 8;
  static constexpr int LDS = BR + 8;  // dS^T rows (keys), padded as the tiles are
  // dQ's tile split over the warps: kRowBlocks of 16 queries x kColSplit column blocks
  static constexpr int kRowBlocks = BR / 16, kColSplit = kWarps / kRowBlocks, DN = D / kColSplit;
  static constexpr size_t tr = sizeof(T) * BR * LD, tc = sizeof(T) * BC * LD;  // tile bytes
  // K, V, then per stage Q, dO, lse, D; then dS^T
  static constexpr size_t k = 0, v = tc, stage = 2 * tc, stage_bytes = 2 * tr + 2 * sizeof(float) * BR,
                          ds = stage + 2 * stage_bytes, bytes = ds + sizeof(T) * BC * LDS;
};

// Adds a warp's 16 x DN float tile (rows g, g + 8 of each n8 column pair) to the
// accumulator rows [row0, row0 + 16), columns [col0, col0 + DN); rows at or past nrows skipped.
template <int DN>
__device__ __forceinline__ void atomic_add_tile(const View4& acc, int64_t b, int64_t h, int64_t row0, int col0,
                                                int64_t nrows, const float (&c)[DN / 8][4]) {
  const int ln = lane_id(), g = ln >> 2, tq = ln & 3;
  float* base = static_cast<float*>(acc.ptr) + b * acc.stride[0] + h * acc.stride[1] + col0 + 2 * tq;
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int64_t row = row0 + g + 8 * r;
    if (row >= nrows) continue;
    float* p = base + row * acc.stride[2];
#pragma unroll
    for (int dt = 0; dt < DN / 8; ++dt) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
      atomicAdd(reinterpret_cast<float2*>(p + dt * 8), make_float2(c[dt][2 * r], c[dt][2 * r + 1]));
#else
      atomicAdd(p + dt * 8, c[dt][2 * r]);
      atomicAdd(p + dt * 8 + 1, c[dt][2 * r + 1]);
#endif
    }
  }
}

// grid (B * Hk, key tiles); causal masks are top-left aligned (key j seen by query i when j <= i).
template <class T, int D>
__global__ void __launch_bounds__(Fused<T, D>::kThreads, 2)
    attn_bwd_fused_mma(View4 dk, View4 dv, View4 acc, View4 rsum, View4 dout, View4 q, View4 k, View4 v, View4 lse,
                       bool causal, float scale) {
  using C = Fused<T, D>;
  constexpr int BR = C::BR, BC = C::BC, LD = C::LD, LDS = C::LDS, NT = C::kThreads, DN = C::DN;
  extern __shared__ __align__(128) unsigned char smem[];
  T* Ks = reinterpret_cast<T*>(smem + C::k);
  T* Vs = reinterpret_cast<T*>(smem + C::v);
  auto Qs = [&](int s) { return reinterpret_cast<T*>(smem + C::stage + s * C::stage_bytes); };
  auto Gs = [&](int s) { return reinterpret_cast<T*>(smem + C::stage + s * C::stage_bytes + C::tr); };
  auto Ls = [&](int s) { return reinterpret_cast<float*>(smem + C::stage + s * C::stage_bytes + 2 * C::tr); };
  auto Ds = [&](int s) { return Ls(s) + BR; };
  T* dSs = reinterpret_cast<T*>(smem + C::ds);

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
  // this warp's part of dQ's tile
  const int dq_row = (w % C::kRowBlocks) * 16, dq_col = (w / C::kRowBlocks) * DN;

  auto issue = [&](int it, int s) {
    const int64_t hq = hk * group + it / per_head, i0 = i_start + int64_t(it % per_head) * BR;
    load_tile<T, BR, D, NT>(Qs(s), q, b, hq, i0, Sq);
    load_tile<T, BR, D, NT>(Gs(s), dout, b, hq, i0, Sq);
    const int t = int(threadIdx.x);
    if (t < 2 * BR) {  // lse, then D (no reference to either parameter: they would go to local memory)
      const int64_t i = i0 + (t < BR ? t : t - BR);
      const bool ok = i < Sq;
      const float* p;
      if (t < BR)
        p = static_cast<const float*>(lse.ptr) + (ok ? row_off(lse, b, hq, i) : 0);
      else
        p = static_cast<const float*>(rsum.ptr) + (ok ? row_off(rsum, b, hq, i) : 0);
      cp_async4(Ls(s) + t, p, ok);
    }
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
    const float* L = Ls(st);
    const float* Dd = Ds(st);

    float s[BR / 8][4], dp[BR / 8][4];
    zero(s);
    mma_ss<BR, D, true>(s, Kw, LD, Qs(st), LD);  // S^T = K Q^T
    // keys past Sk too: their dS meets zero-filled K rows in dQ, but need not be finite
    const bool mask = i0 + BR > Sq || key_w + 16 > Sk || (causal && key_w + 15 > i0);
#pragma unroll
    for (int nt = 0; nt < BR / 8; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int c = nt * 8 + 2 * tq + (e & 1);
        float p = ex2(fmaf(s[nt][e], sl2, -L[c] * kLog2e));
        if (mask) {
          const int64_t i = i0 + c, j = key_w + g + 8 * (e >> 1);
          if (i >= Sq || j >= Sk || (causal && j > i)) p = 0.f;
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
        s[nt][e] = s[nt][e] * (dp[nt][e] - Dd[c]) * scale;  // dS^T
      }
    {
      uint32_t dsa[BR / 16][4];
      c_to_a<BR, T>(dsa, s);
      mma_rs<D, BR, false>(dka, dsa, Qs(st), LD);  // dK += dS^T Q
      // dS^T to shared memory, rows = keys: the same rounded values dK used
      T* row = dSs + (16 * w + g) * LDS + 2 * tq;
#pragma unroll
      for (int kk = 0; kk < BR / 16; ++kk) {
        *reinterpret_cast<uint32_t*>(row + kk * 16) = dsa[kk][0];
        *reinterpret_cast<uint32_t*>(row + 8 * LDS + kk * 16) = dsa[kk][1];
        *reinterpret_cast<uint32_t*>(row + kk * 16 + 8) = dsa[kk][2];
        *reinterpret_cast<uint32_t*>(row + 8 * LDS + kk * 16 + 8) = dsa[kk][3];
      }
    }
    __syncthreads();
    {
      float dqa[DN / 8][4];
      zero(dqa);
#pragma unroll
      for (int kk = 0; kk < BC / 16; ++kk) {
        uint32_t a[4];
        load_a_trans(a, dSs + dq_row, LDS, kk);
#pragma unroll
        for (int np = 0; np < DN / 16; ++np) {
          uint32_t bf[4];
          load_b<false>(bf, Ks + dq_col, LD, np, kk);
          mma16816<T>(dqa[2 * np], a, bf[0], bf[1]);
          mma16816<T>(dqa[2 * np + 1], a, bf[2], bf[3]);
        }
      }
      atomic_add_tile<DN>(acc, b, hq, i0 + dq_row, dq_col, Sq, dqa);  // dQ += dS K
    }
    __syncthreads();
  }
  cp_async_wait<0>();  // n == 0: the K, V loads are still owed
  store_acc<T, D>(dk, b, hk, key_w, Sk, dka, 1.f, 1.f);
  store_acc<T, D>(dv, b, hk, key_w, Sk, dva, 1.f, 1.f);
}

// The scratch views: float, laid out over (B, Hq, Sq) rows (the accumulator's rows of D
// contiguous floats, 16-byte aligned), as the engine's buffers for PyTorch's backends are.
bool scratch_ok(const View4& acc, const View4& rsum, const View4& q, const View4& lse) {
  if (!acc.ptr || !rsum.ptr || acc.dtype != kF32 || rsum.dtype != kF32 || lse.dtype != kF32) return false;
  for (int i = 0; i < 3; ++i)
    if (acc.size[i] != q.size[i] || rsum.size[i] != q.size[i]) return false;
  if (acc.size[3] != q.size[3] || acc.stride[3] != 1 || reinterpret_cast<uintptr_t>(acc.ptr) % 16 != 0) return false;
  for (int i = 0; i < 3; ++i)
    if (acc.size[i] > 1 && acc.stride[i] % 4 != 0) return false;
  return true;
}

}  // namespace

bool launch_attention_backward_fused(const View4& dq, const View4& dk, const View4& dv, const View4& dout,
                                     const View4& q, const View4& k, const View4& v, const View4& out, const View4& lse,
                                     const View4& dq_accum, const View4& row_sums, bool causal, float scale,
                                     cudaStream_t stream) {
  int64_t D = 0;
  if (k.size[2] <= 0 || !mma_ok(q, k, {&out, &dout, &dq}, {&v, &dk, &dv}, &D)) return false;
  if (!scratch_ok(dq_accum, row_sums, q, lse)) return false;
  const int64_t rows = q.size[0] * q.size[1] * q.size[2];
  with_type_and_dim(q.dtype, D, [&](auto t, auto d) {
    using T = decltype(t);
    constexpr int kD = decltype(d)::value;
    const unsigned row_blocks = unsigned((rows * (kD / 8) + 255) / 256);
    attn_bwd_prep<T, kD><<<row_blocks, 256, 0, stream>>>(row_sums, dq_accum, dout, out, rows);
    check_launch("attention_backward (prep)");
    using C = Fused<T, kD>;
    auto kernel = attn_bwd_fused_mma<T, kD>;
    set_smem(kernel, C::bytes);
    kernel<<<dim3(unsigned(k.size[0] * k.size[1]), tiles(k.size[2], C::BC)), C::kThreads, C::bytes, stream>>>(
        dk, dv, dq_accum, row_sums, dout, q, k, v, lse, causal, scale);
    check_launch("attention_backward (fused mma)");
    attn_bwd_convert<T, kD><<<row_blocks, 256, 0, stream>>>(dq, dq_accum, rows);
    check_launch("attention_backward (dq convert)");
  });
  return true;
}

}  // namespace vramlab::engine::cuda
