// FlashAttention-2's backward in one pass over the keys, on tensor cores (fp16/bf16, head
// dims 64 and 128, grouped-query heads), for when the engine hands over the float dQ
// accumulator and the softmax row sums it allocates as PyTorch's backends do (flash:
// dq_accum and softmax_d; cuDNN: its workspace): the kernels allocate nothing.
//
//   prep      D = rowsum(dO * O) into the row sums, the dQ accumulator zeroed.
//   main      block = 8 warps x 128 keys (K, V resident in shared memory), loop over the
//             query tiles (128 for head dim 64, 64 for 128) of every query head of the key
//             head's group (Q, dO, lse, D double-buffered by cp.async), FlashAttention-2's
//             layout: S = Q K^T and dP = dO V^T split over the warps in 32 x 32/64 pieces,
//             P = exp(S - lse) and dS = P (dP - D) written to shared memory, then
//             dV += P^T dO and dK += dS^T Q (dK, dV in registers, a 32-key piece a warp)
//             and dQ's tile = dS K, added to the accumulator with vector float atomics.
//   convert   dQ = the accumulator, rounded to the element type.
// Five matrix products per tile where the two-pass path (attention_mma.cu) needs seven;
// every fragment read from shared memory feeds two or more MMAs.
#include "engine/backends/cuda/kernels/launch.h"
#include "engine/backends/cuda/kernels/mma_tile.cuh"
#include "engine/backends/cuda/kernels/tile_launch.cuh"

namespace vramlab::engine::cuda {

namespace {

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

// A block's tiling (FlashAttention-2's sm80 backward layout): BN keys a block (K, V resident
// in shared memory), BM queries a tile, NW warps. Each product is split over the warps in
// 32-row pieces so that every fragment read from shared memory feeds two or more MMAs:
//   S, dP   (BM x BN, queries x keys):   MS warps along the queries, NW / MS along the keys;
//   dK, dV  (BN x D):                    NKV warps along the keys, NW / NKV along D;
//   dQ      (BM x D):                    MQ warps along the queries, NW / MQ along D.
// P and dS go through shared memory (row = query) for the transposed products.
template <class T, int D, int BM_, int BN_, int NW_, int MS, int NKV, int MQ, bool kPipe_ = false>
struct Tiling {
  static constexpr int kMS = MS, kNKV = NKV, kMQ = MQ;
  static constexpr bool kPipe = kPipe_;
  static constexpr int BM = BM_, BN = BN_, NW = NW_, NT = 32 * NW, LD = D + 8, LDP = BN + 8;
  static constexpr int SM = BM / MS, SN = BN / (NW / MS);   // a warp's S / dP piece
  static constexpr int KM = BN / NKV, KN = D / (NW / NKV);  // a warp's dK / dV piece
  static constexpr int QM = BM / MQ, QN = D / (NW / MQ);    // a warp's dQ piece
  static_assert(SM % 16 == 0 && SN % 16 == 0 && KM % 16 == 0 && KN % 16 == 0 && QM % 16 == 0 && QN % 16 == 0);
  static_assert(BM * 2 <= NT, "one thread a row for lse and D");
  static constexpr size_t tq = sizeof(T) * BM * LD, tk = sizeof(T) * BN * LD, tp = sizeof(T) * BM * LDP;
  // K, V, then per stage Q, dO, lse, D; then P, dS
  static constexpr size_t k = 0, v = tk, stage = 2 * tk, stage_bytes = 2 * tq + 2 * sizeof(float) * BM,
                          p = stage + 2 * stage_bytes, ds = p + tp, bytes = ds + tp;
};
// Head dim 64: 128 queries x 128 keys; 128: 64 x 128 keys with the fragment pipeline
// (FlashAttention-2's block shapes on sm80/sm90; on an H100 the pipeline gave head dim 128
// about 1% and 64 nothing, and 64 x 64 with 4 warps lost 1-10% at head dim 64).
template <class T, int D>
using DefaultTiling =
    std::conditional_t<D == 64, Tiling<T, 64, 128, 128, 8, 4, 4, 4>, Tiling<T, 128, 64, 128, 8, 2, 4, 2, true>>;

// ---- shared memory by 32-bit address: each lane's address is computed once, every fragment
// of a product is that plus a compile-time offset (an immediate of the instruction) ----------

__device__ __forceinline__ void sts32(uint32_t a, uint32_t v) {
  asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(a), "r"(v) : "memory");
}
__device__ __forceinline__ uint32_t lds32(uint32_t a) {
  uint32_t v;
  asm volatile("ld.shared.b32 %0, [%1];\n" : "=r"(v) : "r"(a) : "memory");
  return v;
}
__device__ __forceinline__ void cp16(uint32_t dst, const void* src, bool valid) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(valid ? 16 : 0));
}

// A lane's byte offset in a 16-bit tile of pitch LD (elements), as the fragments of
// mma_tile.cuh's load_a / load_a_trans / load_b read them: A row-major, A stored [k][m],
// B stored [n][k], B stored [k][n].
template <int LD>
__device__ __forceinline__ uint32_t lane_a(int ln) {
  return uint32_t(((ln & 15) * LD + (ln >> 4) * 8) * 2);
}
template <int LD>
__device__ __forceinline__ uint32_t lane_at(int ln) {
  return uint32_t((((ln & 7) + ((ln >> 4) & 1) * 8) * LD + ((ln >> 3) & 1) * 8) * 2);
}
template <int LD>
__device__ __forceinline__ uint32_t lane_bnk(int ln) {
  return uint32_t((((ln & 7) + ((ln >> 4) << 3)) * LD + ((ln >> 3) & 1) * 8) * 2);
}
template <int LD>
__device__ __forceinline__ uint32_t lane_bkn(int ln) {
  return uint32_t((((ln & 7) + ((ln >> 3) & 1) * 8) * LD + (ln >> 4) * 8) * 2);
}

// acc (MT*16 x NT8*8) += A (MT*16 x K) B (K x NT8*8), both in shared memory at the lane
// addresses a, b (pitches LDA, LDB). kAT: A stored [k][m], read through ldmatrix.trans;
// else row-major. kBNK: B stored [n][k]; else [k][n]. kPipe: the next step's fragments are
// read before this step's MMAs.
template <int MT, int NT8, int K, bool kAT, bool kBNK, int LDA, int LDB, bool kPipe, class T>
__device__ __forceinline__ void warp_mma(float (&acc)[MT][NT8][4], uint32_t a, uint32_t b) {
  constexpr int NP = NT8 / 2, KS = K / 16;
  auto load_a = [&](uint32_t(&f)[MT][4], int kk) {
#pragma unroll
    for (int mt = 0; mt < MT; ++mt) {
      if constexpr (kAT)
        ldsm_x4_trans_s(f[mt], a + uint32_t((kk * 16 * LDA + mt * 16) * 2));
      else
        ldsm_x4_s(f[mt], a + uint32_t((mt * 16 * LDA + kk * 16) * 2));
    }
  };
  auto load_b = [&](uint32_t(&f)[4], int np, int kk) {
    if constexpr (kBNK)
      ldsm_x4_s(f, b + uint32_t((np * 16 * LDB + kk * 16) * 2));
    else
      ldsm_x4_trans_s(f, b + uint32_t((kk * 16 * LDB + np * 16) * 2));
  };
  if constexpr (kPipe) {
    uint32_t fa[2][MT][4], fb[2][4];
    load_a(fa[0], 0);
    load_b(fb[0], 0, 0);
#pragma unroll
    for (int kk = 0; kk < KS; ++kk)
#pragma unroll
      for (int np = 0; np < NP; ++np) {
        const int cur = (kk * NP + np) & 1;
        if (np + 1 < NP) {
          load_b(fb[cur ^ 1], np + 1, kk);
        } else if (kk + 1 < KS) {
          load_a(fa[(kk + 1) & 1], kk + 1);
          load_b(fb[cur ^ 1], 0, kk + 1);
        }
#pragma unroll
        for (int mt = 0; mt < MT; ++mt) {
          mma16816<T>(acc[mt][2 * np], fa[kk & 1][mt], fb[cur][0], fb[cur][1]);
          mma16816<T>(acc[mt][2 * np + 1], fa[kk & 1][mt], fb[cur][2], fb[cur][3]);
        }
      }
  } else {
#pragma unroll
    for (int kk = 0; kk < KS; ++kk) {
      uint32_t fa[MT][4];
      load_a(fa, kk);
#pragma unroll
      for (int np = 0; np < NP; ++np) {
        uint32_t fb[4];
        load_b(fb, np, kk);
#pragma unroll
        for (int mt = 0; mt < MT; ++mt) {
          mma16816<T>(acc[mt][2 * np], fa[mt], fb[0], fb[1]);
          mma16816<T>(acc[mt][2 * np + 1], fa[mt], fb[2], fb[3]);
        }
      }
    }
  }
}

// ROWS x D rows of a 16-bit tensor, from src (its row 0, rows stride elements apart), into
// shared memory at dst (pitch D + 8) by cp.async, rows at or past valid zero-filled. All NT
// threads take part; the caller commits.
template <int ROWS, int D, int NT, class T>
__device__ __forceinline__ void load_rows(uint32_t dst, const T* src, int64_t stride, int valid) {
  constexpr int kPerRow = D / 8, kRowsPerPass = NT / kPerRow, LD = D + 8;
  static_assert(NT % kPerRow == 0 && ROWS % kRowsPerPass == 0);
  const int r0 = int(threadIdx.x) / kPerRow, c = (int(threadIdx.x) % kPerRow) * 8;
  const T* p = src + r0 * stride + c;
  const uint32_t d = dst + uint32_t((r0 * LD + c) * 2);
#pragma unroll
  for (int j = 0; j < ROWS / kRowsPerPass; ++j) {
    const bool ok = r0 + j * kRowsPerPass < valid;
    cp16(d + uint32_t(j * kRowsPerPass * LD * 2), ok ? p + j * kRowsPerPass * stride : src, ok);
  }
}

template <class T>
__device__ __forceinline__ float2 unpack2(uint32_t x) {
  if constexpr (std::is_same_v<T, __nv_bfloat16>)
    return __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&x));
  else
    return __half22float2(*reinterpret_cast<const __half2*>(&x));
}

template <int MT, int NT8>
__device__ __forceinline__ void zero3(float (&c)[MT][NT8][4]) {
#pragma unroll
  for (int m = 0; m < MT; ++m) zero(c[m]);
}

// Adds a warp's MT*16 x NT8*8 float piece to the accumulator rows [row0, ...), columns
// [col0, ...); rows at or past nrows skipped. On sm90 lanes pair up (lane ^ 1) so that each
// adds four consecutive floats of one row in one vector atomic: the even lane row g, the
// odd lane row g + 8.
template <int MT, int NT8>
__device__ __forceinline__ void atomic_add_piece(const View4& acc, int64_t b, int64_t h, int64_t row0, int col0,
                                                 int64_t nrows, const float (&c)[MT][NT8][4]) {
  const int ln = lane_id(), g = ln >> 2, tq = ln & 3;
  float* base = static_cast<float*>(acc.ptr) + b * acc.stride[0] + h * acc.stride[1] + col0;
#pragma unroll
  for (int mt = 0; mt < MT; ++mt) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    const bool odd = tq & 1;
    const int64_t row = row0 + mt * 16 + g + (odd ? 8 : 0);
    float* p = base + row * acc.stride[2] + 2 * (tq & ~1);
#pragma unroll
    for (int nt = 0; nt < NT8; ++nt) {
      const float s0 = odd ? c[mt][nt][0] : c[mt][nt][2], s1 = odd ? c[mt][nt][1] : c[mt][nt][3];
      const float r0 = __shfl_xor_sync(0xffffffffu, s0, 1), r1 = __shfl_xor_sync(0xffffffffu, s1, 1);
      const float4 v =
          odd ? make_float4(r0, r1, c[mt][nt][2], c[mt][nt][3]) : make_float4(c[mt][nt][0], c[mt][nt][1], r0, r1);
      if (row < nrows) atomicAdd(reinterpret_cast<float4*>(p + nt * 8), v);
    }
#else
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const int64_t row = row0 + mt * 16 + g + 8 * r;
      if (row >= nrows) continue;
      float* p = base + row * acc.stride[2] + 2 * tq;
#pragma unroll
      for (int nt = 0; nt < NT8; ++nt) {
        atomicAdd(p + nt * 8, c[mt][nt][2 * r]);
        atomicAdd(p + nt * 8 + 1, c[mt][nt][2 * r + 1]);
      }
    }
#endif
  }
}

// A warp's MT*16 x NT8*8 piece to rows [row0, ...), columns [col0, ...) of head (b, h) of t.
template <class T, int MT, int NT8>
__device__ __forceinline__ void store_piece(const View4& t, int64_t b, int64_t h, int64_t row0, int col0, int64_t nrows,
                                            const float (&c)[MT][NT8][4]) {
  const int ln = lane_id(), g = ln >> 2, tq = ln & 3;
  T* base = static_cast<T*>(t.ptr) + b * t.stride[0] + h * t.stride[1] + col0 + 2 * tq;
#pragma unroll
  for (int mt = 0; mt < MT; ++mt)
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const int64_t row = row0 + mt * 16 + g + 8 * r;
      if (row >= nrows) continue;
      T* p = base + row * t.stride[2];
#pragma unroll
      for (int nt = 0; nt < NT8; ++nt)
        *reinterpret_cast<uint32_t*>(p + nt * 8) = pack2<T>(c[mt][nt][2 * r], c[mt][nt][2 * r + 1]);
    }
}

// grid (B * Hk, key blocks); causal masks are top-left aligned (key j seen by query i when j <= i).
template <class T, int D, class C>
__global__ void __launch_bounds__(C::NT, 1)
    attn_bwd_fused_mma(View4 dk, View4 dv, View4 acc, View4 rsum, View4 dout, View4 q, View4 k, View4 v, View4 lse,
                       bool causal, float scale) {
  constexpr int BM = C::BM, BN = C::BN, LD = C::LD, LDP = C::LDP, NT = C::NT;
  constexpr int SM = C::SM, SN = C::SN, KM = C::KM, KN = C::KN, QM = C::QM, QN = C::QN;
  constexpr bool kPipe = C::kPipe;
  extern __shared__ __align__(128) unsigned char smem[];
  const uint32_t sb = smem_u32(smem), kS = sb + uint32_t(C::k), vS = sb + uint32_t(C::v), pS = sb + uint32_t(C::p),
                 dsS = sb + uint32_t(C::ds);
  auto qS = [&](int s) { return sb + uint32_t(C::stage + s * C::stage_bytes); };
  auto gS = [&](int s) { return qS(s) + uint32_t(C::tq); };
  auto Ls = [&](int s) { return reinterpret_cast<float*>(smem + C::stage + s * C::stage_bytes + 2 * C::tq); };

  // sequence indices fit in int (mma_ok: at most 65535 16-row tiles)
  const int Sq = int(q.size[2]), Sk = int(k.size[2]);
  const int64_t Hk = k.size[1], group = q.size[1] / Hk;
  const int64_t b = blockIdx.x / Hk, hk = blockIdx.x % Hk;
  const int k0 = int(blockIdx.y) * BN;
  const int w = int(threadIdx.x >> 5), ln = lane_id(), g = ln >> 2, tq = ln & 3;
  // Causal: queries before k0 see none of these keys.
  const int i_start = causal ? k0 / BM * BM : 0;
  const int per_head = i_start < Sq ? (Sq - i_start + BM - 1) / BM : 0;
  const int n = int(group) * per_head;
  const float sl2 = scale * kLog2e;
  const int s_m0 = (w % C::kMS) * SM, s_n0 = (w / C::kMS) * SN;      // this warp's S / dP piece
  const int kv_m0 = (w % C::kNKV) * KM, kv_n0 = (w / C::kNKV) * KN;  // dK / dV
  const int q_m0 = (w % C::kMQ) * QM, q_n0 = (w / C::kMQ) * QN;      // dQ
  // the lane's addresses, relative to each tile
  const uint32_t o_sa = uint32_t(s_m0 * LD * 2) + lane_a<LD>(ln);          // Q / dO rows, for S / dP
  const uint32_t o_sb = uint32_t(s_n0 * LD * 2) + lane_bnk<LD>(ln);        // K / V rows
  const uint32_t o_kva = uint32_t(kv_m0 * 2) + lane_at<LDP>(ln);           // P / dS columns, for dV / dK
  const uint32_t o_kvb = uint32_t(kv_n0 * 2) + lane_bkn<LD>(ln);           // dO / Q columns
  const uint32_t o_qa = uint32_t(q_m0 * LDP * 2) + lane_a<LDP>(ln);        // dS rows, for dQ
  const uint32_t o_qb = uint32_t(q_n0 * 2) + lane_bkn<LD>(ln);             // K columns
  const uint32_t o_pd = uint32_t(((s_m0 + g) * LDP + s_n0 + 2 * tq) * 2);  // this lane's P / dS stores

  auto issue = [&](int it, int s) {
    const int64_t hq = hk * group + it / per_head;
    const int i0 = i_start + (it % per_head) * BM;
    load_rows<BM, D, NT>(qS(s), static_cast<const T*>(q.ptr) + row_off(q, b, hq, i0), q.stride[2], Sq - i0);
    load_rows<BM, D, NT>(gS(s), static_cast<const T*>(dout.ptr) + row_off(dout, b, hq, i0), dout.stride[2], Sq - i0);
    const int t = int(threadIdx.x);
    if (t < 2 * BM) {  // lse, then D (no reference to either parameter: they would go to local memory)
      const int i = i0 + (t < BM ? t : t - BM);
      const bool ok = i < Sq;
      const float* p;
      if (t < BM)
        p = static_cast<const float*>(lse.ptr) + (ok ? row_off(lse, b, hq, i) : 0);
      else
        p = static_cast<const float*>(rsum.ptr) + (ok ? row_off(rsum, b, hq, i) : 0);
      cp_async4(Ls(s) + t, p, ok);
    }
  };
  load_rows<BN, D, NT>(kS, static_cast<const T*>(k.ptr) + row_off(k, b, hk, k0), k.stride[2], Sk - k0);
  load_rows<BN, D, NT>(vS, static_cast<const T*>(v.ptr) + row_off(v, b, hk, k0), v.stride[2], Sk - k0);
  if (n > 0) issue(0, 0);
  cp_async_commit();

  float dka[KM / 16][KN / 8][4], dva[KM / 16][KN / 8][4];
  zero3(dka);
  zero3(dva);

  for (int it = 0; it < n; ++it) {
    const int st = it & 1;
    const int64_t hq = hk * group + it / per_head;
    const int i0 = i_start + (it % per_head) * BM;
    cp_async_wait<0>();
    __syncthreads();  // this tile has landed; every warp is done with the last one (its stage, P, dS)
    if (it + 1 < n) {
      issue(it + 1, st ^ 1);
      cp_async_commit();
    }
    const uint32_t Q = qS(st), G = gS(st);
    const int qw = i0 + s_m0, kw = k0 + s_n0;
    if (causal && kw > qw + SM - 1) {  // every key of this piece after every query: P = dS = 0
#pragma unroll
      for (int rr = 0; rr < SM / 8; ++rr)
#pragma unroll
        for (int nt = 0; nt < SN / 8; ++nt) {
          const uint32_t off = o_pd + uint32_t((rr * 8 * LDP + nt * 8) * 2);
          sts32(pS + off, 0u);
          sts32(dsS + off, 0u);
        }
    } else {
      const bool mask = qw + SM > Sq || kw + SN > Sk || (causal && kw + SN - 1 > qw);
      const float* L = Ls(st);
      const float* Dd = L + BM;
      // P = exp(S - lse), masked, to shared memory (rounded to T, as the products take it)
      {
        float s[SM / 16][SN / 8][4];
        zero3(s);
        warp_mma<SM / 16, SN / 8, D, false, true, LD, LD, kPipe, T>(s, Q + o_sa, kS + o_sb);  // S = Q K^T
#pragma unroll
        for (int mt = 0; mt < SM / 16; ++mt)
#pragma unroll
          for (int r = 0; r < 2; ++r) {
            const int row = s_m0 + mt * 16 + g + 8 * r;
            const float lr = L[row] * kLog2e;
#pragma unroll
            for (int nt = 0; nt < SN / 8; ++nt) {
              float pe[2];
#pragma unroll
              for (int e = 0; e < 2; ++e) {
                float p = ex2(fmaf(s[mt][nt][2 * r + e], sl2, -lr));
                if (mask) {
                  const int i = i0 + row, j = kw + nt * 8 + 2 * tq + e;
                  if (i >= Sq || j >= Sk || (causal && j > i)) p = 0.f;
                }
                pe[e] = p;
              }
              sts32(pS + o_pd + uint32_t(((mt * 16 + 8 * r) * LDP + nt * 8) * 2), pack2<T>(pe[0], pe[1]));
            }
          }
      }
      float dp[SM / 16][SN / 8][4];
      zero3(dp);
      warp_mma<SM / 16, SN / 8, D, false, true, LD, LD, kPipe, T>(dp, G + o_sa, vS + o_sb);  // dP = dO V^T
      // dS = P (dP - D), P read back from this lane's own stores (fewer registers held than
      // keeping it through dP's product)
#pragma unroll
      for (int mt = 0; mt < SM / 16; ++mt)
#pragma unroll
        for (int r = 0; r < 2; ++r) {
          const float dr = Dd[s_m0 + mt * 16 + g + 8 * r];
#pragma unroll
          for (int nt = 0; nt < SN / 8; ++nt) {
            const uint32_t off = o_pd + uint32_t(((mt * 16 + 8 * r) * LDP + nt * 8) * 2);
            const float2 p = unpack2<T>(lds32(pS + off));
            sts32(dsS + off,
                  pack2<T>(p.x * (dp[mt][nt][2 * r] - dr) * scale, p.y * (dp[mt][nt][2 * r + 1] - dr) * scale));
          }
        }
    }
    __syncthreads();                             // P, dS complete
    if (!causal || k0 + kv_m0 <= i0 + BM - 1) {  // else every P, dS of these keys is 0
      warp_mma<KM / 16, KN / 8, BM, true, false, LDP, LD, kPipe, T>(dva, pS + o_kva, G + o_kvb);   // dV += P^T dO
      warp_mma<KM / 16, KN / 8, BM, true, false, LDP, LD, kPipe, T>(dka, dsS + o_kva, Q + o_kvb);  // dK += dS^T Q
    }
    {
      float dqa[QM / 16][QN / 8][4];
      zero3(dqa);
      warp_mma<QM / 16, QN / 8, BN, false, false, LDP, LD, kPipe, T>(dqa, dsS + o_qa, kS + o_qb);  // dQ = dS K
      atomic_add_piece(acc, b, hq, i0 + q_m0, q_n0, Sq, dqa);
    }
  }
  cp_async_wait<0>();  // n == 0: the K, V loads are still owed
  store_piece<T>(dk, b, hk, k0 + kv_m0, kv_n0, Sk, dka);
  store_piece<T>(dv, b, hk, k0 + kv_m0, kv_n0, Sk, dva);
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

template <class T, int kD, class C>
void launch_fused(const View4& dk, const View4& dv, const View4& dout, const View4& q, const View4& k, const View4& v,
                  const View4& out, const View4& lse, const View4& dq, const View4& dq_accum, const View4& row_sums,
                  bool causal, float scale, cudaStream_t stream) {
  const int64_t rows = q.size[0] * q.size[1] * q.size[2];
  const unsigned row_blocks = unsigned((rows * (kD / 8) + 255) / 256);
  attn_bwd_prep<T, kD><<<row_blocks, 256, 0, stream>>>(row_sums, dq_accum, dout, out, rows);
  check_launch("attention_backward (prep)");
  auto kernel = attn_bwd_fused_mma<T, kD, C>;
  tile_launch::set_smem(kernel, C::bytes);
  kernel<<<dim3(unsigned(k.size[0] * k.size[1]), tile_launch::tiles(k.size[2], C::BN)), C::NT, C::bytes, stream>>>(
      dk, dv, dq_accum, row_sums, dout, q, k, v, lse, causal, scale);
  check_launch("attention_backward (fused mma)");
  attn_bwd_convert<T, kD><<<row_blocks, 256, 0, stream>>>(dq, dq_accum, rows);
  check_launch("attention_backward (dq convert)");
}

}  // namespace

bool launch_attention_backward_fused(const View4& dq, const View4& dk, const View4& dv, const View4& dout,
                                     const View4& q, const View4& k, const View4& v, const View4& out, const View4& lse,
                                     const View4& dq_accum, const View4& row_sums, bool causal, float scale,
                                     cudaStream_t stream) {
  int64_t D = 0;
  if (k.size[2] <= 0 || !mma_ok(q, k, {&out, &dout, &dq}, {&v, &dk, &dv}, &D)) return false;
  if (!scratch_ok(dq_accum, row_sums, q, lse)) return false;
  with_type_and_dim(q.dtype, D, [&](auto t, auto d) {
    using T = decltype(t);
    launch_fused<T, decltype(d)::value, DefaultTiling<T, decltype(d)::value>>(
        dk, dv, dout, q, k, v, out, lse, dq, dq_accum, row_sums, causal, scale, stream);
  });
  return true;
}

}  // namespace vramlab::engine::cuda
