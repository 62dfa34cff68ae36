#include "engine/core/memory.h"

namespace vramlab::engine {

std::string MemoryBackend::memory_summary() const {
  return "allocated " + std::to_string(memory_allocated()) + " B, peak " + std::to_string(max_memory_allocated()) +
         " B, reserved " + std::to_string(memory_reserved()) + " B\n";
}

MemBlock RoundingMemory::allocate(size_t bytes, TagId) {
  MemBlock b;
  b.requested = bytes;
  b.size = round_block_size(bytes);
  b.ptr = next_;
  next_ += b.size;
  allocated_ += int64_t(b.size);
  if (allocated_ > peak_) peak_ = allocated_;
  return b;
}

void RoundingMemory::release(const MemBlock& b) { allocated_ -= int64_t(b.size); }

}  // namespace vramlab::engine
