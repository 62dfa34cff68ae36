#pragma once
// A Block is a contiguous piece of one segment: handed out (allocated) or cached
// (free). Blocks of a segment form a doubly linked list in address order
// (c10's Block, minus CUDA events and graph pools).
#include <cstddef>
#include <cstdint>

#include "allocator/constants.h"

namespace vramlab::alloc {

struct BlockPool;
class ExpandableSegment;

struct Block {
  StreamId stream = 0;        // allocation stream; blocks are only reused on it
  size_t size = 0;            // block size in bytes
  size_t requested_size = 0;  // bytes the caller asked for
  BlockPool* pool = nullptr;  // small or large pool
  uintptr_t ptr = 0;          // device address
  Block* prev = nullptr;      // neighbours within the segment
  Block* next = nullptr;
  ExpandableSegment* expandable = nullptr;
  int64_t gc_count_base = 0;      // pool's get_free_block count when cached
  ContextId context = 0;          // who holds it now (or last did)
  ContextId segment_context = 0;  // who caused the segment to be created (head block)
  bool allocated = false;
  bool mapped = true;  // false only for unmapped expandable address space

  Block() = default;
  Block(StreamId s, size_t sz, BlockPool* p, uintptr_t addr) : stream(s), size(sz), pool(p), ptr(addr) {}

  bool is_split() const { return prev != nullptr || next != nullptr; }
  void splice(Block* before, Block* after) {
    if (before) before->next = this;
    prev = before;
    if (after) after->prev = this;
    next = after;
  }
};

// Best fit: ordered by (stream, size, address), as BlockComparatorSize.
struct BlockSizeLess {
  bool operator()(const Block* a, const Block* b) const {
    if (a->stream != b->stream) return a->stream < b->stream;
    if (a->size != b->size) return a->size < b->size;
    return a->ptr < b->ptr;
  }
};

// Unmapped expandable ranges: ordered by (stream, address), as BlockComparatorAddress.
struct BlockAddrLess {
  bool operator()(const Block* a, const Block* b) const {
    if (a->stream != b->stream) return a->stream < b->stream;
    return a->ptr < b->ptr;
  }
};

}  // namespace vramlab::alloc
