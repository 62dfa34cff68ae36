#ifdef VRAMLAB_HAVE_CUDA
// The CUDA backend's ops for the Hugging Face models: shape checks and views on the
// host, the kernels of kernels/hf_ops.cu on the backend's stream. Nothing here allocates.
#include <stdexcept>
#include <string>

#include "engine/backends/cuda/cuda_backend.h"
#include "engine/backends/cuda/kernel_views.h"
#include "engine/backends/cuda/kernels/launch.h"
#include "engine/backends/cuda/pointwise_args.h"

namespace vramlab::engine::cuda {

namespace {

long long* int64_data(const Tensor& t, const char* what) {
  if (t.dtype() != DType::Int64 || !t.is_contiguous())
    throw std::invalid_argument(std::string(what) + ": expected a contiguous int64 tensor");
  return static_cast<long long*>(t.data_ptr());
}

void require_contiguous(const Tensor& t, const char* what) {
  if (!t.is_contiguous()) throw std::invalid_argument(std::string(what) + ": expected a contiguous output");
}

}  // namespace

void CudaBackend::dropout(const Tensor& out, const Tensor& mask, const Tensor& x, double p, uint64_t seed) {
  use_device();
  require_contiguous(out, "dropout");
  PointwisePlan plan = plan_pointwise(out, {&x}, "dropout");
  launch_dropout(plan.args, static_cast<unsigned char*>(mask.data_ptr()), p, seed, num_sms_, stream_);
}

void CudaBackend::dropout_backward(const Tensor& out, const Tensor& grad, const Tensor& mask, double scale) {
  use_device();
  require_contiguous(out, "dropout_backward");
  PointwisePlan plan = plan_pointwise(out, {&grad}, "dropout_backward");
  launch_dropout_backward(plan.args, static_cast<const unsigned char*>(mask.data_ptr()), scale, num_sms_, stream_);
}

void CudaBackend::attention_dropout(const Tensor& out, const Tensor& lse, const Tensor& q, const Tensor& k,
                                    const Tensor& v, bool causal, double scale, double p, uint64_t seed) {
  use_device();
  const char* w = "attention with dropout";
  View4 l;  // null: no log-sum-exp wanted
  if (lse.defined()) l = view4(lse, w);
  launch_attention_dropout(view4(out, w), l, view4(q, w), view4(k, w), view4(v, w), causal, float(scale), p, seed,
                           stream_);
}

void CudaBackend::attention_dropout_backward(const Tensor& dq, const Tensor& dk, const Tensor& dv, const Tensor& dout,
                                             const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out,
                                             const Tensor& lse, bool causal, double scale, double p, uint64_t seed) {
  use_device();
  const char* w = "attention with dropout backward";
  launch_attention_dropout_backward(view4(dq, w), view4(dk, w), view4(dv, w), view4(dout, w), view4(q, w), view4(k, w),
                                    view4(v, w), view4(out, w), view4(lse, w), causal, float(scale), p, seed, stream_);
}

void CudaBackend::softmax(const Tensor& out, const Tensor& in) {
  use_device();
  launch_softmax(mat(out, "softmax"), mat(in, "softmax"), stream_);
}

void CudaBackend::softmax_backward(const Tensor& out, const Tensor& grad, const Tensor& y) {
  use_device();
  const char* w = "softmax_backward";
  launch_softmax_backward(mat(out, w), mat(grad, w), mat(y, w), stream_);
}

void CudaBackend::topk_rows(const Tensor& values, const Tensor& indices, const Tensor& in, int64_t k) {
  use_device();
  if (indices.dtype() != DType::Int64 || indices.dim() != 2 || indices.strides()[1] != 1)
    throw std::invalid_argument("topk: expected int64 indices with unit column stride");
  launch_topk(mat(values, "topk"), static_cast<long long*>(indices.data_ptr()), indices.strides()[0], mat(in, "topk"),
              k, stream_);
}

void CudaBackend::scatter_rows(const Tensor& out, const Tensor& src, const Tensor& indices) {
  use_device();
  if (indices.dtype() != DType::Int64 || indices.dim() != 2 || indices.strides()[1] != 1)
    throw std::invalid_argument("topk_backward: expected int64 indices with unit column stride");
  launch_scatter_rows(mat(out, "topk_backward"), mat(src, "topk_backward"),
                      static_cast<const long long*>(indices.data_ptr()), indices.strides()[0], stream_);
}

void CudaBackend::sort_int64(const Tensor& values, const Tensor& perm, const Tensor& in) {
  use_device();
  launch_sort_int64(int64_data(values, "sort"), int64_data(perm, "sort"), int64_data(in, "sort"), in.numel(), stream_);
}

void CudaBackend::index_div(const Tensor& out, const Tensor& in, int64_t d) {
  use_device();
  launch_index_div(int64_data(out, "floor_divide"), int64_data(in, "floor_divide"), in.numel(), d, stream_);
}

void CudaBackend::invert_permutation(const Tensor& out, const Tensor& perm) {
  use_device();
  launch_invert_permutation(int64_data(out, "inverse permutation"), int64_data(perm, "inverse permutation"),
                            perm.numel(), stream_);
}

void CudaBackend::group_offsets(const Tensor& counts, const Tensor& offsets, const Tensor& sorted_ids) {
  use_device();
  if (itemsize(counts.dtype()) != 4 || itemsize(offsets.dtype()) != 4 || !counts.is_contiguous() ||
      !offsets.is_contiguous() || counts.numel() != offsets.numel())
    throw std::invalid_argument("histc/cumsum: expected two contiguous 4-byte (int32) tensors of one size");
  launch_group_offsets(static_cast<int*>(counts.data_ptr()), static_cast<int*>(offsets.data_ptr()),
                       int64_data(sorted_ids, "histc/cumsum"), sorted_ids.numel(), counts.numel(), stream_);
}

}  // namespace vramlab::engine::cuda
#endif  // VRAMLAB_HAVE_CUDA
