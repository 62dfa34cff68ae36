// nn.Embedding: index_select of the weight's rows; the backward node keeps only the
// indices. Its gradient is embedding_dense_backward as the CUDA build runs it: up to
// 3072 indices, one zero-filled weight-sized gradient; beyond, a radix sort of the
// indices and the segment bookkeeping of EmbeddingBackwardKernel.cu, each buffer taken
// from (and returned to) the caching allocator in the kernel's order.
#include "engine/ops/common.h"
#include "engine/ops/cub_temp.h"

namespace vramlab::engine {

namespace {

constexpr int64_t kMaxSimpleIndices = 3072;  // embedding_dense_backward_cuda's small-input path
constexpr int64_t kRowsPerThread = 10;       // NROWS_PER_THREAD: partial segments

DType acc_dtype(DType t) { return t == DType::Float16 || t == DType::BFloat16 ? DType::Float32 : t; }

Tensor dense_backward(const Tensor& grad_in, const Tensor& indices, int64_t num_weights) {
  const int64_t n = indices.numel(), c = grad_in.size(-1);
  Tensor grad = grad_in.contiguous().view({n, c});
  Tensor idx = indices.contiguous();
  if (n <= kMaxSimpleIndices) {
    Tensor gw = zeros({num_weights, c}, grad.dtype());
    be().index_add_rows(gw, grad, idx.reshape({n}));
    return gw;
  }
  Tensor sorted = make_tensor({n}, DType::Int64, "embedding_dense_backward");
  Tensor orig = make_tensor({n}, DType::Int64, "embedding_dense_backward");
  {
    Tensor range = arange(0, n);
    auto tmp = scratch(cub_radix_sort_pairs_bytes(n, 8, 8, 64), "cub::DeviceRadixSort");
  }
  // embedding_backward_cuda_kernel
  Tensor gw = zeros({num_weights, c}, grad.dtype());
  Tensor segment_offsets = make_tensor({n}, DType::Int64, "embedding_backward");
  Tensor num_segments = make_tensor({}, DType::Int64, "embedding_backward");
  {
    Tensor dummy = make_tensor({n}, DType::Int64, "embedding_backward");
    auto tmp = scratch(cub_scan_bytes(n), "cub::DeviceSelect::UniqueByKey");
  }
  const int64_t max_segments = std::min(n, num_weights);
  Tensor partials_per_segment = make_tensor({max_segments}, DType::Int64, "embedding_backward");
  Tensor partials_offset = make_tensor({max_segments}, DType::Int64, "embedding_backward");
  { auto tmp = scratch(cub_scan_bytes(max_segments), "cub::DeviceScan::ExclusiveSum"); }
  Tensor num_partial = make_tensor({}, DType::Int64, "embedding_backward");
  const int64_t max_partial = n / kRowsPerThread + max_segments;
  Tensor partial_offset = make_tensor({max_partial}, DType::Int64, "embedding_backward");
  Tensor per_segment = make_tensor({max_partial, c}, acc_dtype(grad.dtype()), "embedding_backward");
  be().index_add_rows(gw, grad, idx.reshape({n}));
  return gw;
}

struct EmbeddingBackward0 : Node {
  SavedVariable indices_;
  int64_t num_weights = 0;
  std::string name() const override { return "EmbeddingBackward0"; }
  TensorList apply(TensorList& g) override {
    if (!g[0].defined()) return undefined_grads(1);
    return {dense_backward(g[0], indices_.unpack(this), num_weights)};
  }
  void release_variables() override { indices_.reset_data(); }
};

}  // namespace

Tensor embedding(const Tensor& weight, const Tensor& indices) {
  if (weight.dim() != 2) throw std::invalid_argument("'weight' must be 2-D");
  if (indices.dtype() != DType::Int64)
    throw std::invalid_argument(std::string("Expected tensor for argument #1 'indices' to have one of the following "
                                            "scalar types: Long, Int; but got ") +
                                dtype_name(indices.dtype()));
  auto n = make_node<EmbeddingBackward0>({&weight});
  if (n) {
    n->indices_ = SavedVariable(indices, false);
    n->num_weights = weight.size(0);
  }
  const int64_t rows = indices.numel(), c = weight.size(1);
  Tensor out = make_tensor({rows, c}, weight.dtype(), "embedding");
  be().index_select_rows(out, weight, indices.contiguous().reshape({rows}));
  with_history(out, n);
  Shape s = indices.sizes();
  s.push_back(c);
  return indices.dim() == 1 ? out : out.view(s);
}

}  // namespace vramlab::engine
