#pragma once
// Tensors: a refcounted storage block plus a view (sizes, strides, offset, dtype).
// Views share storage and the version counter; autograd metadata lives on the impl.
// Memory is released exactly when the last reference to a storage goes away, as in
// PyTorch, which is what makes the engine's memory timeline match.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/core/alloc_tag.h"
#include "engine/core/dtype.h"
#include "engine/core/memory.h"

namespace vramlab::engine {

class Node;
class EngineContext;
using Shape = std::vector<int64_t>;

struct Storage {
  EngineContext* ctx = nullptr;
  MemBlock block;
  size_t nbytes = 0;
  void* data = nullptr;  // host memory (cpu backend), device pointer (cuda), null (sim)
  std::unique_ptr<uint8_t[]> host;
  TagId tag = 0;
  Storage() = default;
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;
  ~Storage();
};

class Tensor;

struct TensorImpl {
  std::shared_ptr<Storage> storage;
  Shape sizes, strides;
  int64_t offset = 0;  // in elements
  DType dtype = DType::Float32;
  std::shared_ptr<uint32_t> version;  // shared by all views of one storage
  bool is_view = false;
  // autograd
  bool requires_grad = false;
  std::shared_ptr<TensorImpl> grad;
  std::shared_ptr<Node> grad_fn;
  uint32_t output_nr = 0;
  std::weak_ptr<Node> grad_accumulator;
};

class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}

  bool defined() const { return impl_ != nullptr; }
  TensorImpl* impl() const { return impl_.get(); }
  const std::shared_ptr<TensorImpl>& impl_ptr() const { return impl_; }
  long use_count() const { return impl_.use_count(); }
  bool is_same(const Tensor& o) const { return impl_ == o.impl_; }
  void reset() { impl_.reset(); }

  const Shape& sizes() const { return impl_->sizes; }
  const Shape& strides() const { return impl_->strides; }
  int64_t size(int64_t d) const;
  int64_t dim() const { return int64_t(impl_->sizes.size()); }
  int64_t numel() const;
  DType dtype() const { return impl_->dtype; }
  size_t element_size() const { return itemsize(impl_->dtype); }
  size_t nbytes() const { return size_t(numel()) * element_size(); }
  int64_t storage_offset() const { return impl_->offset; }
  const std::shared_ptr<Storage>& storage() const { return impl_->storage; }
  void* data_ptr() const;  // null on the sim backend
  bool is_contiguous() const;
  bool is_non_overlapping_and_dense() const;
  bool has_data() const { return impl_->storage && impl_->storage->data; }

  // autograd
  bool requires_grad() const { return impl_ && impl_->requires_grad; }
  Tensor& requires_grad_(bool r = true);
  Tensor grad() const { return Tensor(impl_->grad); }
  void set_grad(const Tensor& g) { impl_->grad = g.impl_; }
  const std::shared_ptr<Node>& grad_fn() const { return impl_->grad_fn; }
  bool is_leaf() const { return !impl_->grad_fn; }
  uint32_t output_nr() const { return impl_->output_nr; }
  uint32_t version() const { return *impl_->version; }
  void bump_version() { ++*impl_->version; }
  // loss.backward(): gradient defaults to ones for a scalar.
  void backward(const Tensor& gradient = Tensor(), bool retain_graph = false) const;

  std::string shape_string() const;  // "[256, 2048]"
  std::string type_string() const;   // "torch.cuda.FloatTensor"
  std::string to_string(int max_elems = 8) const;

  // View and copy methods (ops/view.cpp, ops/copy.cpp).
  Tensor view(const Shape& shape) const;
  Tensor reshape(const Shape& shape) const;
  Tensor t() const;
  Tensor transpose(int64_t d0, int64_t d1) const;
  Tensor expand(const Shape& shape) const;
  Tensor slice(int64_t dim, int64_t start, int64_t end) const;
  Tensor unsqueeze(int64_t dim) const;
  Tensor detach() const;
  Tensor clone() const;
  Tensor contiguous() const;
  Tensor to(DType dtype) const;
  Tensor float_() const { return to(DType::Float32); }
  double item() const;
  std::vector<double> to_vector() const;  // cpu backend only

 private:
  std::shared_ptr<TensorImpl> impl_;
};

Shape contiguous_strides(const Shape& sizes);
int64_t shape_numel(const Shape& s);
std::string shape_str(const Shape& s);

// Builds a tensor with fresh storage from the current context's allocator.
Tensor make_tensor(const Shape& sizes, DType dtype, const char* op);
Tensor make_tensor(const Shape& sizes, DType dtype, const char* op, Category category);
// A new impl viewing t's storage (shares version counter; no autograd history).
Tensor make_view(const Tensor& base, const Shape& sizes, const Shape& strides, int64_t offset);

}  // namespace vramlab::engine
