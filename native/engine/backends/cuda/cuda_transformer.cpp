#ifdef VRAMLAB_HAVE_CUDA
// The CUDA backend's transformer ops: shape checks and views on the host, the kernels
// of kernels/transformer.cu on the backend's stream. Nothing here allocates.
#include <stdexcept>
#include <string>

#include "engine/backends/cuda/cuda_backend.h"
#include "engine/backends/cuda/kernel_views.h"
#include "engine/backends/cuda/kernels/launch.h"

namespace vramlab::engine::cuda {

namespace {

// Rows of the last dim: a 2-D view as it is, or a contiguous tensor flattened.
Mat2 rows_of(const Tensor& t, const char* what) {
  Mat2 m;
  m.ptr = t.data_ptr();
  m.dtype = int32_t(t.dtype());
  if (t.dim() == 2) {
    m.rows = t.size(0);
    m.cols = t.size(1);
    m.s0 = t.strides()[0];
    m.s1 = t.strides()[1];
    return m;
  }
  if (!t.is_contiguous()) throw std::invalid_argument(std::string(what) + ": expected a contiguous tensor");
  m.cols = t.dim() ? t.size(-1) : 1;
  m.rows = m.cols ? t.numel() / m.cols : 0;
  m.s0 = m.cols;
  m.s1 = 1;
  return m;
}

Vec vec(const Tensor* t) {
  Vec v;
  if (t) {
    v.ptr = t->data_ptr();
    v.dtype = int32_t(t->dtype());
  }
  return v;
}

const long long* indices_of(const Tensor& idx, const char* what) {
  if (idx.dtype() != DType::Int64 || !idx.is_contiguous())
    throw std::invalid_argument(std::string(what) + ": indices must be contiguous int64");
  return static_cast<const long long*>(idx.data_ptr());
}

void require_f32(const Tensor& t, const char* what) {
  if (t.dtype() != DType::Float32 || !t.is_contiguous())
    throw std::invalid_argument(std::string(what) + ": expected a contiguous float32 tensor");
}

}  // namespace

void CudaBackend::index_select_rows(const Tensor& out, const Tensor& weight, const Tensor& indices) {
  use_device();
  launch_index_select_rows(rows_of(out, "embedding"), rows_of(weight, "embedding"), indices_of(indices, "embedding"),
                           stream_);
}

void CudaBackend::index_add_rows(const Tensor& grad_weight, const Tensor& grad, const Tensor& indices) {
  use_device();
  Mat2 g = rows_of(grad, "embedding_backward");
  if (g.rows != indices.numel()) throw std::invalid_argument("embedding_backward: one gradient row per index");
  launch_index_add_rows(rows_of(grad_weight, "embedding_backward"), g, indices_of(indices, "embedding_backward"),
                        stream_);
}

void CudaBackend::layer_norm(const Tensor& y, const Tensor& mean, const Tensor& rstd, const Tensor& x,
                             const Tensor* weight, const Tensor* bias, double eps) {
  use_device();
  require_f32(mean, "layer_norm");
  require_f32(rstd, "layer_norm");
  launch_layer_norm(rows_of(y, "layer_norm"), static_cast<float*>(mean.data_ptr()),
                    static_cast<float*>(rstd.data_ptr()), rows_of(x, "layer_norm"), vec(weight), vec(bias), float(eps),
                    stream_);
}

void CudaBackend::layer_norm_backward(const Tensor* dx, const Tensor* dweight, const Tensor* dbias, const Tensor& dy,
                                      const Tensor& x, const Tensor& mean, const Tensor& rstd, const Tensor* weight) {
  use_device();
  require_f32(mean, "layer_norm_backward");
  require_f32(rstd, "layer_norm_backward");
  Mat2 dxm;
  if (dx) dxm = rows_of(*dx, "layer_norm_backward");
  launch_layer_norm_backward(dxm, vec(dweight), vec(dbias), rows_of(dy, "layer_norm_backward"),
                             rows_of(x, "layer_norm_backward"), static_cast<const float*>(mean.data_ptr()),
                             static_cast<const float*>(rstd.data_ptr()), vec(weight), scratch_, scratch_floats_,
                             stream_);
}

void CudaBackend::attention(const Tensor& out, const Tensor* lse, const Tensor& q, const Tensor& k, const Tensor& v,
                            bool causal, double scale) {
  use_device();
  View4 l;
  if (lse) l = view4(*lse, "attention");
  launch_attention(view4(out, "attention"), l, view4(q, "attention"), view4(k, "attention"), view4(v, "attention"),
                   causal, float(scale), stream_);
}

void CudaBackend::attention_backward(const Tensor& dq, const Tensor& dk, const Tensor& dv, const Tensor& dout,
                                     const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out,
                                     const Tensor& lse, bool causal, double scale, const AttentionScratch& scratch) {
  use_device();
  const char* w = "attention_backward";
  View4 acc, rsum;  // null: none (the kernels then do without)
  if (scratch.dq_accum.defined() && scratch.row_sums.defined()) {
    acc = view4(scratch.dq_accum, w);
    rsum = view4(scratch.row_sums, w);
  }
  launch_attention_backward(view4(dq, w), view4(dk, w), view4(dv, w), view4(dout, w), view4(q, w), view4(k, w),
                            view4(v, w), view4(out, w), view4(lse, w), acc, rsum, causal, float(scale), stream_);
}

void CudaBackend::arange(const Tensor& out, double start) {
  use_device();
  if (!out.is_contiguous()) throw std::invalid_argument("arange: expected a contiguous tensor");
  launch_arange(out.data_ptr(), int32_t(out.dtype()), out.numel(), start, stream_);
}

void CudaBackend::rope_tables(const Tensor& cos, const Tensor& sin, double theta, int64_t first) {
  use_device();
  if (cos.dim() != 2 || cos.sizes() != sin.sizes() || cos.strides() != sin.strides() || cos.dtype() != sin.dtype() ||
      cos.strides()[1] != 1)
    throw std::invalid_argument(
        "rope_tables: expected two (T, D/2) tables of one dtype and layout, unit column stride");
  launch_rope_tables(cos.data_ptr(), sin.data_ptr(), int32_t(cos.dtype()), cos.size(0), cos.size(1), cos.strides()[0],
                     first, theta, stream_);
}

void CudaBackend::argmax_last(const Tensor& out, const Tensor& in) {
  use_device();
  if (out.dtype() != DType::Int64 || !out.is_contiguous())
    throw std::invalid_argument("argmax: expected a contiguous int64 output");
  launch_argmax_rows(static_cast<long long*>(out.data_ptr()), rows_of(in, "argmax"), stream_);
}

}  // namespace vramlab::engine::cuda
#endif  // VRAMLAB_HAVE_CUDA
