#pragma once
// CUDA runtime errors become std::runtime_error carrying the CUDA error string.
#include <cuda_runtime_api.h>

#include <stdexcept>
#include <string>

namespace vramlab::engine::cuda {

inline void check_cuda(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    (void)cudaGetLastError();  // clear a non-sticky error so later calls can run
    throw std::runtime_error(std::string(what) + " failed: " + cudaGetErrorString(e));
  }
}

}  // namespace vramlab::engine::cuda
