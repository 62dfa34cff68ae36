#pragma once
// MemoryBackend over vramlab's caching allocator: tensor storages get PyTorch's
// block sizes (512 B rounding, unsplit remainders), so memory_allocated() reads
// what torch.cuda.memory_allocated() would. Engine tags become allocator contexts.
#include <memory>
#include <vector>

#include "allocator/caching_allocator.h"
#include "engine/core/memory.h"

namespace vramlab::engine {

class AllocatorMemory : public MemoryBackend {
 public:
  explicit AllocatorMemory(std::shared_ptr<alloc::CachingAllocator> a);
  MemBlock allocate(size_t bytes, TagId tag) override;
  void release(const MemBlock& b) override;
  int64_t memory_allocated() const override { return int64_t(alloc_->memory_allocated()); }
  int64_t max_memory_allocated() const override { return int64_t(alloc_->max_memory_allocated()); }
  int64_t memory_reserved() const override { return int64_t(alloc_->memory_reserved()); }
  void reset_peak() override { alloc_->reset_peak(); }
  void empty_cache() override { alloc_->empty_cache(); }
  std::string memory_summary() const override { return alloc_->memory_summary(); }
  alloc::CachingAllocator& allocator() { return *alloc_; }
  void set_stream(int s) override { stream_ = alloc::StreamId(s); }
  int stream() const override { return int(stream_); }

 private:
  alloc::ContextId context_for(TagId tag);
  std::shared_ptr<alloc::CachingAllocator> alloc_;
  std::vector<alloc::ContextId> contexts_;
  alloc::StreamId stream_ = 0;  // TagId -> allocator context (0 = not yet interned)
};

}  // namespace vramlab::engine
