// Joining and splitting along a dimension: cat (allocates; its backward is views of
// the gradient), split (views; its backward cats the gradients, zeros for missing
// ones), repeat_interleave (unsqueeze + expand + contiguous clone + flatten, as ATen's
// scalar-repeats path does), plus arange and argmax.
#include "engine/ops/common.h"

namespace vramlab::engine {

namespace {

int64_t wrap(int64_t d, int64_t n) {
  int64_t r = d < 0 ? d + n : d;
  if (r < 0 || r >= n)
    throw std::out_of_range("Dimension out of range (expected to be in range of [" + std::to_string(-n) + ", " +
                            std::to_string(n - 1) + "], but got " + std::to_string(d) + ")");
  return r;
}

struct CatBackward0 : Node {
  std::vector<int64_t> sizes_along;  // each input's size on `dim`
  int64_t dim = 0;
  std::string name() const override { return "CatBackward0"; }
  TensorList apply(TensorList& g) override {
    TensorList r(sizes_along.size());
    if (!g[0].defined()) return r;
    int64_t at = 0;
    for (size_t i = 0; i < sizes_along.size(); ++i) {
      NoGradGuard ng;
      if (should_compute_output(i)) r[i] = g[0].slice(dim, at, at + sizes_along[i]);  // narrow: a view
      at += sizes_along[i];
    }
    return r;
  }
};

struct SplitBackward0 : Node {
  Shape self_sizes;
  DType dtype = DType::Float32;
  int64_t dim = 0, split_size = 0;
  std::string name() const override { return "SplitBackward0"; }
  TensorList apply(TensorList& g) override {
    bool any = false;
    for (auto& t : g) any = any || t.defined();
    if (!any) return undefined_grads(1);
    // split_with_sizes_backward: undefined gradients become zeros, then one cat.
    std::vector<Tensor> all(g.size());
    for (size_t j = 0; j < g.size(); ++j) {
      if (g[j].defined()) {
        all[j] = g[j];
      } else {
        Shape s = self_sizes;
        s[size_t(dim)] = std::min(split_size, self_sizes[size_t(dim)] - int64_t(j) * split_size);
        all[j] = zeros(s, dtype);
      }
    }
    return {cat(all, dim)};
  }
};

}  // namespace

Tensor cat(const std::vector<Tensor>& ts, int64_t dim_in) {
  if (ts.empty()) throw std::invalid_argument("torch.cat(): expected a non-empty list of Tensors");
  const int64_t nd = ts[0].dim();
  int64_t dim = wrap(dim_in, nd);
  Shape out_shape = ts[0].sizes();
  DType dt = ts[0].dtype();
  for (size_t i = 1; i < ts.size(); ++i) {
    if (ts[i].dim() != nd)
      throw std::invalid_argument("Tensors must have same number of dimensions: got " + std::to_string(nd) + " and " +
                                  std::to_string(ts[i].dim()));
    for (int64_t d = 0; d < nd; ++d)
      if (d != dim && ts[i].size(d) != ts[0].size(d))
        throw std::invalid_argument("Sizes of tensors must match except in dimension " + std::to_string(dim) +
                                    ". Expected size " + std::to_string(ts[0].size(d)) + " but got size " +
                                    std::to_string(ts[i].size(d)) + " for tensor number " + std::to_string(i) +
                                    " in the list.");
    out_shape[size_t(dim)] += ts[i].size(dim);
    dt = promote_types(dt, ts[i].dtype());
  }
  std::shared_ptr<CatBackward0> n;
  if (GradMode::is_enabled()) {
    bool any = false;
    for (auto& t : ts) any = any || t.requires_grad();
    if (any) {
      n = new_node<CatBackward0>();
      for (auto& t : ts) n->next_edges().push_back(gradient_edge(t));
      n->dim = dim;
      for (auto& t : ts) n->sizes_along.push_back(t.size(dim));
    }
  }
  Tensor out = make_tensor(out_shape, dt, "cat");
  int64_t at = 0;
  for (auto& t : ts) {
    Tensor part = make_view(out, t.sizes(), out.strides(), out.storage_offset() + at * out.strides()[size_t(dim)]);
    be().unary(UnaryOp::Copy, part, t, 0.0);
    at += t.size(dim);
  }
  return with_history(out, n);
}

std::vector<Tensor> split(const Tensor& t, int64_t split_size, int64_t dim_in) {
  int64_t dim = wrap(dim_in, t.dim());
  if (split_size <= 0) throw std::invalid_argument("split expects split_size be positive");
  const int64_t len = t.size(dim);
  std::shared_ptr<SplitBackward0> n;
  if (any_requires_grad({&t})) {
    n = new_node<SplitBackward0>();
    n->next_edges().push_back(gradient_edge(t));
    n->self_sizes = t.sizes();
    n->dtype = t.dtype();
    n->dim = dim;
    n->split_size = split_size;
  }
  std::vector<Tensor> out;
  for (int64_t at = 0; at < std::max<int64_t>(len, 1); at += split_size) {
    Shape sz = t.sizes();
    sz[size_t(dim)] = std::min(split_size, len - at);
    Tensor v = make_view(t, sz, t.strides(), t.storage_offset() + at * t.strides()[size_t(dim)]);
    if (n) set_history(v, n);
    out.push_back(v);
  }
  return out;
}

Tensor flatten(const Tensor& t, int64_t start, int64_t end) {
  start = wrap(start, t.dim());
  end = wrap(end, t.dim());
  Shape s;
  for (int64_t d = 0; d < start; ++d) s.push_back(t.size(d));
  int64_t m = 1;
  for (int64_t d = start; d <= end; ++d) m *= t.size(d);
  s.push_back(m);
  for (int64_t d = end + 1; d < t.dim(); ++d) s.push_back(t.size(d));
  return t.reshape(s);
}

Tensor repeat_interleave(const Tensor& t, int64_t repeats, int64_t dim_in) {
  int64_t dim = wrap(dim_in, t.dim());
  if (repeats < 0) throw std::invalid_argument("repeats can not be negative");
  Tensor u = t.unsqueeze(dim + 1);
  Shape e = u.sizes();
  e[size_t(dim + 1)] = repeats;
  Tensor x = u.expand(e).clone();  // clone(contiguous) of the expanded view
  return flatten(x, dim, dim + 1);
}

Tensor arange(int64_t start, int64_t end) {
  if (end < start) throw std::invalid_argument("upper bound and larger bound inconsistent with step sign");
  Tensor out = make_tensor({end - start}, DType::Int64, "arange");
  be().arange(out, double(start));
  return out;
}

Tensor argmax(const Tensor& t, bool keepdim) {
  Shape s(t.sizes().begin(), t.sizes().end() - 1);
  if (keepdim) s.push_back(1);
  Tensor out = make_tensor(s, DType::Int64, "argmax");
  be().argmax_last(out, t);
  return out;
}

}  // namespace vramlab::engine
