#ifdef VRAMLAB_HAVE_CUDA
#include "engine/backends/cuda/pointwise_args.h"

#include <algorithm>
#include <stdexcept>
#include <cstdlib>

namespace vramlab::engine::cuda {

FastDiv make_fastdiv(uint32_t d) {
  FastDiv f;
  f.d = d;
  uint32_t shift = 0;
  while (shift < 32 && (uint64_t(1) << shift) < d) ++shift;
  f.shift = shift;
  f.m = uint32_t(((uint64_t(1) << 32) * ((uint64_t(1) << shift) - d)) / d + 1);
  return f;
}

namespace {

bool vector_dtype(int32_t dt) { return dt == kF32 || dt == kF16 || dt == kBF16; }

}  // namespace

PointwisePlan plan_pointwise(const Tensor& out, std::initializer_list<const Tensor*> inputs, const char* op) {
  // Hot path (every pointwise op): fixed-size arrays only, no heap allocation.
  PointwisePlan p;
  PointwiseArgs& a = p.args;
  const Shape& sizes = out.sizes();
  const size_t nd = sizes.size();
  if (inputs.size() > 3) throw std::logic_error("pointwise op with more than 3 inputs");
  const size_t nops = 1 + inputs.size();
  const Tensor* ops[4] = {&out, nullptr, nullptr, nullptr};
  size_t k0 = 1;
  for (const Tensor* t : inputs) {
    if (t->sizes() != sizes)
      throw std::invalid_argument(std::string(op) + ": input shape " + t->shape_string() +
                                  " differs from the output shape " + out.shape_string() + " (expand first)");
    ops[k0++] = t;
  }
  for (size_t k = 0; k < nops; ++k)
    if (!ops[k]->has_data() && ops[k]->numel() > 0)
      throw std::logic_error(std::string(op) + ": cuda kernel on a tensor without device memory");

  // Dims of size > 1, ordered by the output's strides (outermost first; insertion sort, stable).
  constexpr size_t kCap = 64;
  if (nd > kCap) throw std::invalid_argument(std::string(op) + ": too many dims");
  size_t dims[kCap];
  size_t nkeep = 0;
  for (size_t d = 0; d < nd; ++d) {
    if (sizes[d] == 1) continue;
    const int64_t sd = std::abs(out.strides()[d]);
    size_t j = nkeep++;
    while (j > 0 && std::abs(out.strides()[dims[j - 1]]) < sd) {
      dims[j] = dims[j - 1];
      --j;
    }
    dims[j] = d;
  }
  int64_t sz[kCap];
  int64_t st[4][kCap];
  size_t n = 0;
  for (size_t i = 0; i < nkeep; ++i) {
    const size_t d = dims[i];
    bool merge = n > 0;
    for (size_t k = 0; k < nops && merge; ++k)
      if (st[k][n - 1] != ops[k]->strides()[d] * sizes[d]) merge = false;
    if (merge) {
      sz[n - 1] *= sizes[d];
      for (size_t k = 0; k < nops; ++k) st[k][n - 1] = ops[k]->strides()[d];
    } else {
      sz[n] = sizes[d];
      for (size_t k = 0; k < nops; ++k) st[k][n] = ops[k]->strides()[d];
      ++n;
    }
  }
  if (n == 0) {  // one element
    sz[0] = 1;
    for (size_t k = 0; k < nops; ++k) st[k][0] = 1;
    n = 1;
  }
  if (n > size_t(kMaxDims))
    throw std::invalid_argument(std::string(op) + ": more than " + std::to_string(kMaxDims) +
                                " non-mergeable dims are not supported by the cuda backend");

  a.ndim = int32_t(n);
  a.nin = int32_t(inputs.size());
  a.numel = out.numel();
  for (size_t d = 0; d < n; ++d) {
    a.sizes[d] = sz[d];
    if (a.numel < (int64_t(1) << 31)) a.div[d] = make_fastdiv(uint32_t(sz[d]));
  }
  Operand* slots[4] = {&a.out, &a.in[0], &a.in[1], &a.in[2]};
  for (size_t k = 0; k < nops; ++k) {
    slots[k]->ptr = ops[k]->data_ptr();
    slots[k]->dtype = int32_t(ops[k]->dtype());
    for (size_t d = 0; d < n; ++d) slots[k]->strides[d] = st[k][d];
  }

  // Fast path: one dim, output dense, inputs dense or one broadcast value.
  bool fast = a.ndim == 1 && (a.out.strides[0] == 1 || a.numel == 1) && vector_dtype(a.out.dtype) &&
              reinterpret_cast<uintptr_t>(a.out.ptr) % 16 == 0;
  for (size_t k = 1; k < nops && fast; ++k) {
    Operand& o = *slots[k];
    if (!vector_dtype(o.dtype))
      fast = false;
    else if (o.strides[0] == 0 && a.numel > 1)
      o.mode = 1;
    else if ((o.strides[0] == 1 || a.numel == 1) && reinterpret_cast<uintptr_t>(o.ptr) % 16 == 0)
      o.mode = 0;
    else
      fast = false;
  }
  if (!fast)
    for (size_t k = 1; k < nops; ++k) slots[k]->mode = 0;
  p.fast = fast;
  return p;
}

bool same_dense_layout(const Tensor& t, const Tensor& like) {
  return t.sizes() == like.sizes() && t.strides() == like.strides() && t.is_non_overlapping_and_dense();
}

}  // namespace vramlab::engine::cuda
#endif  // VRAMLAB_HAVE_CUDA
