#include "engine/ops/common.h"

namespace vramlab::engine {

Tensor empty(const Shape& sizes, DType dtype) { return make_tensor(sizes, dtype, "empty"); }

Tensor empty_strided(const Shape& sizes, const Shape& strides, DType dtype) {
  if (sizes.size() != strides.size()) throw std::invalid_argument("empty_strided: sizes and strides differ in length");
  // Storage spans the largest reachable element.
  int64_t span = 1;
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] == 0) {
      span = 0;
      break;
    }
    span += (sizes[i] - 1) * strides[i];
  }
  Tensor t = make_tensor({span}, dtype, "empty_strided");
  t.impl()->sizes = sizes;
  t.impl()->strides = strides;
  return t;
}

Tensor zeros(const Shape& sizes, DType dtype) {
  Tensor t = make_tensor(sizes, dtype, "zeros");
  be().fill(t, 0.0);
  return t;
}

Tensor ones(const Shape& sizes, DType dtype) {
  Tensor t = make_tensor(sizes, dtype, "ones");
  be().fill(t, 1.0);
  return t;
}

Tensor full(const Shape& sizes, double value, DType dtype) {
  Tensor t = make_tensor(sizes, dtype, "full");
  be().fill(t, value);
  return t;
}

Tensor randn(const Shape& sizes, DType dtype) {
  Tensor t = make_tensor(sizes, dtype, "randn");
  be().random_normal(t, 0.0, 1.0, current_context().next_seed());
  return t;
}

Tensor rand_uniform(const Shape& sizes, double lo, double hi, DType dtype) {
  Tensor t = make_tensor(sizes, dtype, "rand");
  be().random_uniform(t, lo, hi, current_context().next_seed());
  return t;
}

Tensor randint(const Shape& sizes, int64_t high) {
  if (high <= 0) throw std::invalid_argument("randint: high must be positive");
  Tensor t = make_tensor(sizes, DType::Int64, "randint");
  // Uniform in [0, high): the int64 cast truncates.
  be().random_uniform(t, 0.0, double(high) - 1e-9, current_context().next_seed());
  return t;
}

Tensor empty_like(const Tensor& t) { return make_tensor(t.sizes(), t.dtype(), "empty_like"); }

Tensor zeros_like(const Tensor& t) {
  Tensor r = make_tensor(t.sizes(), t.dtype(), "zeros_like");
  be().fill(r, 0.0);
  return r;
}

Tensor ones_like(const Tensor& t) {
  Tensor r = make_tensor(t.sizes(), t.dtype(), "ones_like");
  be().fill(r, 1.0);
  return r;
}

void check_inplace(const Tensor& t) {
  if (GradMode::is_enabled() && t.requires_grad() && t.is_leaf())
    throw std::runtime_error("a leaf Variable that requires grad is being used in an in-place operation.");
}

Tensor& fill_(Tensor& t, double v) {
  check_inplace(t);
  be().fill(t, v);
  t.bump_version();
  return t;
}

Tensor& zero_(Tensor& t) { return fill_(t, 0.0); }

Tensor& uniform_(Tensor& t, double lo, double hi) {
  check_inplace(t);
  be().random_uniform(t, lo, hi, current_context().next_seed());
  t.bump_version();
  return t;
}

Tensor& normal_(Tensor& t, double mean, double std) {
  check_inplace(t);
  be().random_normal(t, mean, std, current_context().next_seed());
  t.bump_version();
  return t;
}

}  // namespace vramlab::engine
