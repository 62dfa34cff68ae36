// View ops: share storage (no allocation); backward of each view is a view or a
// reduction of the gradient, as in derivatives.yaml.
#include "engine/ops/common.h"

namespace vramlab::engine {

namespace {

struct ViewBackward0 : Node {
  Shape self_sizes;
  std::string name() const override { return "ViewBackward0"; }
  TensorList apply(TensorList& g) override {
    if (!g[0].defined()) return undefined_grads(1);
    return {g[0].reshape(self_sizes)};
  }
};

struct TBackward0 : Node {
  std::string name() const override { return "TBackward0"; }
  TensorList apply(TensorList& g) override {
    if (!g[0].defined()) return undefined_grads(1);
    return {g[0].t()};
  }
};

struct TransposeBackward0 : Node {
  int64_t d0 = 0, d1 = 1;
  std::string name() const override { return "TransposeBackward0"; }
  TensorList apply(TensorList& g) override {
    if (!g[0].defined()) return undefined_grads(1);
    return {g[0].transpose(d0, d1)};
  }
};

struct ExpandBackward0 : Node {
  Shape self_sizes;
  std::string name() const override { return "ExpandBackward0"; }
  TensorList apply(TensorList& g) override {
    if (!g[0].defined()) return undefined_grads(1);
    return {sum_to(g[0], self_sizes)};
  }
};

struct SliceBackward0 : Node {
  Shape self_sizes;
  int64_t dim = 0, start = 0, end = 0;
  std::string name() const override { return "SliceBackward0"; }
  TensorList apply(TensorList& g) override {
    if (!g[0].defined()) return undefined_grads(1);
    // slice_backward: zeros of the input's size with the gradient copied in.
    Tensor gi = zeros(self_sizes, g[0].dtype());
    Tensor part = gi.slice(dim, start, end);
    copy_(part, g[0]);
    return {gi};
  }
};

struct UnsqueezeBackward0 : Node {
  Shape self_sizes;
  std::string name() const override { return "UnsqueezeBackward0"; }
  TensorList apply(TensorList& g) override {
    if (!g[0].defined()) return undefined_grads(1);
    return {g[0].reshape(self_sizes)};
  }
};

int64_t wrap_dim(int64_t d, int64_t n) {
  int64_t r = d < 0 ? d + n : d;
  if (r < 0 || r >= std::max<int64_t>(n, 1))
    throw std::out_of_range("Dimension out of range (expected to be in range of [" + std::to_string(-n) + ", " +
                            std::to_string(n - 1) + "], but got " + std::to_string(d) + ")");
  return r;
}

// Strides for viewing t as `shape` without a copy, or empty when impossible (at::detail::computeStride).
std::optional<Shape> compute_view_strides(const Shape& old_sizes, const Shape& old_strides, const Shape& shape) {
  if (old_sizes.empty()) return Shape(shape.size(), 1);
  int64_t numel = shape_numel(old_sizes);
  if (numel == 0) return contiguous_strides(shape);
  Shape new_strides(shape.size());
  int64_t view_d = int64_t(shape.size()) - 1;
  int64_t chunk_base_stride = old_strides.back();
  int64_t tensor_numel = 1, view_numel = 1;
  for (int64_t tensor_d = int64_t(old_sizes.size()) - 1; tensor_d >= 0; tensor_d--) {
    tensor_numel *= old_sizes[size_t(tensor_d)];
    if (tensor_d == 0 || (old_sizes[size_t(tensor_d - 1)] != 1 &&
                          old_strides[size_t(tensor_d - 1)] != tensor_numel * chunk_base_stride)) {
      while (view_d >= 0 && (view_numel < tensor_numel || shape[size_t(view_d)] == 1)) {
        new_strides[size_t(view_d)] = view_numel * chunk_base_stride;
        view_numel *= shape[size_t(view_d)];
        view_d--;
      }
      if (view_numel != tensor_numel) return std::nullopt;
      if (tensor_d > 0) {
        chunk_base_stride = old_strides[size_t(tensor_d - 1)];
        tensor_numel = 1;
        view_numel = 1;
      }
    }
  }
  if (view_d != -1) return std::nullopt;
  return new_strides;
}

Shape infer_size(const Shape& shape, int64_t numel) {
  Shape r = shape;
  int64_t known = 1, infer = -1;
  for (size_t i = 0; i < r.size(); ++i) {
    if (r[i] == -1) {
      if (infer >= 0) throw std::invalid_argument("only one dimension can be inferred");
      infer = int64_t(i);
    } else {
      known *= r[i];
    }
  }
  if (infer >= 0) {
    if (known == 0 || numel % known != 0)
      throw std::invalid_argument("shape '" + shape_str(shape) + "' is invalid for input of size " +
                                  std::to_string(numel));
    r[size_t(infer)] = numel / known;
  } else if (known != numel) {
    throw std::invalid_argument("shape '" + shape_str(shape) + "' is invalid for input of size " +
                                std::to_string(numel));
  }
  return r;
}

}  // namespace

Tensor alias_with_sizes(const Tensor& t, const Shape& sizes, const Shape& strides, int64_t offset) {
  return make_view(t, sizes, strides, offset);
}

Tensor Tensor::view(const Shape& shape) const {
  Shape sizes = infer_size(shape, numel());
  auto st = compute_view_strides(this->sizes(), strides(), sizes);
  if (!st)
    throw std::runtime_error(
        "view size is not compatible with input tensor's size and stride (at least one dimension spans across two "
        "contiguous subspaces). Use .reshape(...) instead.");
  Tensor out = make_view(*this, sizes, *st, storage_offset());
  if (auto n = make_node<ViewBackward0>({this})) {
    n->self_sizes = this->sizes();
    set_history(out, n);
  }
  return out;
}

Tensor Tensor::reshape(const Shape& shape) const {
  Shape sizes = infer_size(shape, numel());
  if (compute_view_strides(this->sizes(), strides(), sizes)) return view(sizes);
  return contiguous().view(sizes);
}

Tensor Tensor::t() const {
  if (dim() > 2)
    throw std::invalid_argument("t() expects a tensor with <= 2 dimensions, but self is " + std::to_string(dim()) +
                                "D");
  if (dim() < 2) {
    Tensor out = make_view(*this, sizes(), strides(), storage_offset());
    if (auto n = make_node<TBackward0>({this})) set_history(out, n);
    return out;
  }
  Tensor out = make_view(*this, {size(1), size(0)}, {strides()[1], strides()[0]}, storage_offset());
  if (auto n = make_node<TBackward0>({this})) set_history(out, n);
  return out;
}

Tensor Tensor::transpose(int64_t d0, int64_t d1) const {
  d0 = wrap_dim(d0, dim());
  d1 = wrap_dim(d1, dim());
  Shape sz = sizes(), st = strides();
  std::swap(sz[size_t(d0)], sz[size_t(d1)]);
  std::swap(st[size_t(d0)], st[size_t(d1)]);
  Tensor out = make_view(*this, sz, st, storage_offset());
  if (auto n = make_node<TransposeBackward0>({this})) {
    n->d0 = d0;
    n->d1 = d1;
    set_history(out, n);
  }
  return out;
}

Tensor expand_to(const Tensor& t, const Shape& shape) {
  if (t.sizes() == shape) return t;
  size_t nd = shape.size(), td = t.sizes().size();
  if (td > nd)
    throw std::invalid_argument("expand: the number of sizes provided (" + std::to_string(nd) +
                                ") must be greater or equal to the number of dimensions in the tensor (" +
                                std::to_string(td) + ")");
  Shape st(nd, 0);
  for (size_t i = 0; i < nd; ++i) {
    int64_t want = shape[i];
    if (i < nd - td) continue;
    size_t j = i - (nd - td);
    int64_t have = t.sizes()[j];
    if (have == want) {
      st[i] = t.strides()[j];
    } else if (have == 1) {
      st[i] = 0;
    } else {
      throw std::invalid_argument("The expanded size of the tensor (" + std::to_string(want) +
                                  ") must match the existing size (" + std::to_string(have) +
                                  ") at non-singleton dimension " + std::to_string(i) +
                                  ".  Target sizes: " + shape_str(shape) + ".  Tensor sizes: " + t.shape_string());
    }
  }
  return make_view(t, shape, st, t.storage_offset());
}

Tensor Tensor::expand(const Shape& shape) const {
  Shape target = shape;
  size_t off = target.size() - sizes().size();
  for (size_t i = 0; i < target.size(); ++i)
    if (target[i] == -1 && i >= off) target[i] = sizes()[i - off];
  Tensor out = expand_to(*this, target);
  if (out.is_same(*this)) out = make_view(*this, sizes(), strides(), storage_offset());
  if (auto n = make_node<ExpandBackward0>({this})) {
    n->self_sizes = sizes();
    set_history(out, n);
  }
  return out;
}

Tensor Tensor::slice(int64_t d, int64_t start, int64_t end) const {
  d = wrap_dim(d, dim());
  int64_t n = sizes()[size_t(d)];
  if (start < 0) start += n;
  if (end < 0) end += n;
  start = std::clamp<int64_t>(start, 0, n);
  end = std::clamp<int64_t>(end, start, n);
  Shape sz = sizes();
  sz[size_t(d)] = end - start;
  Tensor out = make_view(*this, sz, strides(), storage_offset() + start * strides()[size_t(d)]);
  if (auto node = make_node<SliceBackward0>({this})) {
    node->self_sizes = sizes();
    node->dim = d;
    node->start = start;
    node->end = end;
    set_history(out, node);
  }
  return out;
}

Tensor Tensor::unsqueeze(int64_t d) const {
  d = wrap_dim(d, dim() + 1);
  Shape sz = sizes(), st = strides();
  int64_t stride = size_t(d) < sz.size() ? st[size_t(d)] * sz[size_t(d)] : 1;
  sz.insert(sz.begin() + d, 1);
  st.insert(st.begin() + d, stride);
  Tensor out = make_view(*this, sz, st, storage_offset());
  if (auto n = make_node<UnsqueezeBackward0>({this})) {
    n->self_sizes = sizes();
    set_history(out, n);
  }
  return out;
}

Tensor Tensor::detach() const {
  Tensor out = make_view(*this, sizes(), strides(), storage_offset());
  out.impl()->is_view = impl_->is_view;
  return out;
}

}  // namespace vramlab::engine
