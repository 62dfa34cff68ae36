#pragma once
// The warp-level building blocks of the tensor-core attention kernels (attention_mma.cu,
// attention_mma_bwd.cu): PTX wrappers (cp.async, ldmatrix, mma.sync m16n8k16), one warp's
// 16-row tile products with their fragments (described in attention_mma.cu), tile moves
// between global and shared memory, and the host-side test of what these kernels take.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <initializer_list>
#include <type_traits>

#include "engine/backends/cuda/kernels/dtype_io.cuh"

namespace vramlab::engine::cuda::mma {

constexpr float kLog2e = 1.4426950408889634f;
constexpr float kLn2 = 0.6931471805599453f;

// ---- PTX ------------------------------------------------------------------------------

__device__ __forceinline__ uint32_t smem_u32(const void* p) { return uint32_t(__cvta_generic_to_shared(p)); }

// 16 bytes global -> shared, zero-filled when !valid (then src is only a valid address).
__device__ __forceinline__ void cp_async16(void* dst, const void* src, bool valid) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_u32(dst)), "l"(src), "r"(valid ? 16 : 0));
}
// 4 bytes (one float) global -> shared, zero-filled when !valid.
__device__ __forceinline__ void cp_async4(void* dst, const void* src, bool valid) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(smem_u32(dst)), "l"(src), "r"(valid ? 4 : 0));
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

// The same two loads from a 32-bit shared-memory address, for a kernel that keeps one such
// address a lane and adds each tile's offset as a constant (in attention_mma.cu's forward
// this spilled fewer registers than generic pointers).
__device__ __forceinline__ void ldsm_x4_s(uint32_t (&r)[4], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}
__device__ __forceinline__ void ldsm_x4_trans_s(uint32_t (&r)[4], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
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

// 2^x on the special-function unit, denormals flushed: one instruction where exp2f's
// IEEE-careful form takes four (scores this small are zero probabilities anyway).
__device__ __forceinline__ float ex2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
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

// A fragments of a 16 x 16 tile at k-chunk kk of A stored transposed ([k][m], pitch lda,
// as the backward's dS^T), read through ldmatrix.trans.
template <class T>
__device__ __forceinline__ void load_a_trans(uint32_t (&a)[4], const T* A, int lda, int kk) {
  const int ln = lane_id();
  ldsm_x4_trans(a, A + (kk * 16 + (ln & 7) + ((ln >> 4) & 1) * 8) * lda + ((ln >> 3) & 1) * 8);
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

// ---- host: what these kernels take ---------------------------------------------------------

// This path takes fp16 or bf16 throughout, head dim 64 or 128 for every view, the head dim
// contiguous, 16-byte aligned rows, q's batch on k and v, a query head count that is a
// multiple of the key heads' (grouped-query attention), and grids within CUDA's limits.
// qs: the views laid out like q (out, dout, dq); ks: like k (v, dk, dv).
inline bool mma_ok(const View4& q, const View4& k, std::initializer_list<const View4*> qs,
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

}  // namespace vramlab::engine::cuda::mma
