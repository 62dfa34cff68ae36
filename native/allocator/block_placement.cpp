// CachingAllocator::check_block_placement: the allocator's own bookkeeping checked against
// its block lists, for randomized tests (the snapshot alone cannot see a free block that
// fell out of the best-fit index: it still tiles its segment, but is never reused).
#include <algorithm>
#include <string>
#include <vector>

#include "allocator/caching_allocator.h"

namespace vramlab::alloc {

std::string CachingAllocator::check_block_placement() const {
  std::lock_guard<std::mutex> lock(mu_);
  auto where = [](const Block* b) { return " (block at " + std::to_string(b->ptr) + ")"; };
  std::vector<const Block*> heads;
  auto collect = [&](const Block* b) {
    while (b->prev) b = b->prev;
    heads.push_back(b);
  };
  allocated_.for_each(collect);
  size_t indexed = allocated_.size();
  for (const BlockPool* pool : {&large_blocks_, &small_blocks_}) {
    for (const Block* b : pool->blocks) {
      if (b->allocated || !b->mapped || b->pool != pool)
        return "the best-fit index holds a block that is not free here" + where(b);
      collect(b);
    }
    for (const Block* b : pool->unmapped) {
      if (b->allocated || b->mapped || b->pool != pool)
        return "the unmapped set holds a mapped or foreign block" + where(b);
      collect(b);
    }
    indexed += pool->blocks.size() + pool->unmapped.size();
  }
  std::sort(heads.begin(), heads.end());
  heads.erase(std::unique(heads.begin(), heads.end()), heads.end());

  size_t walked = 0;
  for (const Block* head : heads) {
    for (const Block* b = head; b; b = b->next) {
      ++walked;
      if (b->next && (b->next->prev != b || b->ptr + b->size != b->next->ptr || b->next->pool != b->pool ||
                      b->next->stream != b->stream || b->next->expandable != b->expandable))
        return "neighbours do not tile one segment" + where(b);
      if (b->allocated) {
        if (allocated_.find(b->ptr) != b) return "a handed-out block is not in the allocated map" + where(b);
      } else if (b->mapped) {
        auto it = b->pool->blocks.lower_bound(b);
        if (it == b->pool->blocks.end() || *it != b) return "a free block is not in the best-fit index" + where(b);
      } else {
        auto it = b->pool->unmapped.lower_bound(b);
        if (it == b->pool->unmapped.end() || *it != b) return "an unmapped range is not in the unmapped set" + where(b);
      }
    }
  }
  // Each walked block was found in its place; equal totals leave no room for an entry twice
  // or for a stale one.
  if (walked != indexed)
    return "blocks in segments: " + std::to_string(walked) +
           ", entries in the map, index and sets: " + std::to_string(indexed);
  return "";
}

}  // namespace vramlab::alloc
