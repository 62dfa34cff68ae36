#pragma once
// The scratch memory of a CUDA sum/mean as PyTorch allocates it (aten/src/ATen/native/
// cuda/Reduce.cuh): when setReduceConfig splits each output's inputs over several
// blocks (ctas_per_output > 1), gpu_reduce_kernel takes a global staging buffer and
// a semaphore array from the caching allocator for the duration of the kernel. A
// bias gradient summed over a large batch (sum_to in backward) gets such a buffer:
// 16 MiB for [1024, 2048] fp32 rows. Half/bfloat16 reductions too large for 32-bit
// indexing also hold an fp32 accumulation buffer across their sub-kernels.
#include <cstdint>
#include <memory>
#include <vector>

#include "engine/core/tensor.h"

namespace vramlab::engine {

// The GPU facts setReduceConfig reads from cudaDeviceProp.
struct ReduceDevice {
  int sm_count = 132;
  int max_threads_per_sm = 2048;
};

// One kernel launch of gpu_reduce_kernel: bytes of its staging buffer and semaphores.
struct ReduceLaunch {
  int64_t buffer_bytes = 0, semaphore_bytes = 0;
};

struct ReducePlanModel {
  int64_t accumulation_bytes = 0;      // AccumulationBuffer, held across all launches
  std::vector<ReduceLaunch> launches;  // in launch order (one unless split for 32-bit indexing)
};

// `out` has `in`'s rank with size 1 on the reduced dims (keepdim); acc_size is
// sizeof(arg_t) (float for half/bfloat16/float inputs).
ReducePlanModel model_cuda_reduction(const Tensor& out, const Tensor& in, int acc_size, const ReduceDevice& dev);

// RAII: allocates the scratch of each launch around the kernel the way PyTorch does,
// so peaks include it. No-op on backends that do not model a CUDA device.
class ReduceScratchScope {
 public:
  ReduceScratchScope(const Tensor& out, const Tensor& in);
  ~ReduceScratchScope();
  ReduceScratchScope(const ReduceScratchScope&) = delete;
  ReduceScratchScope& operator=(const ReduceScratchScope&) = delete;

 private:
  std::shared_ptr<Storage> accumulation_;
};

}  // namespace vramlab::engine
