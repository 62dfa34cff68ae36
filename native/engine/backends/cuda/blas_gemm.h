#pragma once
// out = a @ b (+ out when accumulate) through cublasGemmEx, for row- or column-major
// operands of one dtype (f32, f16, bf16) with fp32 accumulation; TF32 tensor cores
// for f32 when asked (CUBLAS_COMPUTE_32F_FAST_TF32).
#include "engine/backends/cuda/cublas_loader.h"
#include "engine/core/tensor.h"

namespace vramlab::engine::cuda {

void gemm_ex(const CublasApi& api, cublasHandle_t h, const Tensor& out, const Tensor& a, const Tensor& b,
             bool accumulate, bool tf32);

}  // namespace vramlab::engine::cuda
