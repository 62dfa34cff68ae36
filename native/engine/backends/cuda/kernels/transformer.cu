// The transformer's kernels: embedding rows (and their gradient), layer norm (and its
// backward), causal attention (and its backward), arange, rotary tables, row argmax.
// One warp per row throughout, float accumulation, and no scratch memory: every buffer
// a kernel touches was allocated by the engine, as PyTorch's kernels would allocate it,
// so memory readings on cuda:N stay the simulated device's. Speed is not the point here,
// except for attention: launch_attention* try the tensor-core kernels of attention_mma.cu
// (fp16/bf16), then the tiled kernels of attention_tiled.cu, and fall back to the
// one-warp-per-row kernels below for what those don't take.
#include <algorithm>
#include <cfloat>
#include <type_traits>

#include "engine/backends/cuda/kernels/dtype_io.cuh"
#include "engine/backends/cuda/kernels/launch.h"
#include "engine/backends/cuda/kernels/warp_rows.cuh"

namespace vramlab::engine::cuda {

namespace {

using namespace warp_rows;

constexpr int kWarpsPerBlock = 4;
constexpr int kMaxHeadDim = 256;

__device__ __forceinline__ int64_t warp_row() { return int64_t(blockIdx.x) * kWarpsPerBlock + (threadIdx.x >> 5); }
int64_t blocks_for_rows(int64_t rows) { return (rows + kWarpsPerBlock - 1) / kWarpsPerBlock; }

// ---- embedding -------------------------------------------------------------------

__global__ void index_select_rows_kernel(Mat2 out, Mat2 w, const long long* idx) {
  const int64_t row = warp_row();
  if (row >= out.rows) return;
  const int64_t src = idx[row];
  for (int64_t c = lane(); c < out.cols; c += 32)
    store_f(out.ptr, out.dtype, row * out.s0 + c * out.s1, load_f(w.ptr, w.dtype, src * w.s0 + c * w.s1));
}

// One thread per column walks every lookup in order: no atomics, for the half types.
__global__ void index_add_rows_kernel(Mat2 gw, Mat2 g, const long long* idx) {
  const int64_t c = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (c >= gw.cols) return;
  for (int64_t i = 0; i < g.rows; ++i) {
    const int64_t at = idx[i] * gw.s0 + c * gw.s1;
    store_f(gw.ptr, gw.dtype, at, load_f(gw.ptr, gw.dtype, at) + load_f(g.ptr, g.dtype, i * g.s0 + c * g.s1));
  }
}

// fp32 weights (the usual case, autocast keeps embeddings in fp32): one warp per lookup,
// atomic adds, so every SM works instead of one thread per column.
__global__ void index_add_rows_atomic_kernel(Mat2 gw, Mat2 g, const long long* idx) {
  const int64_t row = warp_row();
  if (row >= g.rows) return;
  float* base = static_cast<float*>(gw.ptr) + idx[row] * gw.s0;
  for (int64_t c = lane(); c < g.cols; c += 32)
    atomicAdd(base + c * gw.s1, load_f(g.ptr, g.dtype, row * g.s0 + c * g.s1));
}

// ---- layer norm ------------------------------------------------------------------

__device__ __forceinline__ float vec_at(Vec v, int64_t i, float absent) {
  return v.ptr ? load_f(v.ptr, v.dtype, i) : absent;
}

// kVec: every row tensor has contiguous, 16-byte aligned rows of a multiple of 8 float
// elements (and w, b are aligned): 8 columns per lane step with one 16-byte load per
// tensor, as in softmax_nll.cu; the scalar path takes any strides and dtypes.
template <bool kVec>
__global__ void layer_norm_kernel(Mat2 y, float* mean_out, float* rstd_out, Mat2 x, Vec w, Vec b, float eps) {
  const int64_t row = warp_row();
  if (row >= x.rows) return;
  const int64_t n = x.cols;
  float mean, rstd;
  if constexpr (kVec) {
    const int64_t bx = row * x.s0, by = row * y.s0;
    float s = 0;
    for (int64_t c = 8 * lane(); c < n; c += 256) {
      float v[8];
      load8(x.ptr, x.dtype, bx + c, v);
#pragma unroll
      for (int k = 0; k < 8; ++k) s += v[k];
    }
    mean = warp_sum(s) / float(n);
    float q = 0;
    for (int64_t c = 8 * lane(); c < n; c += 256) {
      float v[8];
      load8(x.ptr, x.dtype, bx + c, v);
#pragma unroll
      for (int k = 0; k < 8; ++k) q += (v[k] - mean) * (v[k] - mean);
    }
    rstd = rsqrtf(warp_sum(q) / float(n) + eps);
    for (int64_t c = 8 * lane(); c < n; c += 256) {
      float v[8], wv[8], bv[8];
      load8(x.ptr, x.dtype, bx + c, v);
      if (w.ptr) load8(w.ptr, w.dtype, c, wv);
      if (b.ptr) load8(b.ptr, b.dtype, c, bv);
#pragma unroll
      for (int k = 0; k < 8; ++k) v[k] = (v[k] - mean) * rstd * (w.ptr ? wv[k] : 1.f) + (b.ptr ? bv[k] : 0.f);
      store8(y.ptr, y.dtype, by + c, v);
    }
  } else {
    float s = 0;
    for (int64_t c = lane(); c < n; c += 32) s += load_f(x.ptr, x.dtype, row * x.s0 + c * x.s1);
    mean = warp_sum(s) / float(n);
    float q = 0;
    for (int64_t c = lane(); c < n; c += 32) {
      const float d = load_f(x.ptr, x.dtype, row * x.s0 + c * x.s1) - mean;
      q += d * d;
    }
    rstd = rsqrtf(warp_sum(q) / float(n) + eps);
    for (int64_t c = lane(); c < n; c += 32) {
      const float xh = (load_f(x.ptr, x.dtype, row * x.s0 + c * x.s1) - mean) * rstd;
      store_f(y.ptr, y.dtype, row * y.s0 + c * y.s1, xh * vec_at(w, c, 1.f) + vec_at(b, c, 0.f));
    }
  }
  if (lane() == 0) {
    mean_out[row] = mean;
    rstd_out[row] = rstd;
  }
}

// dx = rstd * (g - mean(g) - xhat * mean(g * xhat)), g = dy * w.
template <bool kVec>
__global__ void layer_norm_dx_kernel(Mat2 dx, Mat2 dy, Mat2 x, const float* mean, const float* rstd, Vec w) {
  const int64_t row = warp_row();
  if (row >= x.rows) return;
  const int64_t n = x.cols;
  const float mu = mean[row], rs = rstd[row];
  float sg = 0, sgx = 0;
  if constexpr (kVec) {
    const int64_t bx = row * x.s0, bdy = row * dy.s0, bdx = row * dx.s0;
    for (int64_t c = 8 * lane(); c < n; c += 256) {
      float g[8], xv[8], wv[8];
      load8(dy.ptr, dy.dtype, bdy + c, g);
      load8(x.ptr, x.dtype, bx + c, xv);
      if (w.ptr) load8(w.ptr, w.dtype, c, wv);
#pragma unroll
      for (int k = 0; k < 8; ++k) {
        const float gk = g[k] * (w.ptr ? wv[k] : 1.f);
        sg += gk;
        sgx += gk * (xv[k] - mu) * rs;
      }
    }
    sg = warp_sum(sg) / float(n);
    sgx = warp_sum(sgx) / float(n);
    for (int64_t c = 8 * lane(); c < n; c += 256) {
      float g[8], xv[8], wv[8];
      load8(dy.ptr, dy.dtype, bdy + c, g);
      load8(x.ptr, x.dtype, bx + c, xv);
      if (w.ptr) load8(w.ptr, w.dtype, c, wv);
#pragma unroll
      for (int k = 0; k < 8; ++k) g[k] = rs * (g[k] * (w.ptr ? wv[k] : 1.f) - sg - (xv[k] - mu) * rs * sgx);
      store8(dx.ptr, dx.dtype, bdx + c, g);
    }
    return;
  }
  for (int64_t c = lane(); c < n; c += 32) {
    const float g = load_f(dy.ptr, dy.dtype, row * dy.s0 + c * dy.s1) * vec_at(w, c, 1.f);
    const float xh = (load_f(x.ptr, x.dtype, row * x.s0 + c * x.s1) - mu) * rs;
    sg += g;
    sgx += g * xh;
  }
  sg = warp_sum(sg) / float(n);
  sgx = warp_sum(sgx) / float(n);
  for (int64_t c = lane(); c < n; c += 32) {
    const float g = load_f(dy.ptr, dy.dtype, row * dy.s0 + c * dy.s1) * vec_at(w, c, 1.f);
    const float xh = (load_f(x.ptr, x.dtype, row * x.s0 + c * x.s1) - mu) * rs;
    store_f(dx.ptr, dx.dtype, row * dx.s0 + c * dx.s1, rs * (g - sg - xh * sgx));
  }
}

// dw = sum dy * xhat, db = sum dy over the rows: a block per 32 columns, its 16 warps
// each summing every 16th row (reads coalesced along the columns), then added up in
// shared memory; no scratch memory, so nothing the allocator would see.
constexpr int kDwdbRowsPerBlock = 16;
// Column sums over the rows: 32 columns per block, kDwdbRowsPerBlock warps down the rows.
// With fp32 outputs the rows are also split over gridDim.y chunks whose sums are added
// atomically into the zeroed outputs: GPT-2's 768 columns alone make only 24 blocks, too
// few for the card. Half-precision outputs keep one chunk (no atomics on them here).
__global__ void layer_norm_dwdb_kernel(Vec dw, Vec db, Mat2 dy, Mat2 x, const float* mean, const float* rstd,
                                       int64_t rows_per_chunk) {
  __shared__ float sw_s[kDwdbRowsPerBlock][33], sb_s[kDwdbRowsPerBlock][33];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int64_t c = int64_t(blockIdx.x) * 32 + tx;
  const int64_t r0 = int64_t(blockIdx.y) * rows_per_chunk, r1 = min(x.rows, r0 + rows_per_chunk);
  float sw = 0, sb = 0;
  if (c < x.cols)
    for (int64_t r = r0 + ty; r < r1; r += kDwdbRowsPerBlock) {
      const float g = load_f(dy.ptr, dy.dtype, r * dy.s0 + c * dy.s1);
      sw += g * (load_f(x.ptr, x.dtype, r * x.s0 + c * x.s1) - mean[r]) * rstd[r];
      sb += g;
    }
  sw_s[ty][tx] = sw;
  sb_s[ty][tx] = sb;
  __syncthreads();
  if (ty != 0 || c >= x.cols) return;
  for (int k = 1; k < kDwdbRowsPerBlock; ++k) {
    sw += sw_s[k][tx];
    sb += sb_s[k][tx];
  }
  if (gridDim.y > 1) {
    if (dw.ptr) atomicAdd(static_cast<float*>(const_cast<void*>(dw.ptr)) + c, sw);
    if (db.ptr) atomicAdd(static_cast<float*>(const_cast<void*>(db.ptr)) + c, sb);
    return;
  }
  if (dw.ptr) store_f(const_cast<void*>(dw.ptr), dw.dtype, c, sw);
  if (db.ptr) store_f(const_cast<void*>(db.ptr), db.dtype, c, sb);
}

// The whole backward in one pass for rows of at most 256 * V elements on the 16-byte
// path: a warp per row reads dy and x once, keeps them in registers for dx, and adds the
// row's dy * xhat and dy into its lanes' column sums; the block adds its warps' sums in
// shared memory and writes them as one row of `partial` (the backend's private reduction
// scratch, outside the caching allocator), which layer_norm_dwdb_finalize sums. The
// separate dweight / dbias pass read dy and x a second time (GPT-2: 50 MB a layer norm);
// atomics into the outputs from every block instead serialised at the end of the grid.
constexpr int kFusedWarps = 8;
template <int V>
__global__ void __launch_bounds__(32 * kFusedWarps, V <= 3 ? 2 : 1)
    layer_norm_backward_fused_kernel(Mat2 dx, Mat2 dy, Mat2 x, const float* mean, const float* rstd, Vec w,
                                     float* partial) {
  extern __shared__ float sums[];  // [2][cols]: dweight, dbias
  const int64_t n = x.cols;
  for (int64_t c = threadIdx.x; c < 2 * n; c += blockDim.x) sums[c] = 0.f;
  __syncthreads();
  float aw[V][8], ab[V][8];
#pragma unroll
  for (int v = 0; v < V; ++v)
#pragma unroll
    for (int k = 0; k < 8; ++k) aw[v][k] = ab[v][k] = 0.f;
  const int64_t warps = int64_t(gridDim.x) * kFusedWarps;
  for (int64_t row = int64_t(blockIdx.x) * kFusedWarps + (threadIdx.x >> 5); row < x.rows; row += warps) {
    const float mu = mean[row], rs = rstd[row];
    float g[V][8], xh[V][8];
    float sg = 0, sgx = 0;
#pragma unroll
    for (int v = 0; v < V; ++v) {
      const int64_t c = 8 * (lane() + 32 * v);
      if (c < n) {
        float wv[8];
        load8(dy.ptr, dy.dtype, row * dy.s0 + c, g[v]);
        load8(x.ptr, x.dtype, row * x.s0 + c, xh[v]);
        if (w.ptr) load8(w.ptr, w.dtype, c, wv);
#pragma unroll
        for (int k = 0; k < 8; ++k) {
          xh[v][k] = (xh[v][k] - mu) * rs;
          aw[v][k] += g[v][k] * xh[v][k];
          ab[v][k] += g[v][k];
          g[v][k] *= w.ptr ? wv[k] : 1.f;
          sg += g[v][k];
          sgx += g[v][k] * xh[v][k];
        }
      }
    }
    sg = warp_sum(sg) / float(n);
    sgx = warp_sum(sgx) / float(n);
#pragma unroll
    for (int v = 0; v < V; ++v) {
      const int64_t c = 8 * (lane() + 32 * v);
      if (c < n) {
#pragma unroll
        for (int k = 0; k < 8; ++k) g[v][k] = rs * (g[v][k] - sg - xh[v][k] * sgx);
        store8(dx.ptr, dx.dtype, row * dx.s0 + c, g[v]);
      }
    }
  }
#pragma unroll
  for (int v = 0; v < V; ++v) {
    const int64_t c = 8 * (lane() + 32 * v);
    if (c < n)
#pragma unroll
      for (int k = 0; k < 8; ++k) {
        atomicAdd(&sums[c + k], aw[v][k]);
        atomicAdd(&sums[n + c + k], ab[v][k]);
      }
  }
  __syncthreads();
  float* mine = partial + int64_t(blockIdx.x) * 2 * n;
  for (int64_t c = threadIdx.x; c < 2 * n; c += blockDim.x) mine[c] = sums[c];
}

// dweight, dbias = the column sums of `parts` rows of partial ([parts][2][cols]): 32
// columns a block, 8 warps down the rows, then added up in shared memory.
__global__ void layer_norm_dwdb_finalize(Vec dw, Vec db, const float* partial, int64_t parts, int64_t n) {
  __shared__ float s[8][33];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int64_t c = int64_t(blockIdx.x) * 32 + tx;
  float acc = 0.f;
  if (c < 2 * n)
    for (int64_t p = ty; p < parts; p += 8) acc += partial[p * 2 * n + c];
  s[ty][tx] = acc;
  __syncthreads();
  if (ty != 0 || c >= 2 * n) return;
  for (int k = 1; k < 8; ++k) acc += s[k][tx];
  if (c < n) {
    if (dw.ptr) store_f(const_cast<void*>(dw.ptr), dw.dtype, c, acc);
  } else if (db.ptr) {
    store_f(const_cast<void*>(db.ptr), db.dtype, c - n, acc);
  }
}

// ---- attention -------------------------------------------------------------------

// One warp per query row, online softmax over the keys (the causal mask is top-left
// aligned, as PyTorch's is_causal: key j is seen by query i when j <= i).
template <int PL>
__global__ void attention_kernel(View4 out, View4 lse, View4 q, View4 k, View4 v, bool causal, float scale) {
  const int64_t B = q.size[0], H = q.size[1], Sq = q.size[2], Sk = k.size[2];
  const int64_t row = warp_row();
  if (row >= B * H * Sq) return;
  const int64_t i = row % Sq, h = (row / Sq) % H, b = row / (Sq * H);
  const int64_t hk = h / (H / k.size[1]);  // grouped-query: q head h reads kv head h / (Hq / Hk)
  float qi[PL], acc[PL] = {};
  load_row(q, b, h, i, qi);
  float m = -FLT_MAX, l = 0;
  const int64_t last = causal ? (i < Sk ? i : Sk - 1) : Sk - 1;
  for (int64_t j = 0; j <= last; ++j) {
    const float s = dot_row(qi, k, b, hk, j) * scale;
    const float m_new = fmaxf(m, s);
    const float corr = __expf(m - m_new), p = __expf(s - m_new);
    l = l * corr + p;
#pragma unroll
    for (int kk = 0; kk < PL; ++kk) {
      const int64_t d = lane() + 32 * kk;
      acc[kk] = acc[kk] * corr + (d < v.size[3] ? p * load_f(v.ptr, v.dtype, off4(v, b, hk, j, d)) : 0.f);
    }
    m = m_new;
  }
#pragma unroll
  for (int kk = 0; kk < PL; ++kk) acc[kk] /= l;
  store_row(out, b, h, i, acc);
  if (lse.ptr && lane() == 0) store_f(lse.ptr, lse.dtype, off4(lse, b, h, i, 0), m + __logf(l));
}

// dq: one warp per query row. p = exp(s - lse), ds = p (dout . v_j - dout . out).
template <int PL>
__global__ void attention_dq_kernel(View4 dq, View4 dout, View4 q, View4 k, View4 v, View4 out, View4 lse, bool causal,
                                    float scale) {
  const int64_t B = q.size[0], H = q.size[1], Sq = q.size[2], Sk = k.size[2];
  const int64_t row = warp_row();
  if (row >= B * H * Sq) return;
  const int64_t i = row % Sq, h = (row / Sq) % H, b = row / (Sq * H);
  const int64_t hk = h / (H / k.size[1]);
  float qi[PL], gi[PL], acc[PL] = {};
  load_row(q, b, h, i, qi);
  load_row(dout, b, h, i, gi);
  const float di = dot_row(gi, out, b, h, i);
  const float li = load_f(lse.ptr, lse.dtype, off4(lse, b, h, i, 0));
  const int64_t last = causal ? (i < Sk ? i : Sk - 1) : Sk - 1;
  for (int64_t j = 0; j <= last; ++j) {
    const float p = __expf(dot_row(qi, k, b, hk, j) * scale - li);
    const float ds = p * (dot_row(gi, v, b, hk, j) - di) * scale;
#pragma unroll
    for (int kk = 0; kk < PL; ++kk) {
      const int64_t d = lane() + 32 * kk;
      if (d < k.size[3]) acc[kk] += ds * load_f(k.ptr, k.dtype, off4(k, b, hk, j, d));
    }
  }
  store_row(dq, b, h, i, acc);
}

// dk, dv: one warp per key row, over the queries that see it.
template <int PL>
__global__ void attention_dkdv_kernel(View4 dk, View4 dv, View4 dout, View4 q, View4 k, View4 v, View4 out, View4 lse,
                                      bool causal, float scale) {
  const int64_t B = q.size[0], Hk = k.size[1], G = q.size[1] / Hk, Sq = q.size[2], Sk = k.size[2];
  const int64_t row = warp_row();
  if (row >= B * Hk * Sk) return;
  // one warp per key row of kv head hk: dK, dV summed over the G query heads reading it
  const int64_t j = row % Sk, hk = (row / Sk) % Hk, b = row / (Sk * Hk);
  float kj[PL], vj[PL], ak[PL] = {}, av[PL] = {};
  load_row(k, b, hk, j, kj);
  load_row(v, b, hk, j, vj);
  for (int64_t h = hk * G; h < (hk + 1) * G; ++h)
    for (int64_t i = causal ? j : 0; i < Sq; ++i) {
      float qi[PL], gi[PL];
      load_row(q, b, h, i, qi);
      load_row(dout, b, h, i, gi);
      float s = 0, gv = 0, go = 0;
#pragma unroll
      for (int kk = 0; kk < PL; ++kk) {
        const int64_t d = lane() + 32 * kk;
        s += qi[kk] * kj[kk];
        gv += gi[kk] * vj[kk];
        go += d < out.size[3] ? gi[kk] * load_f(out.ptr, out.dtype, off4(out, b, h, i, d)) : 0.f;
      }
      s = warp_sum(s) * scale;
      gv = warp_sum(gv);
      go = warp_sum(go);
      const float p = __expf(s - load_f(lse.ptr, lse.dtype, off4(lse, b, h, i, 0)));
      const float ds = p * (gv - go) * scale;
#pragma unroll
      for (int kk = 0; kk < PL; ++kk) {
        av[kk] += p * gi[kk];
        ak[kk] += ds * qi[kk];
      }
    }
  store_row(dk, b, hk, j, ak);
  store_row(dv, b, hk, j, av);
}

// ---- small ones ------------------------------------------------------------------

__global__ void arange_kernel(void* out, int32_t dt, int64_t n, double start) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) store_d(out, dt, i, start + double(i));
}

// inv_freq = 1 / theta^(2i / D) in float, angle = t * inv_freq (torch's outer product).
__global__ void rope_tables_kernel(void* cos_out, void* sin_out, int32_t dt, int64_t t, int64_t half, int64_t ld,
                                   int64_t first, double theta) {
  const int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (e >= t * half) return;
  const int64_t pos = e / half, i = e % half;
  const float inv = 1.0f / powf(float(theta), float(2 * i) / float(2 * half));
  const float a = float(first + pos) * inv;
  store_f(cos_out, dt, pos * ld + i, cosf(a));
  store_f(sin_out, dt, pos * ld + i, sinf(a));
}

__global__ void argmax_rows_kernel(long long* out, Mat2 in) {
  const int64_t row = warp_row();
  if (row >= in.rows) return;
  float best = -FLT_MAX;
  long long at = 0;
  for (int64_t c = lane(); c < in.cols; c += 32) {
    const float x = load_f(in.ptr, in.dtype, row * in.s0 + c * in.s1);
    if (x > best) best = x, at = c;
  }
#pragma unroll
  for (int k = 16; k > 0; k >>= 1) {  // the first index of the maximum wins, as torch.argmax
    const float ob = __shfl_xor_sync(0xffffffffu, best, k);
    const long long oa = __shfl_xor_sync(0xffffffffu, at, k);
    if (ob > best || (ob == best && oa < at)) best = ob, at = oa;
  }
  if (lane() == 0) out[row] = at;
}

}  // namespace

void launch_index_select_rows(const Mat2& out, const Mat2& weight, const long long* idx, cudaStream_t stream) {
  if (out.rows == 0) return;
  index_select_rows_kernel<<<unsigned(blocks_for_rows(out.rows)), 32 * kWarpsPerBlock, 0, stream>>>(out, weight, idx);
  check_launch("index_select_rows");
}

void launch_index_add_rows(const Mat2& grad_weight, const Mat2& grad, const long long* idx, cudaStream_t stream) {
  if (grad.rows == 0 || grad_weight.cols == 0) return;
  if (grad_weight.dtype == kF32)
    index_add_rows_atomic_kernel<<<unsigned(blocks_for_rows(grad.rows)), 32 * kWarpsPerBlock, 0, stream>>>(grad_weight,
                                                                                                           grad, idx);
  else
    index_add_rows_kernel<<<unsigned((grad_weight.cols + 255) / 256), 256, 0, stream>>>(grad_weight, grad, idx);
  check_launch("index_add_rows");
}

namespace {
// The 16-byte path of the layer norm kernels: contiguous rows of a multiple of 8 float
// elements starting 16-byte aligned, for every row tensor and the affine vectors.
bool float_dtype(int32_t dt) { return dt == kF32 || dt == kF16 || dt == kBF16; }
bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }
bool rows_vec8(const Mat2& m, int64_t cols) {
  return !m.ptr ||
         (m.s1 == 1 && float_dtype(m.dtype) && cols % 8 == 0 && (m.rows <= 1 || m.s0 % 8 == 0) && aligned16(m.ptr));
}
bool vec8(Vec v) { return !v.ptr || (float_dtype(v.dtype) && aligned16(v.ptr)); }
}  // namespace

void launch_layer_norm(const Mat2& y, float* mean, float* rstd, const Mat2& x, Vec w, Vec b, float eps,
                       cudaStream_t stream) {
  if (x.rows == 0) return;
  const unsigned blocks = unsigned(blocks_for_rows(x.rows));
  if (rows_vec8(x, x.cols) && rows_vec8(y, x.cols) && vec8(w) && vec8(b))
    layer_norm_kernel<true><<<blocks, 32 * kWarpsPerBlock, 0, stream>>>(y, mean, rstd, x, w, b, eps);
  else
    layer_norm_kernel<false><<<blocks, 32 * kWarpsPerBlock, 0, stream>>>(y, mean, rstd, x, w, b, eps);
  check_launch("layer_norm");
}

namespace {
int sm_count() {
  static int cached[64] = {};
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess || dev < 0 || dev >= 64) return 132;
  if (!cached[dev] && cudaDeviceGetAttribute(&cached[dev], cudaDevAttrMultiProcessorCount, dev) != cudaSuccess)
    cached[dev] = 132;
  return cached[dev];
}

// The one-pass backward (layer_norm_backward_fused_kernel + finalize), or false when it
// does not apply (or the scratch is too small for the blocks' partial sums).
bool launch_layer_norm_backward_fused(const Mat2& dx, Vec dw, Vec db, const Mat2& dy, const Mat2& x, const float* mean,
                                      const float* rstd, Vec w, float* scratch, int64_t scratch_floats,
                                      cudaStream_t stream) {
  const int64_t n = x.cols;
  if (!dx.ptr || (!dw.ptr && !db.ptr) || !scratch || n > 1024 || n % 8 != 0) return false;
  if (!rows_vec8(dx, n) || !rows_vec8(dy, n) || !rows_vec8(x, n) || !vec8(w) || !vec8(dw) || !vec8(db)) return false;
  const int64_t row_blocks = (x.rows + kFusedWarps - 1) / kFusedWarps;
  // One wave (two blocks an SM for up to 768 columns, one above): each warp sums a few rows.
  const int64_t per_sm = n <= 768 ? 2 : 1;
  const int64_t parts = std::max<int64_t>(1, std::min<int64_t>(row_blocks, per_sm * int64_t(sm_count())));
  if (parts * 2 * n > scratch_floats) return false;
  const unsigned blocks = unsigned(parts);
  const size_t smem = size_t(2 * n) * sizeof(float);
  const dim3 threads(32 * kFusedWarps);
  if (n <= 256)
    layer_norm_backward_fused_kernel<1><<<blocks, threads, smem, stream>>>(dx, dy, x, mean, rstd, w, scratch);
  else if (n <= 512)
    layer_norm_backward_fused_kernel<2><<<blocks, threads, smem, stream>>>(dx, dy, x, mean, rstd, w, scratch);
  else if (n <= 768)
    layer_norm_backward_fused_kernel<3><<<blocks, threads, smem, stream>>>(dx, dy, x, mean, rstd, w, scratch);
  else
    layer_norm_backward_fused_kernel<4><<<blocks, threads, smem, stream>>>(dx, dy, x, mean, rstd, w, scratch);
  check_launch("layer_norm_backward (one pass)");
  layer_norm_dwdb_finalize<<<unsigned((2 * n + 31) / 32), dim3(32, 8), 0, stream>>>(dw, db, scratch, parts, n);
  check_launch("layer_norm_backward (dweight, dbias from the partial sums)");
  return true;
}
}  // namespace

void launch_layer_norm_backward(const Mat2& dx, Vec dw, Vec db, const Mat2& dy, const Mat2& x, const float* mean,
                                const float* rstd, Vec w, float* scratch, int64_t scratch_floats, cudaStream_t stream) {
  if (x.rows == 0) return;
  if (launch_layer_norm_backward_fused(dx, dw, db, dy, x, mean, rstd, w, scratch, scratch_floats, stream)) return;
  if (dx.ptr) {
    const unsigned blocks = unsigned(blocks_for_rows(x.rows));
    if (rows_vec8(dx, x.cols) && rows_vec8(dy, x.cols) && rows_vec8(x, x.cols) && vec8(w))
      layer_norm_dx_kernel<true><<<blocks, 32 * kWarpsPerBlock, 0, stream>>>(dx, dy, x, mean, rstd, w);
    else
      layer_norm_dx_kernel<false><<<blocks, 32 * kWarpsPerBlock, 0, stream>>>(dx, dy, x, mean, rstd, w);
    check_launch("layer_norm_backward (dx)");
  }
  if (dw.ptr || db.ptr) {
    // Enough chunks for a few blocks per SM, each at least 256 rows deep.
    const bool fp32_out = (!dw.ptr || dw.dtype == kF32) && (!db.ptr || db.dtype == kF32);
    const int64_t col_blocks = (x.cols + 31) / 32;
    const int64_t chunks =
        fp32_out ? std::max<int64_t>(1, std::min<int64_t>((x.rows + 255) / 256, (512 + col_blocks - 1) / col_blocks))
                 : 1;
    const int64_t rows_per_chunk = (x.rows + chunks - 1) / chunks;
    if (chunks > 1) {
      if (dw.ptr) cudaMemsetAsync(const_cast<void*>(dw.ptr), 0, size_t(x.cols) * 4, stream);
      if (db.ptr) cudaMemsetAsync(const_cast<void*>(db.ptr), 0, size_t(x.cols) * 4, stream);
      check_launch("layer_norm_backward (zero dweight, dbias)");
    }
    layer_norm_dwdb_kernel<<<dim3(unsigned(col_blocks), unsigned(chunks)), dim3(32, kDwdbRowsPerBlock), 0, stream>>>(
        dw, db, dy, x, mean, rstd, rows_per_chunk);
    check_launch("layer_norm_backward (dweight, dbias)");
  }
}

namespace {
// Elements per lane for a head dim: registers sized to the head, not to the largest one.
template <class F>
void with_per_lane(int64_t head_dim, F&& f) {
  if (head_dim > kMaxHeadDim) throw std::invalid_argument("attention: head dim over 256");
  if (head_dim <= 32)
    f(std::integral_constant<int, 1>{});
  else if (head_dim <= 64)
    f(std::integral_constant<int, 2>{});
  else if (head_dim <= 128)
    f(std::integral_constant<int, 4>{});
  else
    f(std::integral_constant<int, 8>{});
}
}  // namespace

void launch_attention(const View4& out, const View4& lse, const View4& q, const View4& k, const View4& v, bool causal,
                      float scale, cudaStream_t stream) {
  const int64_t rows = q.size[0] * q.size[1] * q.size[2];
  if (rows == 0) return;
  if (k.size[2] > 0 && launch_attention_mma(out, lse, q, k, v, causal, scale, stream)) return;
  if (k.size[2] > 0 && launch_attention_tiled(out, lse, q, k, v, causal, scale, stream)) return;
  with_per_lane(std::max(q.size[3], v.size[3]), [&](auto pl) {
    attention_kernel<decltype(pl)::value>
        <<<unsigned(blocks_for_rows(rows)), 32 * kWarpsPerBlock, 0, stream>>>(out, lse, q, k, v, causal, scale);
  });
  check_launch("attention");
}

void launch_attention_backward(const View4& dq, const View4& dk, const View4& dv, const View4& dout, const View4& q,
                               const View4& k, const View4& v, const View4& out, const View4& lse,
                               const View4& dq_accum, const View4& row_sums, bool causal, float scale,
                               cudaStream_t stream) {
  const int64_t qrows = q.size[0] * q.size[1] * q.size[2], krows = k.size[0] * k.size[1] * k.size[2];
  if (qrows == 0 || krows == 0) return;
  if (launch_attention_backward_fused(dq, dk, dv, dout, q, k, v, out, lse, dq_accum, row_sums, causal, scale, stream))
    return;
  if (launch_attention_backward_mma(dq, dk, dv, dout, q, k, v, out, lse, causal, scale, stream)) return;
  if (launch_attention_backward_tiled(dq, dk, dv, dout, q, k, v, out, lse, causal, scale, stream)) return;
  with_per_lane(std::max(q.size[3], v.size[3]), [&](auto pl) {
    constexpr int PL = decltype(pl)::value;
    attention_dq_kernel<PL><<<unsigned(blocks_for_rows(qrows)), 32 * kWarpsPerBlock, 0, stream>>>(
        dq, dout, q, k, v, out, lse, causal, scale);
    check_launch("attention_backward (dq)");
    attention_dkdv_kernel<PL><<<unsigned(blocks_for_rows(krows)), 32 * kWarpsPerBlock, 0, stream>>>(
        dk, dv, dout, q, k, v, out, lse, causal, scale);
    check_launch("attention_backward (dk, dv)");
  });
}

void launch_arange(void* out, int32_t dtype, int64_t n, double start, cudaStream_t stream) {
  if (n == 0) return;
  arange_kernel<<<unsigned((n + 255) / 256), 256, 0, stream>>>(out, dtype, n, start);
  check_launch("arange");
}

void launch_rope_tables(void* cos, void* sin, int32_t dtype, int64_t t, int64_t half, int64_t ld, int64_t first,
                        double theta, cudaStream_t stream) {
  if (t * half == 0) return;
  rope_tables_kernel<<<unsigned((t * half + 255) / 256), 256, 0, stream>>>(cos, sin, dtype, t, half, ld, first, theta);
  check_launch("rope_tables");
}

void launch_argmax_rows(long long* out, const Mat2& in, cudaStream_t stream) {
  if (in.rows == 0) return;
  argmax_rows_kernel<<<unsigned(blocks_for_rows(in.rows)), 32 * kWarpsPerBlock, 0, stream>>>(out, in);
  check_launch("argmax_rows");
}

}  // namespace vramlab::engine::cuda
