// The kernels the Hugging Face models add on the CUDA backend: dropout (counter-based
// masks, the same bytes as the CPU reference: backends/philox.h), attention with dropout
// on the probabilities, row softmax, top-k, and the MoE routing's index arithmetic
// (sort, inverse permutation, per-expert offsets). Written to be read: one thread or
// one warp per row, float accumulation, no scratch memory (every buffer is the
// engine's, so memory readings stay the simulated device's).
#include <cfloat>
#include <type_traits>

#include "engine/backends/cuda/kernels/dtype_io.cuh"
#include "engine/backends/cuda/kernels/launch.h"
#include "engine/backends/cuda/kernels/warp_rows.cuh"
#include "engine/backends/philox.h"

namespace vramlab::engine::cuda {

namespace {

using namespace warp_rows;

constexpr int kThreads = 256;
constexpr int kWarps = 4;

__device__ __forceinline__ int64_t warp_row() { return int64_t(blockIdx.x) * kWarps + (threadIdx.x >> 5); }
unsigned blocks(int64_t n, int64_t per) { return unsigned((n + per - 1) / per); }
__device__ __forceinline__ int64_t thread_id() { return int64_t(blockIdx.x) * blockDim.x + threadIdx.x; }

// ---- dropout: element counter = out's contiguous offset ----

template <bool Small>
__global__ void dropout_kernel(PointwiseArgs a, unsigned char* mask, double p, uint64_t seed, float scale) {
  const int64_t step = int64_t(gridDim.x) * blockDim.x;
  for (int64_t idx = thread_id(); idx < a.numel; idx += step) {
    int64_t off[4];
    offsets_of<Small>(a, idx, off);
    const bool keep = philox_keep(seed, uint64_t(off[0]), p);
    mask[off[0]] = keep;
    store_f(a.out.ptr, a.out.dtype, off[0], keep ? load_f(a.in[0].ptr, a.in[0].dtype, off[1]) * scale : 0.f);
  }
}

template <bool Small>
__global__ void dropout_backward_kernel(PointwiseArgs a, const unsigned char* mask, float scale) {
  const int64_t step = int64_t(gridDim.x) * blockDim.x;
  for (int64_t idx = thread_id(); idx < a.numel; idx += step) {
    int64_t off[4];
    offsets_of<Small>(a, idx, off);
    store_f(a.out.ptr, a.out.dtype, off[0], mask[off[0]] ? load_f(a.in[0].ptr, a.in[0].dtype, off[1]) * scale : 0.f);
  }
}

// ---- attention with dropout: one warp per row, as transformer.cu's fallback ----

// The softmax statistics are the undropped ones; kept probabilities scale by 1 / (1 - p).
template <int PL>
__global__ void attention_dropout_kernel(View4 out, View4 lse, View4 q, View4 k, View4 v, bool causal, float scale,
                                         double p, uint64_t seed) {
  const int64_t B = q.size[0], H = q.size[1], Sq = q.size[2], Sk = k.size[2];
  const int64_t row = warp_row();
  if (row >= B * H * Sq) return;
  const int64_t i = row % Sq, h = (row / Sq) % H, b = row / (Sq * H), hk = h / (H / k.size[1]);
  const uint64_t ctr = uint64_t(((b * H + h) * Sq + i) * Sk);
  float qi[PL], acc[PL] = {};
  load_row(q, b, h, i, qi);
  float m = -FLT_MAX, l = 0;
  const int64_t last = causal ? (i < Sk ? i : Sk - 1) : Sk - 1;
  for (int64_t j = 0; j <= last; ++j) {
    const float s = dot_row(qi, k, b, hk, j) * scale;
    const float m_new = fmaxf(m, s);
    const float corr = __expf(m - m_new), e = __expf(s - m_new);
    l = l * corr + e;
    const float kept = philox_keep(seed, ctr + uint64_t(j), p) ? e : 0.f;
#pragma unroll
    for (int kk = 0; kk < PL; ++kk) {
      const int64_t d = lane() + 32 * kk;
      acc[kk] = acc[kk] * corr + (d < v.size[3] ? kept * load_f(v.ptr, v.dtype, off4(v, b, hk, j, d)) : 0.f);
    }
    m = m_new;
  }
  const float inv = 1.f / (l * float(1.0 - p));
#pragma unroll
  for (int kk = 0; kk < PL; ++kk) acc[kk] *= inv;
  store_row(out, b, h, i, acc);
  if (lse.ptr && lane() == 0) store_f(lse.ptr, lse.dtype, off4(lse, b, h, i, 0), m + __logf(l));
}

// dq: P = exp(S - lse), dP = (dO . v_j) z_j / (1 - p), dS = P (dP - rowsum(dO * O)) scale.
template <int PL>
__global__ void attention_dropout_dq_kernel(View4 dq, View4 dout, View4 q, View4 k, View4 v, View4 out, View4 lse,
                                            bool causal, float scale, double p, uint64_t seed) {
  const int64_t B = q.size[0], H = q.size[1], Sq = q.size[2], Sk = k.size[2];
  const int64_t row = warp_row();
  if (row >= B * H * Sq) return;
  const int64_t i = row % Sq, h = (row / Sq) % H, b = row / (Sq * H), hk = h / (H / k.size[1]);
  const uint64_t ctr = uint64_t(((b * H + h) * Sq + i) * Sk);
  const float zscale = float(1.0 / (1.0 - p));
  float qi[PL], gi[PL], acc[PL] = {};
  load_row(q, b, h, i, qi);
  load_row(dout, b, h, i, gi);
  const float di = dot_row(gi, out, b, h, i);
  const float li = load_f(lse.ptr, lse.dtype, off4(lse, b, h, i, 0));
  const int64_t last = causal ? (i < Sk ? i : Sk - 1) : Sk - 1;
  for (int64_t j = 0; j <= last; ++j) {
    const float pr = __expf(dot_row(qi, k, b, hk, j) * scale - li);
    const float z = philox_keep(seed, ctr + uint64_t(j), p) ? zscale : 0.f;
    const float ds = pr * (dot_row(gi, v, b, hk, j) * z - di) * scale;
#pragma unroll
    for (int kk = 0; kk < PL; ++kk) {
      const int64_t d = lane() + 32 * kk;
      if (d < k.size[3]) acc[kk] += ds * load_f(k.ptr, k.dtype, off4(k, b, hk, j, d));
    }
  }
  store_row(dq, b, h, i, acc);
}

// dk, dv: one warp per key row of kv head hk, over the query heads reading it.
template <int PL>
__global__ void attention_dropout_dkdv_kernel(View4 dk, View4 dv, View4 dout, View4 q, View4 k, View4 v, View4 out,
                                              View4 lse, bool causal, float scale, double p, uint64_t seed) {
  const int64_t B = q.size[0], H = q.size[1], Hk = k.size[1], G = H / Hk, Sq = q.size[2], Sk = k.size[2];
  const int64_t row = warp_row();
  if (row >= B * Hk * Sk) return;
  const int64_t j = row % Sk, hk = (row / Sk) % Hk, b = row / (Sk * Hk);
  const float zscale = float(1.0 / (1.0 - p));
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
      const float pr = __expf(s - load_f(lse.ptr, lse.dtype, off4(lse, b, h, i, 0)));
      const float z = philox_keep(seed, uint64_t(((b * H + h) * Sq + i) * Sk + j), p) ? zscale : 0.f;
      const float ds = pr * (gv * z - go) * scale;
#pragma unroll
      for (int kk = 0; kk < PL; ++kk) {
        av[kk] += pr * z * gi[kk];
        ak[kk] += ds * qi[kk];
      }
    }
  store_row(dk, b, hk, j, ak);
  store_row(dv, b, hk, j, av);
}

template <class F>
void with_per_lane(int64_t head_dim, F&& f) {
  if (head_dim > 256) throw std::invalid_argument("attention with dropout: head dim over 256");
  if (head_dim <= 32)
    f(std::integral_constant<int, 1>{});
  else if (head_dim <= 64)
    f(std::integral_constant<int, 2>{});
  else if (head_dim <= 128)
    f(std::integral_constant<int, 4>{});
  else
    f(std::integral_constant<int, 8>{});
}

// ---- softmax and top-k over rows ----

__global__ void softmax_kernel(Mat2 out, Mat2 in) {
  const int64_t r = warp_row();
  if (r >= in.rows) return;
  float m = -FLT_MAX;
  for (int64_t c = lane(); c < in.cols; c += 32) m = fmaxf(m, load_f(in.ptr, in.dtype, r * in.s0 + c * in.s1));
  m = warp_max(m);
  float s = 0;
  for (int64_t c = lane(); c < in.cols; c += 32) s += __expf(load_f(in.ptr, in.dtype, r * in.s0 + c * in.s1) - m);
  s = warp_sum(s);
  for (int64_t c = lane(); c < in.cols; c += 32)
    store_f(out.ptr, out.dtype, r * out.s0 + c * out.s1,
            __expf(load_f(in.ptr, in.dtype, r * in.s0 + c * in.s1) - m) / s);
}

__global__ void softmax_backward_kernel(Mat2 out, Mat2 g, Mat2 y) {
  const int64_t r = warp_row();
  if (r >= y.rows) return;
  float dot = 0;
  for (int64_t c = lane(); c < y.cols; c += 32)
    dot += load_f(g.ptr, g.dtype, r * g.s0 + c * g.s1) * load_f(y.ptr, y.dtype, r * y.s0 + c * y.s1);
  dot = warp_sum(dot);
  for (int64_t c = lane(); c < y.cols; c += 32)
    store_f(out.ptr, out.dtype, r * out.s0 + c * out.s1,
            load_f(y.ptr, y.dtype, r * y.s0 + c * y.s1) * (load_f(g.ptr, g.dtype, r * g.s0 + c * g.s1) - dot));
}

// One thread per row: k passes, each taking the best element after the previous pick
// in the order (value descending, index ascending). O(k * cols): k and the expert
// count are small.
__global__ void topk_kernel(Mat2 values, long long* idx, int64_t idx_s0, Mat2 in, int64_t k) {
  const int64_t r = thread_id();
  if (r >= in.rows) return;
  float pv = FLT_MAX;
  int64_t pc = -1;
  for (int64_t j = 0; j < k; ++j) {
    float bv = -FLT_MAX;
    int64_t bc = -1;
    for (int64_t c = 0; c < in.cols; ++c) {
      const float x = load_f(in.ptr, in.dtype, r * in.s0 + c * in.s1);
      const bool after = x < pv || (x == pv && c > pc);
      if (after && (bc < 0 || x > bv)) bv = x, bc = c;
    }
    store_f(values.ptr, values.dtype, r * values.s0 + j * values.s1, bv);
    idx[r * idx_s0 + j] = bc;
    pv = bv;
    pc = bc;
  }
}

__global__ void scatter_rows_kernel(Mat2 out, Mat2 src, const long long* idx, int64_t idx_s0) {
  const int64_t t = thread_id();
  if (t >= src.rows * src.cols) return;
  const int64_t r = t / src.cols, j = t % src.cols;
  store_f(out.ptr, out.dtype, r * out.s0 + idx[r * idx_s0 + j] * out.s1,
          load_f(src.ptr, src.dtype, r * src.s0 + j * src.s1));
}

// ---- MoE routing's index arithmetic ----

// Rank sort: element i goes to the number of elements before it in (value, index)
// order. O(n^2) work over n threads: plain and stable; n is tokens x top_k.
__global__ void sort_int64_kernel(long long* values, long long* perm, const long long* in, int64_t n) {
  const int64_t i = thread_id();
  if (i >= n) return;
  const long long x = in[i];
  int64_t rank = 0;
  for (int64_t j = 0; j < n; ++j) rank += in[j] < x || (in[j] == x && j < i);
  values[rank] = x;
  perm[rank] = i;
}

__global__ void index_div_kernel(long long* out, const long long* in, int64_t n, long long d) {
  const int64_t i = thread_id();
  if (i < n) out[i] = in[i] / d;
}

__global__ void invert_permutation_kernel(long long* out, const long long* perm, int64_t n) {
  const int64_t i = thread_id();
  if (i < n) out[perm[i]] = i;
}

// offsets[e] = number of ids <= e (ids ascending, >= 0), counts[e] its difference.
__global__ void group_offsets_kernel(int* counts, int* offsets, const long long* ids, int64_t n, int64_t experts) {
  const int64_t e = thread_id();
  if (e >= experts) return;
  auto upper = [&](long long v) {
    int64_t lo = 0, hi = n;
    while (lo < hi) {
      const int64_t mid = (lo + hi) / 2;
      if (ids[mid] <= v)
        lo = mid + 1;
      else
        hi = mid;
    }
    return lo;
  };
  const int64_t end = upper(e), start = e > 0 ? upper(e - 1) : upper(-1);
  offsets[e] = int(end);
  counts[e] = int(end - start);
}

}  // namespace

void launch_dropout(const PointwiseArgs& a, unsigned char* mask, double p, uint64_t seed, int sms, cudaStream_t st) {
  if (a.numel == 0) return;
  const float scale = float(1.0 / (1.0 - p));
  if (a.numel < (int64_t(1) << 31))
    dropout_kernel<true><<<grid_for(a.numel, kThreads, sms), kThreads, 0, st>>>(a, mask, p, seed, scale);
  else
    dropout_kernel<false><<<grid_for(a.numel, kThreads, sms), kThreads, 0, st>>>(a, mask, p, seed, scale);
  check_launch("dropout");
}

void launch_dropout_backward(const PointwiseArgs& a, const unsigned char* mask, double scale, int sms,
                             cudaStream_t st) {
  if (a.numel == 0) return;
  if (a.numel < (int64_t(1) << 31))
    dropout_backward_kernel<true><<<grid_for(a.numel, kThreads, sms), kThreads, 0, st>>>(a, mask, float(scale));
  else
    dropout_backward_kernel<false><<<grid_for(a.numel, kThreads, sms), kThreads, 0, st>>>(a, mask, float(scale));
  check_launch("dropout_backward");
}

void launch_attention_dropout(const View4& out, const View4& lse, const View4& q, const View4& k, const View4& v,
                              bool causal, float scale, double p, uint64_t seed, cudaStream_t st) {
  const int64_t rows = q.size[0] * q.size[1] * q.size[2];
  if (rows == 0) return;
  with_per_lane(q.size[3] > v.size[3] ? q.size[3] : v.size[3], [&](auto pl) {
    attention_dropout_kernel<decltype(pl)::value>
        <<<blocks(rows, kWarps), 32 * kWarps, 0, st>>>(out, lse, q, k, v, causal, scale, p, seed);
  });
  check_launch("attention with dropout");
}

void launch_attention_dropout_backward(const View4& dq, const View4& dk, const View4& dv, const View4& dout,
                                       const View4& q, const View4& k, const View4& v, const View4& out,
                                       const View4& lse, bool causal, float scale, double p, uint64_t seed,
                                       cudaStream_t st) {
  const int64_t qrows = q.size[0] * q.size[1] * q.size[2], krows = k.size[0] * k.size[1] * k.size[2];
  if (qrows == 0 || krows == 0) return;
  with_per_lane(q.size[3] > v.size[3] ? q.size[3] : v.size[3], [&](auto pl) {
    constexpr int PL = decltype(pl)::value;
    attention_dropout_dq_kernel<PL>
        <<<blocks(qrows, kWarps), 32 * kWarps, 0, st>>>(dq, dout, q, k, v, out, lse, causal, scale, p, seed);
    check_launch("attention with dropout backward (dq)");
    attention_dropout_dkdv_kernel<PL>
        <<<blocks(krows, kWarps), 32 * kWarps, 0, st>>>(dk, dv, dout, q, k, v, out, lse, causal, scale, p, seed);
    check_launch("attention with dropout backward (dk, dv)");
  });
}

void launch_softmax(const Mat2& out, const Mat2& in, cudaStream_t st) {
  if (in.rows == 0) return;
  softmax_kernel<<<blocks(in.rows, kWarps), 32 * kWarps, 0, st>>>(out, in);
  check_launch("softmax");
}

void launch_softmax_backward(const Mat2& out, const Mat2& grad, const Mat2& y, cudaStream_t st) {
  if (y.rows == 0) return;
  softmax_backward_kernel<<<blocks(y.rows, kWarps), 32 * kWarps, 0, st>>>(out, grad, y);
  check_launch("softmax_backward");
}

void launch_topk(const Mat2& values, long long* idx, int64_t idx_s0, const Mat2& in, int64_t k, cudaStream_t st) {
  if (in.rows == 0) return;
  topk_kernel<<<blocks(in.rows, kThreads), kThreads, 0, st>>>(values, idx, idx_s0, in, k);
  check_launch("topk");
}

void launch_scatter_rows(const Mat2& out, const Mat2& src, const long long* idx, int64_t idx_s0, cudaStream_t st) {
  if (src.rows * src.cols == 0) return;
  scatter_rows_kernel<<<blocks(src.rows * src.cols, kThreads), kThreads, 0, st>>>(out, src, idx, idx_s0);
  check_launch("topk_backward");
}

void launch_sort_int64(long long* values, long long* perm, const long long* in, int64_t n, cudaStream_t st) {
  if (n == 0) return;
  sort_int64_kernel<<<blocks(n, kThreads), kThreads, 0, st>>>(values, perm, in, n);
  check_launch("sort");
}

void launch_index_div(long long* out, const long long* in, int64_t n, long long d, cudaStream_t st) {
  if (n == 0) return;
  index_div_kernel<<<blocks(n, kThreads), kThreads, 0, st>>>(out, in, n, d);
  check_launch("floor_divide");
}

void launch_invert_permutation(long long* out, const long long* perm, int64_t n, cudaStream_t st) {
  if (n == 0) return;
  invert_permutation_kernel<<<blocks(n, kThreads), kThreads, 0, st>>>(out, perm, n);
  check_launch("inverse permutation");
}

void launch_group_offsets(int* counts, int* offsets, const long long* ids, int64_t n, int64_t experts,
                          cudaStream_t st) {
  if (experts == 0) return;
  group_offsets_kernel<<<blocks(experts, kThreads), kThreads, 0, st>>>(counts, offsets, ids, n, experts);
  check_launch("histc/cumsum");
}

}  // namespace vramlab::engine::cuda
