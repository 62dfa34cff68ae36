#pragma once
// cuBLAS reached through dlopen at run time: this machine (and users' machines) may
// have no cuBLAS headers or libraries, so the handful of types, enum values and entry
// points the backend needs are declared here from the public cuBLAS API reference.
#include <cuda_runtime_api.h>
#include <library_types.h>

#include <string>

namespace vramlab::engine::cuda {

using cublasHandle_t = struct cublasContext*;
using cublasStatus_t = int;  // CUBLAS_STATUS_SUCCESS = 0
enum cublasOperation_t : int { CUBLAS_OP_N = 0, CUBLAS_OP_T = 1 };
enum cublasMath_t : int { CUBLAS_DEFAULT_MATH = 0, CUBLAS_TF32_TENSOR_OP_MATH = 3 };
enum cublasComputeType_t : int { CUBLAS_COMPUTE_32F = 68, CUBLAS_COMPUTE_32F_FAST_TF32 = 77 };
enum cublasGemmAlgo_t : int { CUBLAS_GEMM_DEFAULT = -1 };
constexpr cublasStatus_t CUBLAS_STATUS_SUCCESS = 0;

struct CublasApi {
  cublasStatus_t (*create)(cublasHandle_t*) = nullptr;
  cublasStatus_t (*destroy)(cublasHandle_t) = nullptr;
  cublasStatus_t (*set_stream)(cublasHandle_t, cudaStream_t) = nullptr;
  cublasStatus_t (*set_workspace)(cublasHandle_t, void*, size_t) = nullptr;
  cublasStatus_t (*set_math_mode)(cublasHandle_t, cublasMath_t) = nullptr;
  cublasStatus_t (*gemm_ex)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const void*,
                            const void*, cudaDataType, int, const void*, cudaDataType, int, const void*, void*,
                            cudaDataType, int, cublasComputeType_t, cublasGemmAlgo_t) = nullptr;
  const char* (*status_string)(cublasStatus_t) = nullptr;  // optional (cuBLAS >= 11.4)
  std::string library;                                     // the soname that loaded
};

// Loads libcublas.so.13, then .so.12, then .so once per process. Null (reason in
// *why) when none loads or an entry point is missing.
const CublasApi* load_cublas(std::string* why);

// Throws std::runtime_error "<what> failed: <cuBLAS status>" unless s is success.
void check_cublas(const CublasApi& api, cublasStatus_t s, const char* what);

}  // namespace vramlab::engine::cuda
