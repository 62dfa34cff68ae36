// CachingAllocator::seed: rebuilds a recorded allocator state (segments at their real
// addresses, split into the blocks they held) so a replay of a trace that began late, or
// whose ring buffer dropped its oldest events, continues from exactly where PyTorch was.
#include <limits>
#include <string>

#include "allocator/caching_allocator.h"

namespace vramlab::alloc {

namespace {
std::string hex(uintptr_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}
}  // namespace

void CachingAllocator::seed(const std::vector<SeedSegment>& segments) {
  std::lock_guard<std::mutex> lock(mu_);
  if (total_allocated_memory_ != 0 || allocated_.size() != 0)
    throw std::invalid_argument("seed: the allocator already holds memory (seed a fresh one)");
  // Segments before a refused one stay seeded; the published statistics must match them.
  struct Publish {
    CachingAllocator* a;
    ~Publish() { a->publish(); }
  } publish_on_exit{this};
  for (const SeedSegment& seg : segments) {
    const std::string where = "seed: segment at " + hex(seg.address);
    if (seg.blocks.empty()) throw std::invalid_argument(where + " has no blocks");
    size_t total = 0;
    for (size_t i = 0; i < seg.blocks.size(); ++i) {
      const SeedBlock& b = seg.blocks[i];
      if (b.size == 0 || b.size % kMinBlockSize != 0)
        throw std::invalid_argument(where + ": block " + std::to_string(i) + " size " + std::to_string(b.size) +
                                    " is not a positive multiple of 512");
      if (b.allocated && b.requested > b.size)
        throw std::invalid_argument(where + ": block " + std::to_string(i) + " requested more than its size");
      // Sizes come from a file: keep the sums and addresses below from wrapping (as malloc does).
      if (b.size > kMaxRequestSize - total)
        throw std::invalid_argument(where + ": blocks larger than any device (over 2^62 bytes in all)");
      // The allocator merges free neighbours on every free; two in a row cannot be real.
      if (i > 0 && !b.allocated && !seg.blocks[i - 1].allocated)
        throw std::invalid_argument(where + ": blocks " + std::to_string(i - 1) + " and " + std::to_string(i) +
                                    " are both free (they would have been merged)");
      total += b.size;
    }
    if (seg.address > std::numeric_limits<uintptr_t>::max() - total)
      throw std::invalid_argument(where + " (" + std::to_string(total) + " bytes) wraps around the address space");
    if (allowed_memory_maximum_ && total_allocated_memory_ + total > *allowed_memory_maximum_)
      throw std::invalid_argument("seed: the recorded state holds more than the cap of " +
                                  std::to_string(*allowed_memory_maximum_) + " bytes (" +
                                  std::to_string(total_allocated_memory_ + total) + " reserved by segment " +
                                  hex(seg.address) + ")");
    if (!device_->adopt(seg.address, total))
      throw std::invalid_argument(where + " (" + std::to_string(total) +
                                  " bytes) overlaps another or does not fit on the device");

    BlockPool& pool = seg.is_small ? small_blocks_ : large_blocks_;
    total_allocated_memory_ += total;
    stat_up(stats_.segment, pool, 1);
    stat_up(stats_.reserved_bytes, pool, static_cast<int64_t>(total));
    if (total >= settings_.max_split_size) stats_.oversize_segments.increase(1);

    const bool split = seg.blocks.size() > 1;
    Block* prev = nullptr;
    uintptr_t at = seg.address;
    for (const SeedBlock& sb : seg.blocks) {
      Block* b = new_block(seg.stream, sb.size, &pool, at);
      b->splice(prev, nullptr);
      if (sb.allocated) {
        b->allocated = true;
        b->requested_size = sb.requested;
        allocated_.insert(b->ptr, b);
        stat_up(stats_.allocation, pool, 1);
        stat_up(stats_.allocated_bytes, pool, static_cast<int64_t>(b->size));
        stat_up(stats_.active, pool, 1);
        stat_up(stats_.active_bytes, pool, static_cast<int64_t>(b->size));
        stat_up(stats_.requested_bytes, pool, static_cast<int64_t>(sb.requested));
        if (b->size >= settings_.max_split_size) stats_.oversize_allocations.increase(1);
      } else {
        b->gc_count_base = pool.get_free_blocks_call_count;
        pool.insert_into_blocks(b);
        if (split) {
          stat_up(stats_.inactive_split, pool, 1);
          stat_up(stats_.inactive_split_bytes, pool, static_cast<int64_t>(b->size));
        }
      }
      prev = b;
      at += sb.size;
    }
  }
}

}  // namespace vramlab::alloc
