// torch.bmm / batched torch.matmul with autograd (BmmBackward0: grad.bmm(mat2ᵀ) for self,
// selfᵀ.bmm(grad) for mat2, mat2's first as for mm). cuBLAS's strided-batched GEMM takes an
// operand whose matrices are row- or column-major with a valid leading dimension; ATen
// copies any other to a contiguous temporary first (prepare_batch_matrix_for_cublas).
#include "engine/ops/bmm.h"

#include <stdexcept>

#include "engine/autocast/autocast.h"
#include "engine/ops/common.h"

namespace vramlab::engine {

namespace {

bool cublas_takes(const Tensor& t) {
  const auto& sz = t.sizes();
  const auto& st = t.strides();
  const bool row = st[2] == 1 && (sz[1] == 1 || st[1] >= std::max<int64_t>(1, sz[2]));
  const bool col = st[1] == 1 && (sz[2] == 1 || st[2] >= std::max<int64_t>(1, sz[1]));
  return row || col;
}

Tensor prepare_batch(const Tensor& t) {
  if (cublas_takes(t)) return t;
  NoGradGuard ng;
  return t.clone();
}

struct BmmBackward0 : Node {
  SavedVariable self_, mat2_;
  std::string name() const override { return "BmmBackward0"; }
  TensorList apply(TensorList& g) override {
    if (!g[0].defined()) return undefined_grads(2);
    TensorList r(2);
    if (should_compute_output(1)) r[1] = bmm(self_.unpack(this).transpose(1, 2), g[0]);
    if (should_compute_output(0)) r[0] = bmm(g[0], mat2_.unpack(this).transpose(1, 2));
    return r;
  }
  void release_variables() override {  // the generated node's order: saved inputs by name
    mat2_.reset_data();
    self_.reset_data();
  }
};

}  // namespace

Tensor bmm(const Tensor& a_in, const Tensor& b_in) {
  Tensor b = autocast_lower(b_in), a = autocast_lower(a_in);  // last argument first (autocast.h)
  AutocastExcludeGuard ex;
  if (a.dim() != 3 || b.dim() != 3) throw std::invalid_argument("batch1 and batch2 must be 3D tensors");
  if (a.size(0) != b.size(0) || a.size(2) != b.size(1))
    throw std::invalid_argument("bmm: shapes cannot be multiplied (" + a.shape_string() + " and " + b.shape_string() +
                                ")");
  if (a.dtype() != b.dtype()) throw std::invalid_argument("bmm: expected both operands to have the same dtype");
  auto& ctx = current_context();
  if (ctx.backend().has_data()) throw std::invalid_argument("bmm (eager attention) runs on the simulated device only");
  auto n = make_node<BmmBackward0>({&a, &b});
  if (n) {
    if (n->should_compute_output(1)) n->self_ = SavedVariable(a, false);
    if (n->should_compute_output(0)) n->mat2_ = SavedVariable(b, false);
  }
  Tensor out = make_tensor({a.size(0), a.size(1), b.size(2)}, a.dtype(), "bmm");
  if (ctx.backend().models_cuda()) {
    Tensor pa = prepare_batch(a), pb = prepare_batch(b);
    ctx.ensure_blas_workspace(false);
  }
  return with_history(out, n);
}

Tensor batched_matmul(const Tensor& a_in, const Tensor& b_in) {
  Tensor b = autocast_lower(b_in), a = autocast_lower(a_in);
  AutocastExcludeGuard ex;
  if (a.dim() < 3 || a.dim() != b.dim())
    throw std::invalid_argument("batched_matmul: operands of the same rank >= 3 expected, got " + a.shape_string() +
                                " and " + b.shape_string());
  int64_t batch = 1;
  Shape out_shape;
  for (int64_t d = 0; d < a.dim() - 2; ++d) {
    if (a.size(d) != b.size(d))
      throw std::invalid_argument("batched_matmul: batch dims differ: " + a.shape_string() + " and " +
                                  b.shape_string());
    batch *= a.size(d);
    out_shape.push_back(a.size(d));
  }
  const int64_t n = a.size(-2), m = a.size(-1), p = b.size(-1);
  out_shape.push_back(n);
  out_shape.push_back(p);
  // tensor1.expand(...).reshape(...), then tensor2's: the first operand's copy (if any) first
  Tensor a3 = a.reshape({batch, n, m});
  Tensor b3 = b.reshape({batch, m, p});
  Tensor out = bmm(a3, b3).view(out_shape);
  out.impl()->is_view = false;  // _unsafe_view: the only owner of a fresh product (in-place ops allowed)
  return out;
}

}  // namespace vramlab::engine
