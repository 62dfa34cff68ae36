#ifdef VRAMLAB_HAVE_CUDA
#include "engine/backends/cuda/blas_lt.h"

#include <algorithm>
#include <stdexcept>

namespace vramlab::engine::cuda {

namespace {

constexpr size_t kLtWorkspaceLimit = size_t(1) << 20;  // PyTorch's default cuBLASLt workspace

bool aligned(const void* p) { return reinterpret_cast<uintptr_t>(p) % 256 == 0; }  // Lt's default assumption

cudaDataType lt_type(DType t) {
  return t == DType::Float16 ? CUDA_R_16F : t == DType::BFloat16 ? CUDA_R_16BF : CUDA_R_32F;
}

// Row-major view: (ok, leading dimension).
std::pair<bool, int64_t> row_major(const Tensor& t) {
  const int64_t r = t.size(0), c = t.size(1), s0 = t.strides()[0], s1 = t.strides()[1];
  if (!(s1 == 1 || c == 1)) return {false, 0};
  int64_t ld = r == 1 ? std::max<int64_t>(c, 1) : s0;
  return {ld >= std::max<int64_t>(c, 1), ld};
}
std::pair<bool, int64_t> col_major(const Tensor& t) {
  const int64_t r = t.size(0), c = t.size(1), s0 = t.strides()[0], s1 = t.strides()[1];
  if (!(s0 == 1 || r == 1)) return {false, 0};
  int64_t ld = c == 1 ? std::max<int64_t>(r, 1) : s1;
  return {ld >= std::max<int64_t>(r, 1), ld};
}

}  // namespace

LtBiasGemm::LtBiasGemm(const CublasLtApi& api) : api_(api) {
  if (api_.create(&handle_) != CUBLAS_STATUS_SUCCESS) throw std::runtime_error("cublasLtCreate failed");
}

LtBiasGemm::~LtBiasGemm() {
  for (auto& [k, p] : plans_) destroy(p);
  if (handle_) (void)api_.destroy(handle_);
}

void LtBiasGemm::destroy(Plan& p) {
  if (p.desc) (void)api_.desc_destroy(p.desc);
  if (p.a) (void)api_.layout_destroy(p.a);
  if (p.b) (void)api_.layout_destroy(p.b);
  if (p.c) (void)api_.layout_destroy(p.c);
  p = Plan{};
}

bool LtBiasGemm::run(const Tensor& out, const Tensor& a, const Tensor& b, const Tensor& bias, bool tf32,
                     void* workspace, size_t workspace_size, cudaStream_t stream) {
  if (disabled_) return false;
  const DType dt = out.dtype();
  if (dt != DType::Float32 && dt != DType::Float16 && dt != DType::BFloat16) return false;
  if (a.dtype() != dt || b.dtype() != dt || bias.dtype() != dt) return false;
  const int64_t M = a.size(0), K = a.size(1), N = b.size(1);
  if (M <= 1 || K <= 1 || N <= 1) return false;  // isInputCompliesAddmmCudaLt's size rule
  if (bias.sizes() != Shape{M, N} || bias.strides()[0] != 0 || bias.strides()[1] != 1) return false;
  auto [out_ok, ldo] = row_major(out);
  if (!out_ok) return false;
  auto [a_row, lda_r] = row_major(a);
  auto [a_col, lda_c] = col_major(a);
  auto [b_row, ldb_r] = row_major(b);
  auto [b_col, ldb_c] = col_major(b);
  if (!(a_row || a_col) || !(b_row || b_col)) return false;
  if (!aligned(out.data_ptr()) || !aligned(a.data_ptr()) || !aligned(b.data_ptr()) || !aligned(bias.data_ptr()))
    return false;
  // Row-major out is column-major out^T = b^T a^T: cuBLASLt's A is b, its B is a.
  const int op_a = b_row ? 0 : 1, op_b = a_row ? 0 : 1;
  const int64_t ld_a = b_row ? ldb_r : ldb_c, ld_b = a_row ? lda_r : lda_c;
  const size_t ws = workspace ? std::min(workspace_size, kLtWorkspaceLimit) : 0;
  Key key{M, N, K, ld_a, ld_b, ldo, op_a, op_b, int(dt), int(tf32), ws};
  auto it = plans_.find(key);
  if (it == plans_.end()) {
    Plan p;
    const cudaDataType t = lt_type(dt);
    const cublasComputeType_t ct = dt == DType::Float32 && tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
    const int32_t ta = op_a, tb = op_b;
    const uint32_t epi = CUBLASLT_EPILOGUE_BIAS;
    const uint64_t max_ws = ws;
    cublasLtMatmulPreference_t pref = nullptr;
    bool ok =
        api_.desc_create(&p.desc, ct, CUDA_R_32F) == CUBLAS_STATUS_SUCCESS &&
        api_.desc_set(p.desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta) == CUBLAS_STATUS_SUCCESS &&
        api_.desc_set(p.desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb) == CUBLAS_STATUS_SUCCESS &&
        api_.desc_set(p.desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi) == CUBLAS_STATUS_SUCCESS &&
        api_.layout_create(&p.a, t, uint64_t(op_a ? K : N), uint64_t(op_a ? N : K), ld_a) == CUBLAS_STATUS_SUCCESS &&
        api_.layout_create(&p.b, t, uint64_t(op_b ? M : K), uint64_t(op_b ? K : M), ld_b) == CUBLAS_STATUS_SUCCESS &&
        api_.layout_create(&p.c, t, uint64_t(N), uint64_t(M), ldo) == CUBLAS_STATUS_SUCCESS &&
        api_.pref_create(&pref) == CUBLAS_STATUS_SUCCESS &&
        api_.pref_set(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &max_ws, sizeof max_ws) == CUBLAS_STATUS_SUCCESS;
    if (ok) {
      // The bias pointer takes part in the alignment checks of the heuristic.
      const void* bp = bias.data_ptr();
      cublasLtMatmulHeuristicResult_t h{};
      int found = 0;
      ok = api_.desc_set(p.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bp, sizeof bp) == CUBLAS_STATUS_SUCCESS &&
           api_.heuristic(handle_, p.desc, p.a, p.b, p.c, p.c, pref, 1, &h, &found) == CUBLAS_STATUS_SUCCESS &&
           found > 0 && h.workspaceSize <= ws;
      if (ok) p.algo = h.algo;
    }
    if (pref) (void)api_.pref_destroy(pref);
    p.ok = ok;
    if (!ok) destroy(p);
    it = plans_.emplace(key, p).first;
  }
  if (!it->second.ok) return false;
  Plan& p = it->second;
  const void* bp = bias.data_ptr();
  const float alpha = 1.f, beta = 0.f;
  if (api_.desc_set(p.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bp, sizeof bp) != CUBLAS_STATUS_SUCCESS ||
      api_.matmul(handle_, p.desc, &alpha, b.data_ptr(), p.a, a.data_ptr(), p.b, &beta, out.data_ptr(), p.c,
                  out.data_ptr(), p.c, &p.algo, ws ? workspace : nullptr, ws, stream) != CUBLAS_STATUS_SUCCESS) {
    disabled_ = true;  // the cuBLAS route is always there
    return false;
  }
  ++runs_;
  return true;
}

}  // namespace vramlab::engine::cuda
#endif  // VRAMLAB_HAVE_CUDA
