#include "engine/backends/allocator_memory.h"

namespace vramlab::engine {

AllocatorMemory::AllocatorMemory(std::shared_ptr<alloc::CachingAllocator> a) : alloc_(std::move(a)) {
  if (!alloc_) throw std::invalid_argument("AllocatorMemory needs an allocator");
}

alloc::ContextId AllocatorMemory::context_for(TagId tag) {
  if (tag == 0) return 0;
  if (tag >= contexts_.size()) contexts_.resize(size_t(tag) + 1, 0);
  auto& c = contexts_[tag];
  if (c == 0) c = alloc_->contexts().intern(tag_info(tag).label());
  return c;
}

MemBlock AllocatorMemory::allocate(size_t bytes, TagId tag) {
  try {
    auto a = alloc_->malloc(bytes, stream_, context_for(tag));
    MemBlock b;
    b.ptr = a.ptr;
    b.size = a.size;
    b.requested = a.requested;
    return b;
  } catch (const alloc::OutOfMemoryError& e) {
    throw OutOfMemoryError(e.what());
  }
}

void AllocatorMemory::release(const MemBlock& b) {
  if (b.ptr) alloc_->free(b.ptr);
}

}  // namespace vramlab::engine
