#include "engine/backends/scratch_memory.h"

#ifdef VRAMLAB_HAVE_CUDA
#include <cuda_runtime_api.h>

#include <algorithm>

#include "engine/backends/cuda/cuda_backend.h"
#include "engine/backends/cuda/cuda_check.h"
#endif

namespace vramlab::engine {

#ifdef VRAMLAB_HAVE_CUDA
namespace {

class CudaScratchMemory : public MemoryBackend {
 public:
  explicit CudaScratchMemory(int ordinal) : ordinal_(ordinal) {}
  MemBlock allocate(size_t bytes, TagId) override {
    cuda::check_cuda(cudaSetDevice(ordinal_), "cudaSetDevice");
    MemBlock b;
    b.requested = bytes;
    b.size = round_block_size(bytes);
    void* p = nullptr;
    cuda::check_cuda(cudaMalloc(&p, b.size), "cudaMalloc (scratch)");
    b.ptr = reinterpret_cast<uintptr_t>(p);
    allocated_ += int64_t(b.size);
    peak_ = std::max(peak_, allocated_);
    return b;
  }
  void release(const MemBlock& b) override {
    if (!b.ptr) return;
    cudaSetDevice(ordinal_);
    cudaFree(reinterpret_cast<void*>(b.ptr));  // waits for the kernels that wrote it
    allocated_ -= int64_t(b.size);
  }
  int64_t memory_allocated() const override { return allocated_; }
  int64_t max_memory_allocated() const override { return peak_; }
  int64_t memory_reserved() const override { return allocated_; }
  void reset_peak() override { peak_ = allocated_; }

 private:
  int ordinal_;
  int64_t allocated_ = 0, peak_ = 0;
};

}  // namespace
#endif

std::unique_ptr<MemoryBackend> make_scratch_memory(Backend& be) {
#ifdef VRAMLAB_HAVE_CUDA
  if (auto* cuda = dynamic_cast<cuda::CudaBackend*>(&be)) return std::make_unique<CudaScratchMemory>(cuda->ordinal());
#else
  (void)be;
#endif
  return std::make_unique<RoundingMemory>();
}

}  // namespace vramlab::engine
