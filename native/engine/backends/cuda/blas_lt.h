#pragma once
// addmm with a 1-D bias through cuBLASLt's bias epilogue, as ATen runs nn.Linear's
// forward: one kernel instead of a bias copy plus a gemm. Descriptors and the chosen
// algorithm are cached per shape; any cuBLASLt failure turns the path off and the
// caller falls back to the cuBLAS route (bias copy, then C = A B + C).
#include <map>
#include <tuple>

#include "engine/backends/cuda/cublaslt_loader.h"
#include "engine/core/tensor.h"

namespace vramlab::engine::cuda {

class LtBiasGemm {
 public:
  explicit LtBiasGemm(const CublasLtApi& api);  // throws when cublasLtCreate fails
  ~LtBiasGemm();
  LtBiasGemm(const LtBiasGemm&) = delete;
  LtBiasGemm& operator=(const LtBiasGemm&) = delete;

  // out = a @ b + bias (bias: [M, N] view of a 1-D vector, strides (0, 1)). False when
  // the operands do not fit the epilogue path (nothing was enqueued then).
  bool run(const Tensor& out, const Tensor& a, const Tensor& b, const Tensor& bias, bool tf32, void* workspace,
           size_t workspace_size, cudaStream_t stream);
  int64_t runs() const { return runs_; }  // matmuls that took this path
  bool disabled() const { return disabled_; }

 private:
  using Key = std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int, int, int, int, size_t>;
  struct Plan {
    cublasLtMatmulDesc_t desc = nullptr;
    cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
    cublasLtMatmulAlgo_t algo{};
    bool ok = false;
  };
  void destroy(Plan& p);

  const CublasLtApi& api_;
  cublasLtHandle_t handle_ = nullptr;
  std::map<Key, Plan> plans_;
  bool disabled_ = false;
  int64_t runs_ = 0;
};

}  // namespace vramlab::engine::cuda
