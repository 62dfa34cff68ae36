// Reductions. sum's backward is a view (expand) of the incoming gradient; mean's
// divides that expanded view, which allocates a full-size gradient.
#include "engine/autocast/autocast.h"
#include "engine/core/driver_use.h"
#include "engine/ops/common.h"
#include "engine/ops/reduce_scratch.h"

namespace vramlab::engine {

namespace {

struct SumBackward0 : Node {
  Shape self_sizes;
  std::string name() const override { return "SumBackward0"; }
  TensorList apply(TensorList& g) override {
    if (!g[0].defined()) return undefined_grads(1);
    return {g[0].expand(self_sizes)};
  }
};

struct SumBackward1 : Node {
  Shape self_sizes;
  std::vector<int64_t> dims;  // sorted, wrapped
  bool keepdim = false;
  std::string name() const override { return "SumBackward1"; }
  TensorList apply(TensorList& g) override {
    if (!g[0].defined()) return undefined_grads(1);
    Tensor t = g[0];
    if (!keepdim)
      for (int64_t d : dims) t = t.unsqueeze(d);
    return {t.expand(self_sizes)};
  }
};

struct MeanBackward0 : Node {
  Shape self_sizes;
  int64_t numel = 1;
  std::string name() const override { return "MeanBackward0"; }
  TensorList apply(TensorList& g) override {
    if (!g[0].defined()) return undefined_grads(1);
    return {div(g[0].expand(self_sizes), double(numel))};
  }
};

struct MeanBackward1 : Node {
  Shape self_sizes;
  std::vector<int64_t> dims;
  bool keepdim = false;
  int64_t count = 1;
  std::string name() const override { return "MeanBackward1"; }
  TensorList apply(TensorList& g) override {
    if (!g[0].defined()) return undefined_grads(1);
    Tensor t = g[0];
    if (!keepdim)
      for (int64_t d : dims) t = t.unsqueeze(d);
    return {div(t.expand(self_sizes), double(count))};
  }
};

std::vector<int64_t> wrap_dims(const std::vector<int64_t>& dims, int64_t n) {
  std::vector<int64_t> r;
  for (int64_t d : dims) {
    int64_t w = d < 0 ? d + n : d;
    if (w < 0 || w >= n)
      throw std::out_of_range("Dimension out of range (expected to be in range of [" + std::to_string(-n) + ", " +
                              std::to_string(n - 1) + "], but got " + std::to_string(d) + ")");
    if (std::find(r.begin(), r.end(), w) != r.end())
      throw std::invalid_argument("dim " + std::to_string(w) + " appears multiple times in the list of dims");
    r.push_back(w);
  }
  std::sort(r.begin(), r.end());
  return r;
}

DType sum_dtype(DType t) { return is_floating(t) ? t : DType::Int64; }

// Reduce `a` over `dims` into a keepdim-shaped tensor.
Tensor reduce_keepdim(const Tensor& a, const std::vector<int64_t>& dims, DType out_dtype, const char* op) {
  Shape kshape = a.sizes();
  for (int64_t d : dims) kshape[size_t(d)] = 1;
  Tensor out = make_tensor(kshape, out_dtype, op);
  ReduceScratchScope scratch(out, a);  // Reduce.cuh's staging buffer, if the launch splits
  driver_use(DriverUse::FirstReduction);
  be().sum_reduce(out, a);
  return out;
}

// Drops the reduced dims of a keepdim result (a view, no copy).
Tensor squeeze_dims(const Tensor& t, const std::vector<int64_t>& dims) {
  Shape sz, st;
  for (size_t i = 0; i < t.sizes().size(); ++i) {
    if (std::find(dims.begin(), dims.end(), int64_t(i)) != dims.end()) continue;
    sz.push_back(t.sizes()[i]);
    st.push_back(t.strides()[i]);
  }
  Tensor r = make_view(t, sz, st, t.storage_offset());
  r.impl()->is_view = false;  // the only owner of a fresh reduction result
  return r;
}

Tensor sum_impl(const Tensor& a, DType out_dtype) {
  auto n = make_node<SumBackward0>({&a});
  if (n) n->self_sizes = a.sizes();
  std::vector<int64_t> all(a.sizes().size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = int64_t(i);
  Tensor out = squeeze_dims(reduce_keepdim(a, all, out_dtype, "sum"), all);
  return with_history(out, n);
}

}  // namespace

Tensor sum(const Tensor& a) {
  // Autocast lists sum as fp32_set_opt_dtype: low-precision input, float32 result.
  if (autocast_active() && is_floating(a.dtype()) && a.dtype() != DType::Float64) return sum_impl(a, DType::Float32);
  return sum_impl(a, sum_dtype(a.dtype()));
}

Tensor sum(const Tensor& a, DType dtype) { return sum_impl(a, dtype); }

Tensor sum(const Tensor& a, const std::vector<int64_t>& dims_in, bool keepdim) {
  auto dims = wrap_dims(dims_in, a.dim());
  auto n = make_node<SumBackward1>({&a});
  if (n) {
    n->self_sizes = a.sizes();
    n->dims = dims;
    n->keepdim = keepdim;
  }
  DType dt = sum_dtype(a.dtype());
  if (autocast_active() && is_floating(a.dtype()) && a.dtype() != DType::Float64) dt = DType::Float32;
  Tensor out = reduce_keepdim(a, dims, dt, "sum");
  if (!keepdim) out = squeeze_dims(out, dims);
  return with_history(out, n);
}

Tensor mean(const Tensor& a) {
  if (!is_floating(a.dtype()))
    throw std::invalid_argument(
        "mean(): could not infer output dtype. Input dtype must be either a floating point or complex dtype. Got: "
        "Long");
  auto n = make_node<MeanBackward0>({&a});
  if (n) {
    n->self_sizes = a.sizes();
    n->numel = a.numel();
  }
  std::vector<int64_t> all(a.sizes().size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = int64_t(i);
  Tensor s = reduce_keepdim(a, all, a.dtype(), "mean");
  be().unary(UnaryOp::DivScalar, s, s, double(std::max<int64_t>(a.numel(), 1)));
  Tensor out = squeeze_dims(s, all);
  return with_history(out, n);
}

Tensor mean(const Tensor& a, const std::vector<int64_t>& dims_in, bool keepdim) {
  auto dims = wrap_dims(dims_in, a.dim());
  int64_t count = 1;
  for (int64_t d : dims) count *= a.sizes()[size_t(d)];
  auto n = make_node<MeanBackward1>({&a});
  if (n) {
    n->self_sizes = a.sizes();
    n->dims = dims;
    n->keepdim = keepdim;
    n->count = count;
  }
  Tensor s = reduce_keepdim(a, dims, a.dtype(), "mean");
  be().unary(UnaryOp::DivScalar, s, s, double(std::max<int64_t>(count, 1)));
  if (!keepdim) s = squeeze_dims(s, dims);
  return with_history(s, n);
}

Tensor sum_to(const Tensor& a, const Shape& shape) {
  if (a.sizes() == shape) return a;
  size_t lead = a.sizes().size() - shape.size();
  std::vector<int64_t> dims;
  for (size_t i = 0; i < lead; ++i) dims.push_back(int64_t(i));
  for (size_t i = lead; i < a.sizes().size(); ++i)
    if (shape[i - lead] == 1 && a.sizes()[i] != 1) dims.push_back(int64_t(i));
  Tensor r = dims.empty() ? a : sum(a, dims, true);
  if (lead > 0) r = r.view(shape);
  return r;
}

}  // namespace vramlab::engine
