#pragma once
// Launch helpers the tiled attention kernels share (attention_tiled.cu, attention_mma.cu).
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace vramlab::engine::cuda::tile_launch {

// A kernel asking for more than the default 48 KiB of dynamic shared memory must say so.
template <class K>
void set_smem(K kernel, size_t bytes) {
  if (bytes > 48 * 1024) {
    cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(bytes));
    if (e != cudaSuccess) throw std::runtime_error(std::string("attention: shared memory: ") + cudaGetErrorString(e));
  }
}

inline unsigned tiles(int64_t n, int64_t tile) { return unsigned((n + tile - 1) / tile); }

}  // namespace vramlab::engine::cuda::tile_launch
