// Matrix products. Forward matmuls take the calling thread's cuBLAS workspace
// (addmm with a 1-D bias goes through cuBLASLt and its 1 MiB workspace too);
// backward formulas follow mm_mat1_backward / mm_mat2_backward.
#include "engine/autocast/autocast.h"
#include "engine/core/driver_use.h"
#include "engine/ops/common.h"

namespace vramlab::engine {

namespace {

bool is_column_major(const Shape& sizes, const Shape& strides) { return strides[0] == 1 && strides[1] == sizes[0]; }

Tensor mm_mat1_backward(const Tensor& grad, const Tensor& mat2, const Shape& sizes, const Shape& strides) {
  if (is_column_major(sizes, strides)) return mm(mat2, grad.t()).t();
  return mm(grad, mat2.t());
}

Tensor mm_mat2_backward(const Tensor& grad, const Tensor& mat1, const Shape& sizes, const Shape& strides) {
  if (is_column_major(sizes, strides)) return mm(grad.t(), mat1).t();
  return mm(mat1.t(), grad);
}

struct MmBackward0 : Node {
  SavedVariable self_, mat2_;
  Shape self_sizes, self_strides, mat2_sizes, mat2_strides;
  std::string name() const override { return "MmBackward0"; }
  TensorList apply(TensorList& g) override {
    if (!g[0].defined()) return undefined_grads(2);
    TensorList r(2);  // by argument name: mat2's gradient before self's
    if (should_compute_output(1)) r[1] = mm_mat2_backward(g[0], self_.unpack(this), mat2_sizes, mat2_strides);
    if (should_compute_output(0)) r[0] = mm_mat1_backward(g[0], mat2_.unpack(this), self_sizes, self_strides);
    return r;
  }
  void release_variables() override {  // the generated node's order: saved inputs by name
    mat2_.reset_data();
    self_.reset_data();
  }
};

struct AddmmBackward0 : Node {
  SavedVariable mat1_, mat2_;
  Shape mat1_sizes, mat1_strides, mat2_sizes, mat2_strides;
  std::string name() const override { return "AddmmBackward0"; }
  TensorList apply(TensorList& g) override {
    if (!g[0].defined()) return undefined_grads(3);
    TensorList r(3);  // by argument name: mat1, mat2, self
    if (should_compute_output(1)) r[1] = mm_mat1_backward(g[0], mat2_.unpack(this), mat1_sizes, mat1_strides);
    if (should_compute_output(2)) r[2] = mm_mat2_backward(g[0], mat1_.unpack(this), mat2_sizes, mat2_strides);
    if (should_compute_output(0)) r[0] = g[0];  // maybe_multiply(grad, beta=1)
    return r;
  }
  void release_variables() override {
    mat1_.reset_data();
    mat2_.reset_data();
  }
};

std::string dims(const Tensor& t) { return std::to_string(t.size(0)) + "x" + std::to_string(t.size(1)); }

const char* c10_type(DType t) {
  switch (t) {
    case DType::Float32:
      return "float";
    case DType::Float16:
      return "c10::Half";
    case DType::BFloat16:
      return "c10::BFloat16";
    case DType::Float64:
      return "double";
    case DType::Int64:
      return "long int";
  }
  return "?";
}

void check_mm(const Tensor& a, const Tensor& b) {
  if (a.dim() != 2) throw std::invalid_argument("self must be a matrix");
  if (b.dim() != 2) throw std::invalid_argument("mat2 must be a matrix");
  if (a.size(1) != b.size(0))
    throw std::invalid_argument("mat1 and mat2 shapes cannot be multiplied (" + dims(a) + " and " + dims(b) + ")");
  if (a.dtype() != b.dtype())
    throw std::invalid_argument(std::string("expected mat1 and mat2 to have the same dtype, but got: ") +
                                c10_type(a.dtype()) + " != " + c10_type(b.dtype()));
}

// cuBLAS takes a matrix as is when one stride is 1 and the other a valid leading
// dimension; otherwise ATen copies it to a contiguous temporary first.
Tensor prepare_for_blas(const Tensor& t) {
  const auto& sz = t.sizes();
  const auto& st = t.strides();
  bool row = st[1] == 1 && (sz[0] == 1 || st[0] >= std::max<int64_t>(1, sz[1]));
  bool col = st[0] == 1 && (sz[1] == 1 || st[1] >= std::max<int64_t>(1, sz[0]));
  if (row || col) return t;
  NoGradGuard ng;
  return t.clone();
}

// ATen's order: the output exists first, then cublasCommonArgs copies operands cuBLAS
// can't take as they are, then the handle's workspace is created (first use per thread).
void run_gemm(const Tensor& out, const Tensor& a, const Tensor& b, const Tensor* bias, bool lt) {
  auto& ctx = current_context();
  if (ctx.backend().models_cuda()) {
    Tensor pa = prepare_for_blas(a), pb = prepare_for_blas(b);
    ctx.ensure_blas_workspace(lt);
    if (!lt && out.dtype() == DType::Float16) driver_use(DriverUse::CublasHalfGemm);  // loaded at launch
    ctx.backend().gemm(out, pa, pb, bias, ctx.allow_tf32);
  } else {
    ctx.backend().gemm(out, a, b, bias, ctx.allow_tf32);
  }
}

bool uses_cublaslt(const Tensor& bias, const Tensor& a, const Tensor& b) {
  // isInputCompliesAddmmCudaLt (aten/src/ATen/native/cuda/Blas.cpp).
  DType t = a.dtype();
  bool dtype_ok = t == DType::Float32 || t == DType::Float16 || t == DType::BFloat16 || t == DType::Float64;
  return bias.dim() == 1 && bias.is_contiguous() && bias.size(0) == b.size(1) && dtype_ok && a.size(0) > 1 &&
         a.size(1) > 1 && b.size(0) > 1 && b.size(1) > 1;
}

}  // namespace

Tensor mm(const Tensor& a_in, const Tensor& b_in) {
  Tensor b = autocast_lower(b_in), a = autocast_lower(a_in);  // last argument first: see autocast.h
  AutocastExcludeGuard ex;
  check_mm(a, b);
  auto n = make_node<MmBackward0>({&a, &b});
  if (n) {
    n->self_sizes = a.sizes();
    n->self_strides = a.strides();
    n->mat2_sizes = b.sizes();
    n->mat2_strides = b.strides();
    if (n->should_compute_output(0)) n->mat2_ = SavedVariable(b, false);
    if (n->should_compute_output(1)) n->self_ = SavedVariable(a, false);
  }
  Tensor out = make_tensor({a.size(0), b.size(1)}, a.dtype(), "mm");
  run_gemm(out, a, b, nullptr, false);
  return with_history(out, n);
}

Tensor addmm(const Tensor& bias_in, const Tensor& a_in, const Tensor& b_in) {
  Tensor b = autocast_lower(b_in), a = autocast_lower(a_in), bias = autocast_lower(bias_in);
  AutocastExcludeGuard ex;
  check_mm(a, b);
  Shape out_shape{a.size(0), b.size(1)};
  broadcast_shapes(bias.sizes(), out_shape);
  if (bias.dtype() != a.dtype())
    throw std::invalid_argument(std::string("self and mat2 must have the same dtype, but got ") +
                                c10_type(bias.dtype()) + " and " + c10_type(a.dtype()));
  auto n = make_node<AddmmBackward0>({&bias, &a, &b});
  if (n) {
    n->mat1_sizes = a.sizes();
    n->mat1_strides = a.strides();
    n->mat2_sizes = b.sizes();
    n->mat2_strides = b.strides();
    if (n->should_compute_output(2)) n->mat1_ = SavedVariable(a, false);
    if (n->should_compute_output(1)) n->mat2_ = SavedVariable(b, false);
  }
  Tensor out = make_tensor(out_shape, a.dtype(), "addmm");
  Tensor eb = expand_to(bias, out_shape);
  run_gemm(out, a, b, &eb, uses_cublaslt(bias, a, b));
  return with_history(out, n);
}

Tensor matmul(const Tensor& a_in, const Tensor& b_in) {
  Tensor b = autocast_lower(b_in), a = autocast_lower(a_in);
  AutocastExcludeGuard ex;
  if (a.dim() == 2 && b.dim() == 2) return mm(a, b);
  if (a.dim() >= 3 && b.dim() == 2) {
    // Fold the batch dims into rows (at::matmul's folding path).
    Shape out_shape(a.sizes().begin(), a.sizes().end() - 1);
    out_shape.push_back(b.size(1));
    Tensor folded = a.reshape({-1, a.size(-1)});
    return mm(folded, b).view(out_shape);
  }
  if (a.dim() == 1 && b.dim() == 2) return mm(a.unsqueeze(0), b).reshape({b.size(1)});
  if (a.dim() == 2 && b.dim() == 1) return mm(a, b.unsqueeze(1)).reshape({a.size(0)});
  throw std::invalid_argument("matmul: unsupported operand ranks " + std::to_string(a.dim()) + "D and " +
                              std::to_string(b.dim()) + "D");
}

Tensor linear(const Tensor& x_in, const Tensor& w_in, const Tensor& b_in) {
  // linear(input, weight, bias): bias is cast first, then weight, then input.
  Tensor bias = autocast_lower(b_in), w = autocast_lower(w_in), x = autocast_lower(x_in);
  AutocastExcludeGuard ex;
  if (w.dim() != 2) throw std::invalid_argument("linear: weight must be 2-D");
  if (x.dim() == 0) throw std::invalid_argument("linear: input must have at least one dimension");
  if (x.size(-1) != w.size(1)) {
    Shape flat{shape_numel(x.sizes()) / std::max<int64_t>(x.size(-1), 1), x.size(-1)};
    if (x.dim() == 2) flat = x.sizes();
    throw std::invalid_argument("mat1 and mat2 shapes cannot be multiplied (" + std::to_string(flat[0]) + "x" +
                                std::to_string(flat[1]) + " and " + std::to_string(w.size(1)) + "x" +
                                std::to_string(w.size(0)) + ")");
  }
  if (x.dim() == 2) return bias.defined() ? addmm(bias, x, w.t()) : mm(x, w.t());
  // _flatten_nd_linear: rows of all leading dims, then the output viewed back.
  Shape out_shape(x.sizes().begin(), x.sizes().end() - 1);
  out_shape.push_back(w.size(0));
  Tensor flat = x.reshape({-1, x.size(-1)});
  Tensor y = bias.defined() ? addmm(bias, flat, w.t()) : mm(flat, w.t());
  return y.view(out_shape);
}

}  // namespace vramlab::engine
