#ifdef VRAMLAB_HAVE_CUDA
#include "engine/backends/cuda/blas_gemm.h"

#include <climits>
#include <stdexcept>

namespace vramlab::engine::cuda {

namespace {

// A 2-D operand as cuBLAS sees it: which stride is 1 and the leading dimension.
struct Layout {
  bool ok = false;
  bool row_major = false;
  int64_t ld = 0;
};

Layout layout_of(const Tensor& t, bool prefer_row) {
  const int64_t r = t.size(0), c = t.size(1);
  const int64_t s0 = t.strides()[0], s1 = t.strides()[1];
  Layout row, col;
  if (s1 == 1 || c == 1) {
    row.ld = r == 1 ? std::max<int64_t>(c, 1) : s0;
    row.ok = row.ld >= std::max<int64_t>(c, 1);
    row.row_major = true;
  }
  if (s0 == 1 || r == 1) {
    col.ld = c == 1 ? std::max<int64_t>(r, 1) : s1;
    col.ok = col.ld >= std::max<int64_t>(r, 1);
    col.row_major = false;
  }
  if (prefer_row) return row.ok ? row : col;
  return col.ok ? col : row;
}

cudaDataType cuda_type(DType t) {
  switch (t) {
    case DType::Float32:
      return CUDA_R_32F;
    case DType::Float16:
      return CUDA_R_16F;
    case DType::BFloat16:
      return CUDA_R_16BF;
    default:
      throw std::invalid_argument(std::string("gemm: dtype ") + dtype_name(t) +
                                  " is not supported by the cuda backend (float32, float16, bfloat16)");
  }
}

int as_int(int64_t v, const char* what) {
  if (v > INT_MAX) throw std::invalid_argument(std::string("gemm: ") + what + " exceeds the 32-bit cuBLAS range");
  return int(v);
}

}  // namespace

void gemm_ex(const CublasApi& api, cublasHandle_t h, const Tensor& out, const Tensor& a, const Tensor& b,
             bool accumulate, bool tf32) {
  if (a.dim() != 2 || b.dim() != 2 || out.dim() != 2) throw std::invalid_argument("gemm: operands must be 2-D");
  const int64_t M = a.size(0), K = a.size(1), N = b.size(1);
  if (b.size(0) != K || out.size(0) != M || out.size(1) != N)
    throw std::invalid_argument("gemm: shapes " + a.shape_string() + " @ " + b.shape_string() + " -> " +
                                out.shape_string() + " do not agree");
  if (a.dtype() != b.dtype() || a.dtype() != out.dtype())
    throw std::invalid_argument(std::string("gemm: operands must share one dtype, got ") + dtype_name(a.dtype()) +
                                ", " + dtype_name(b.dtype()) + " -> " + dtype_name(out.dtype()));
  const cudaDataType dt = cuda_type(a.dtype());
  if (M == 0 || N == 0 || K == 0) return;  // the caller handled the K == 0 fill
  Layout lo = layout_of(out, true), la = layout_of(a, true), lb = layout_of(b, true);
  if (!lo.ok)
    throw std::invalid_argument("gemm: the output must be row- or column-major, got strides of " + out.shape_string());
  if (!la.ok || !lb.ok)
    throw std::invalid_argument("gemm: inputs must be row- or column-major (the op layer copies others first)");
  const float alpha = 1.f, beta = accumulate ? 1.f : 0.f;
  const cublasComputeType_t ct =
      a.dtype() == DType::Float32 && tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  cublasStatus_t s;
  if (lo.row_major) {
    // Row-major out is column-major out^T (N x M) = b^T a^T.
    s = api.gemm_ex(h, lb.row_major ? CUBLAS_OP_N : CUBLAS_OP_T, la.row_major ? CUBLAS_OP_N : CUBLAS_OP_T,
                    as_int(N, "n"), as_int(M, "m"), as_int(K, "k"), &alpha, b.data_ptr(), dt, as_int(lb.ld, "ldb"),
                    a.data_ptr(), dt, as_int(la.ld, "lda"), &beta, out.data_ptr(), dt, as_int(lo.ld, "ldc"), ct,
                    CUBLAS_GEMM_DEFAULT);
  } else {
    s = api.gemm_ex(h, la.row_major ? CUBLAS_OP_T : CUBLAS_OP_N, lb.row_major ? CUBLAS_OP_T : CUBLAS_OP_N,
                    as_int(M, "m"), as_int(N, "n"), as_int(K, "k"), &alpha, a.data_ptr(), dt, as_int(la.ld, "lda"),
                    b.data_ptr(), dt, as_int(lb.ld, "ldb"), &beta, out.data_ptr(), dt, as_int(lo.ld, "ldc"), ct,
                    CUBLAS_GEMM_DEFAULT);
  }
  check_cublas(api, s, "cublasGemmEx");
}

}  // namespace vramlab::engine::cuda
#endif  // VRAMLAB_HAVE_CUDA
