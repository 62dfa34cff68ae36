#include "engine/core/tensor.h"

#include <algorithm>
#include <sstream>
#include <stdexcept>

#include "engine/backends/backend.h"
#include "engine/core/context.h"

namespace vramlab::engine {

Shape contiguous_strides(const Shape& sizes) {
  Shape st(sizes.size());
  int64_t s = 1;
  for (size_t i = sizes.size(); i-- > 0;) {
    st[i] = s;
    s *= std::max<int64_t>(sizes[i], 1);
  }
  return st;
}

int64_t shape_numel(const Shape& s) {
  int64_t n = 1;
  for (auto v : s) n *= v;
  return n;
}

std::string shape_str(const Shape& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
  return r + "]";
}

int64_t Tensor::size(int64_t d) const {
  int64_t n = dim();
  if (d < 0) d += n;
  if (d < 0 || d >= n)
    throw std::out_of_range("Dimension out of range (expected to be in range of [" + std::to_string(-n) + ", " +
                            std::to_string(n - 1) + "], but got " + std::to_string(d) + ")");
  return impl_->sizes[size_t(d)];
}

int64_t Tensor::numel() const { return shape_numel(impl_->sizes); }

void* Tensor::data_ptr() const {
  if (!impl_->storage || !impl_->storage->data) return nullptr;
  return static_cast<uint8_t*>(impl_->storage->data) + impl_->offset * int64_t(element_size());
}

bool Tensor::is_contiguous() const {
  int64_t expected = 1;
  for (size_t i = impl_->sizes.size(); i-- > 0;) {
    if (impl_->sizes[i] == 1) continue;
    if (impl_->strides[i] != expected) return false;
    expected *= impl_->sizes[i];
  }
  return true;
}

bool Tensor::is_non_overlapping_and_dense() const {
  if (is_contiguous()) return true;
  // Dense in some permutation: sort dims by stride and check they tile memory.
  std::vector<size_t> perm(impl_->sizes.size());
  for (size_t i = 0; i < perm.size(); ++i) perm[i] = i;
  std::sort(perm.begin(), perm.end(), [&](size_t a, size_t b) {
    if (impl_->sizes[a] < 2) return false;
    if (impl_->sizes[b] < 2) return true;
    return impl_->strides[a] < impl_->strides[b];
  });
  int64_t expected = 1;
  for (size_t i : perm) {
    if (impl_->sizes[i] == 1) continue;
    if (impl_->strides[i] != expected) return false;
    expected *= impl_->sizes[i];
  }
  return true;
}

Tensor& Tensor::requires_grad_(bool r) {
  if (!impl_) throw std::invalid_argument("requires_grad_() on an undefined tensor");
  if (!r && impl_->grad_fn)
    throw std::invalid_argument(
        "you can only change requires_grad flags of leaf variables. If you want to use a computed variable in a "
        "subgraph that doesn't require differentiation use var_no_grad = var.detach().");
  if (r && !is_floating(impl_->dtype))
    throw std::invalid_argument("only Tensors of floating point dtype can require gradients");
  impl_->requires_grad = r;
  return *this;
}

std::string Tensor::shape_string() const { return shape_str(impl_->sizes); }

std::string Tensor::type_string() const {
  auto* c = impl_->storage ? impl_->storage->ctx : nullptr;
  return torch_type_name(impl_->dtype, c && c->on_device());
}

Tensor make_tensor(const Shape& sizes, DType dtype, const char* op) {
  return make_tensor(sizes, dtype, op, alloc_scope().category);
}

Tensor make_tensor(const Shape& sizes, DType dtype, const char* op, Category category) {
  for (auto s : sizes)
    if (s < 0)
      throw std::invalid_argument("Trying to create tensor with negative dimension " + std::to_string(s) + ": " +
                                  shape_str(sizes));
  auto& ctx = current_context();
  auto impl = std::make_shared<TensorImpl>();
  impl->sizes = sizes;
  impl->strides = contiguous_strides(sizes);
  impl->dtype = dtype;
  impl->version = std::make_shared<uint32_t>(0);
  impl->storage = ctx.allocate_storage(size_t(shape_numel(sizes)) * itemsize(dtype), current_tag(op, category));
  return Tensor(std::move(impl));
}

Tensor make_view(const Tensor& base, const Shape& sizes, const Shape& strides, int64_t offset) {
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = base.impl()->storage;
  impl->sizes = sizes;
  impl->strides = strides;
  impl->offset = offset;
  impl->dtype = base.dtype();
  impl->version = base.impl()->version;
  impl->is_view = true;
  return Tensor(std::move(impl));
}

double Tensor::item() const {
  if (numel() != 1)
    throw std::invalid_argument("a Tensor with " + std::to_string(numel()) + " elements cannot be converted to Scalar");
  return impl_->storage->ctx->backend().item(*this);
}

std::vector<double> Tensor::to_vector() const {
  auto& be = impl_->storage->ctx->backend();
  if (!be.has_data()) throw std::logic_error("the simulated device holds shapes only: tensor values are not available");
  std::vector<double> out;
  out.reserve(size_t(numel()));
  Shape idx(impl_->sizes.size(), 0);
  for (int64_t n = 0; n < numel(); ++n) {
    int64_t off = 0;
    for (size_t d = 0; d < idx.size(); ++d) off += idx[d] * impl_->strides[d];
    out.push_back(be.item(make_view(*this, {}, {}, impl_->offset + off)));
    for (size_t d = idx.size(); d-- > 0;) {
      if (++idx[d] < impl_->sizes[d]) break;
      idx[d] = 0;
    }
  }
  return out;
}

std::string Tensor::to_string(int max_elems) const {
  std::ostringstream os;
  os << "tensor(" << shape_string() << ", dtype=" << dtype_name(dtype());
  if (has_data() && numel() > 0) {
    auto v = to_vector();
    os << ", [";
    for (size_t i = 0; i < v.size() && int(i) < max_elems; ++i) os << (i ? ", " : "") << v[i];
    if (int(v.size()) > max_elems) os << ", ...";
    os << "]";
  }
  if (requires_grad()) os << ", requires_grad=True";
  os << ")";
  return os.str();
}

}  // namespace vramlab::engine
