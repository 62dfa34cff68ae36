#pragma once
// cuBLASLt through dlopen, for addmm's bias epilogue (the path ATen takes for
// nn.Linear). As with cuBLAS, the few declarations needed are written out here from
// the public cublasLt.h reference; optional: without it gemm falls back to cuBLAS.
#include <cuda_runtime_api.h>
#include <library_types.h>

#include <cstdint>
#include <string>

#include "engine/backends/cuda/cublas_loader.h"

namespace vramlab::engine::cuda {

using cublasLtHandle_t = struct cublasLtContext*;
using cublasLtMatmulDesc_t = struct cublasLtMatmulDescOpaque*;
using cublasLtMatrixLayout_t = struct cublasLtMatrixLayoutOpaque*;
using cublasLtMatmulPreference_t = struct cublasLtMatmulPreferenceOpaque*;
struct cublasLtMatmulAlgo_t {
  uint64_t data[8];
};
struct cublasLtMatmulHeuristicResult_t {
  cublasLtMatmulAlgo_t algo;
  size_t workspaceSize;
  cublasStatus_t state;
  float wavesCount;
  int reserved[4];
};
enum cublasLtMatmulDescAttributes_t : int {
  CUBLASLT_MATMUL_DESC_TRANSA = 3,
  CUBLASLT_MATMUL_DESC_TRANSB = 4,
  CUBLASLT_MATMUL_DESC_EPILOGUE = 7,
  CUBLASLT_MATMUL_DESC_BIAS_POINTER = 8,
};
enum cublasLtEpilogue_t : uint32_t { CUBLASLT_EPILOGUE_DEFAULT = 1, CUBLASLT_EPILOGUE_BIAS = 4 };
enum cublasLtMatmulPreferenceAttributes_t : int { CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES = 1 };

struct CublasLtApi {
  cublasStatus_t (*create)(cublasLtHandle_t*) = nullptr;
  cublasStatus_t (*destroy)(cublasLtHandle_t) = nullptr;
  cublasStatus_t (*desc_create)(cublasLtMatmulDesc_t*, cublasComputeType_t, cudaDataType) = nullptr;
  cublasStatus_t (*desc_destroy)(cublasLtMatmulDesc_t) = nullptr;
  cublasStatus_t (*desc_set)(cublasLtMatmulDesc_t, cublasLtMatmulDescAttributes_t, const void*, size_t) = nullptr;
  cublasStatus_t (*layout_create)(cublasLtMatrixLayout_t*, cudaDataType, uint64_t, uint64_t, int64_t) = nullptr;
  cublasStatus_t (*layout_destroy)(cublasLtMatrixLayout_t) = nullptr;
  cublasStatus_t (*pref_create)(cublasLtMatmulPreference_t*) = nullptr;
  cublasStatus_t (*pref_destroy)(cublasLtMatmulPreference_t) = nullptr;
  cublasStatus_t (*pref_set)(cublasLtMatmulPreference_t, cublasLtMatmulPreferenceAttributes_t, const void*,
                             size_t) = nullptr;
  cublasStatus_t (*heuristic)(cublasLtHandle_t, cublasLtMatmulDesc_t, cublasLtMatrixLayout_t, cublasLtMatrixLayout_t,
                              cublasLtMatrixLayout_t, cublasLtMatrixLayout_t, cublasLtMatmulPreference_t, int,
                              cublasLtMatmulHeuristicResult_t*, int*) = nullptr;
  cublasStatus_t (*matmul)(cublasLtHandle_t, cublasLtMatmulDesc_t, const void*, const void*, cublasLtMatrixLayout_t,
                           const void*, cublasLtMatrixLayout_t, const void*, const void*, cublasLtMatrixLayout_t, void*,
                           cublasLtMatrixLayout_t, const cublasLtMatmulAlgo_t*, void*, size_t, cudaStream_t) = nullptr;
  std::string library;
};

// libcublasLt.so.13, .so.12, .so; null (reason in *why) when none loads.
const CublasLtApi* load_cublaslt(std::string* why);

}  // namespace vramlab::engine::cuda
