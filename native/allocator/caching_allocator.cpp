// The placement logic of PyTorch 2.11's DeviceCachingAllocator (c10/cuda/CUDACachingAllocator.cpp),
// function by function, minus CUDA graph pools and cross-stream events.
#include "allocator/caching_allocator.h"

#include <algorithm>
#include <bit>
#include <limits>

namespace vramlab::alloc {

CachingAllocator::CachingAllocator(std::shared_ptr<Device> device, AllocatorSettings settings, int device_index)
    : device_(std::move(device)),
      device_index_(device_index),
      settings_(std::move(settings)),
      large_blocks_(false, &node_arena_),
      small_blocks_(true, &node_arena_) {
  if (!device_) throw std::invalid_argument("CachingAllocator needs a device");
  stats_.max_split_size = settings_.max_split_unlimited() ? -1 : static_cast<int64_t>(settings_.max_split_size);
  if (settings_.per_process_memory_fraction) set_fraction_locked(*settings_.per_process_memory_fraction);
}

CachingAllocator::~CachingAllocator() {
  // Hand everything back to the device, live allocations included: the device may be
  // shared and must not keep memory for an allocator that no longer exists.
  std::vector<Block*> heads;
  auto collect = [&](Block* b) {
    while (b->prev) b = b->prev;
    heads.push_back(b);
  };
  allocated_.for_each(collect);
  for (BlockPool* pool : {&large_blocks_, &small_blocks_}) {
    for (Block* b : pool->blocks) collect(b);
    for (Block* b : pool->unmapped) collect(b);
  }
  std::sort(heads.begin(), heads.end());
  heads.erase(std::unique(heads.begin(), heads.end()), heads.end());
  for (Block* head : heads) {
    if (!head->expandable) {
      size_t total = 0;
      for (Block* b = head; b; b = b->next) total += b->size;
      try {
        device_->free(head->ptr, total);
      } catch (...) {
      }
    }
  }
  expandable_segments_.clear();  // unmaps pages and releases address ranges
}

// ---- sizes ----------------------------------------------------------------

// round_size: 512 B multiples, or the next power-of-two division when configured.
size_t CachingAllocator::round_size(size_t size) const {
  if (size < kMinBlockSize) return kMinBlockSize;
  size_t divisions = settings_.roundup_divisions_for(size);
  if (divisions > 1 && size > kMinBlockSize * divisions) {
    if ((size & (size - 1)) == 0) return size;
    size_t floor = std::bit_floor(size);
    size_t step = floor >> (std::bit_width(divisions) - 1);
    if (step == 0) return floor << 1;
    size_t rounded = size & ~(step - 1);
    return rounded == size ? size : rounded + step;
  }
  return kMinBlockSize * ((size + kMinBlockSize - 1) / kMinBlockSize);
}

// get_allocation_size: the segment a miss asks the device for.
size_t CachingAllocator::allocation_size(size_t size) const {
  if (size <= kSmallSize) return kSmallBuffer;
  if (size < kMinLargeAlloc) return settings_.large_segment_size;
  return kRoundLarge * ((size + kRoundLarge - 1) / kRoundLarge);
}

bool CachingAllocator::should_split(const Block* b, size_t size, bool expandable_active) const {
  size_t remaining = b->size - size;
  if (b->pool->is_small || expandable_active) return remaining >= kMinBlockSize;
  return size < settings_.max_split_size && remaining > kSmallSize;
}

// ---- malloc ---------------------------------------------------------------

Allocation CachingAllocator::malloc(size_t orig_size, StreamId stream, ContextId ctx) {
  if (orig_size == 0) return Allocation{0, 0, 0, stream};  // c10 hands out nullptr without a block
  std::lock_guard<std::mutex> lock(mu_);
  host_ns_ += host_op_ns_;
  if (orig_size > kMaxRequestSize) {
    // round_size/allocation_size would wrap (2^64 - 1 became a 0-byte block): an OOM.
    BlockPool& pool = large_blocks_;
    AllocParams p{Block(stream, orig_size, nullptr, 0), &pool, orig_size, false};
    throw_oom(p, orig_size, ctx);
  }
  size_t size = round_size(orig_size);
  BlockPool& pool = size <= kSmallSize ? small_blocks_ : large_blocks_;
  AllocParams p{Block(stream, size, nullptr, 0), &pool, allocation_size(size), settings_.expandable_segments};

  bool found = get_free_block(p);
  if (!found) {
    if (allowed_memory_maximum_ && settings_.garbage_collection_threshold > 0.0) garbage_collect_cached_blocks();
    found = alloc_block(p, false, ctx) || (release_available_cached_blocks(p) && alloc_block(p, false, ctx)) ||
            (release_cached_blocks() && alloc_block(p, true, ctx));
  }
  if (!found) throw_oom(p, orig_size, ctx);

  Block* b = alloc_found_block(p, orig_size, ctx, should_split(p.block, p.size(), p.expandable_active));
  publish();
  return Allocation{b->ptr, b->size, orig_size, stream};
}

bool CachingAllocator::get_free_block(AllocParams& p) {
  BlockPool& pool = *p.pool;
  if (allowed_memory_maximum_ && settings_.garbage_collection_threshold > 0.0) ++pool.get_free_blocks_call_count;
  auto it = pool.blocks.lower_bound(&p.search_key);
  if (it == pool.blocks.end() || (*it)->stream != p.stream()) return false;

  if ((*it)->expandable) {
    if (p.expandable_active) {
      // Best fit counts the unmapped room after a block as part of its size.
      auto expandable_size = [](const Block* b) { return b->size + (b->next && !b->next->mapped ? b->next->size : 0); };
      auto next = std::next(it);
      while ((*it)->expandable && next != pool.blocks.end() && (*next)->stream == p.stream() &&
             expandable_size(*next) < expandable_size(*it)) {
        it = next++;
      }
    } else {
      // Expandable segments were switched off: only plain blocks qualify.
      do {
        ++it;
      } while (it != pool.blocks.end() && (*it)->expandable && (*it)->stream == p.stream());
      if (it == pool.blocks.end() || (*it)->stream != p.stream()) return false;
    }
  }

  const size_t max_split = settings_.max_split_size;
  // Oversize cached blocks are not handed to small requests...
  if (p.size() < max_split && (*it)->size >= max_split) return false;
  // ...and serve oversize requests only within max_non_split_rounding_size.
  if (p.size() >= max_split && (*it)->size >= p.size() + settings_.max_non_split_rounding_size) return false;
  p.block = *it;
  VRAMLAB_DEBUG_ASSERT(!p.block->allocated && p.block->mapped, "a cached block is free and mapped");
  VRAMLAB_DEBUG_ASSERT(p.block->size >= p.size() && p.block->stream == p.stream() && p.block->pool == &pool,
                       "best fit returned a block too small or of another stream or pool");
  pool.blocks.remove(it);
  return true;
}

void CachingAllocator::garbage_collect_cached_blocks() {
  // Frees cached, unsplit large blocks older than average until usage drops under
  // garbage_collection_threshold * cap.
  size_t gc_threshold =
      static_cast<size_t>(settings_.garbage_collection_threshold * static_cast<double>(*allowed_memory_maximum_));
  if (total_allocated_memory_ <= gc_threshold) return;
  const size_t target_size = total_allocated_memory_ - gc_threshold;
  size_t gc_reclaimed = 0;

  auto age = [&](const Block* b) {
    return static_cast<size_t>(static_cast<int>(large_blocks_.get_free_blocks_call_count - b->gc_count_base));
  };
  size_t total_age = 0;
  int freeable = 0;
  for (const Block* b : large_blocks_.blocks) {
    if (!b->is_split()) {
      total_age += age(b);
      ++freeable;
    }
  }
  if (freeable == 0) return;

  bool block_freed = true;
  while (gc_reclaimed < target_size && block_freed && freeable > 0) {
    double age_threshold = static_cast<double>(total_age) / freeable;
    block_freed = false;
    // Releasing edits the pool (invalidating its iterators): walk a copy.
    const std::vector<Block*> cached(large_blocks_.blocks.begin(), large_blocks_.blocks.end());
    for (Block* b : cached) {
      if (!b->is_split() && !b->expandable && static_cast<double>(age(b)) >= age_threshold) {
        block_freed = true;
        gc_reclaimed += b->size;
        total_age -= age(b);
        --freeable;
        release_block(b);
      }
    }
  }
}

bool CachingAllocator::alloc_block(AllocParams& p, bool is_retry, ContextId ctx) {
  size_t size = p.alloc_size;
  if (is_retry) stats_.num_alloc_retries += 1;

  if (allowed_memory_maximum_ && total_allocated_memory_ + size > *allowed_memory_maximum_) {
    p.failed_oom = true;
    return false;
  }
  if (p.expandable_active) {
    p.block = try_allocate_expandable_block(p.stream(), p.pool, p.size(), ctx);
    p.failed_oom = p.block == nullptr;
    return p.block != nullptr;
  }
  uintptr_t ptr = device_->malloc(size);
  if (ptr == 0) {
    p.failed_oom = true;
    return false;
  }
  total_allocated_memory_ += size;
  p.block = new_block(p.stream(), size, p.pool, ptr);
  p.block->segment_context = ctx;
  stat_up(stats_.segment, *p.pool, 1);
  stat_up(stats_.reserved_bytes, *p.pool, static_cast<int64_t>(size));
  if (size >= settings_.max_split_size) stats_.oversize_segments.increase(1);
  stats_.num_device_alloc++;
  record(TraceAction::kSegmentAlloc, ptr, size, size, p.stream(), ctx);
  return true;
}

// Frees oversize cached blocks (only when max_split_size is set), just enough for p.
bool CachingAllocator::release_available_cached_blocks(const AllocParams& p) {
  if (settings_.max_split_unlimited()) return false;
  BlockPool& pool = *p.pool;
  const size_t max_split = settings_.max_split_size;
  Block key(p.stream(), p.size() < max_split ? max_split : p.size(), nullptr, 0);
  auto it = pool.blocks.lower_bound(&key);
  if (it == pool.blocks.end() || (*it)->stream != p.stream() || (*it)->expandable) {
    // No single block is large enough: free oversize blocks, largest first.
    if (it == pool.blocks.begin()) return false;
    // Pick the blocks first (releasing edits the pool and invalidates its iterators), then
    // release them in the order c10's walk does.
    std::vector<Block*> picked;
    size_t released = 0;
    --it;
    while (released < key.size && (*it)->size >= max_split && (*it)->stream == p.stream()) {
      auto cur = it;
      bool is_first = cur == pool.blocks.begin();
      if (!is_first) --it;
      if (!(*cur)->expandable) {
        released += (*cur)->size;
        picked.push_back(*cur);
      }
      if (is_first) break;
    }
    for (Block* b : picked) release_block(b);
    if (released < key.size) return false;
  } else {
    release_block(*it);
  }
  return true;
}

bool CachingAllocator::release_cached_blocks() {
  stats_.num_sync_all_streams++;  // synchronize_and_free_events
  device_->synchronize();
  release_blocks(large_blocks_);
  release_blocks(small_blocks_);
  return true;
}

void CachingAllocator::release_blocks(BlockPool& pool) {
  std::vector<Block*> to_unmap;
  // Releasing edits the pool (invalidating its iterators): walk a copy.
  const std::vector<Block*> cached(pool.blocks.begin(), pool.blocks.end());
  for (Block* b : cached) {
    if (b->expandable) {
      to_unmap.push_back(b);  // unmapping edits the pool; do it after the walk
    } else if (!b->prev && !b->next) {
      release_block(b);
    }
  }
  for (Block* b : to_unmap) {
    unmap_block(b);
    if (!b->prev && !b->next) release_expandable_segment(b);
  }
}

void CachingAllocator::release_block(Block* b) {
  VRAMLAB_DEBUG_ASSERT(!b->allocated && !b->is_split() && !b->expandable,
                       "only whole, free, plain segments are released");
  VRAMLAB_DEBUG_ASSERT(total_allocated_memory_ >= b->size, "reserved memory would go negative");
  stats_.num_device_free++;
  record(TraceAction::kSegmentFree, b->ptr, b->size, b->size, b->stream, b->segment_context);
  device_->free(b->ptr, b->size);
  total_allocated_memory_ -= b->size;
  stat_down(stats_.segment, *b->pool, 1);
  stat_down(stats_.reserved_bytes, *b->pool, static_cast<int64_t>(b->size));
  if (b->size >= settings_.max_split_size) stats_.oversize_segments.decrease(1);
  b->pool->blocks.erase(b);
  delete_block(b);
}

void CachingAllocator::unmap_block(Block* b) {
  SegmentRange unmapped = b->expandable->unmap({b->ptr, b->size});
  if (unmapped.size == 0) return;
  VRAMLAB_DEBUG_ASSERT(!b->allocated && b->mapped, "only free mapped blocks are unmapped");
  VRAMLAB_DEBUG_ASSERT(unmapped.ptr >= b->ptr && unmapped.ptr + unmapped.size <= b->ptr + b->size,
                       "unmapped pages lie outside the block");
  VRAMLAB_DEBUG_ASSERT(total_allocated_memory_ >= unmapped.size, "reserved memory would go negative");
  BlockPool& pool = *b->pool;
  pool.blocks.erase(b);

  size_t before_size = unmapped.ptr - b->ptr;
  if (before_size > 0) {
    Block* before = new_block(b->stream, before_size, &pool, b->ptr);
    before->expandable = b->expandable;
    before->splice(b->prev, b);
    pool.insert_into_blocks(before);
  }
  size_t after_size = b->size - (before_size + unmapped.size);
  if (after_size > 0) {
    Block* after = new_block(b->stream, after_size, &pool, unmapped.ptr + unmapped.size);
    after->expandable = b->expandable;
    after->splice(b, b->next);
    pool.insert_into_blocks(after);
  }
  b->ptr = unmapped.ptr;
  b->size = unmapped.size;
  b->mapped = false;
  try_merge_blocks(b, b->prev, pool);
  try_merge_blocks(b, b->next, pool);
  pool.unmapped.insert(b);

  total_allocated_memory_ -= unmapped.size;
  stat_down(stats_.reserved_bytes, pool, static_cast<int64_t>(unmapped.size));
  stats_.num_device_free++;
  record(TraceAction::kSegmentUnmap, unmapped.ptr, unmapped.size, unmapped.size, b->stream, b->segment_context);
}

void CachingAllocator::release_expandable_segment(Block* b) {
  auto it = std::find_if(expandable_segments_.begin(), expandable_segments_.end(),
                         [&](const auto& es) { return es.get() == b->expandable; });
  if (it == expandable_segments_.end() || b->mapped || b->size != b->expandable->size())
    throw std::logic_error("expandable segment bookkeeping is inconsistent");
  b->pool->unmapped.erase(b);
  expandable_segments_.erase(it);
  delete_block(b);
}

Block* CachingAllocator::alloc_found_block(AllocParams& p, size_t orig_size, ContextId ctx, bool split) {
  BlockPool* pool = p.pool;
  Block* block = p.block;
  VRAMLAB_DEBUG_ASSERT(!block->allocated && block->mapped && block->pool == pool,
                       "handing out a block not free in this pool");
  VRAMLAB_DEBUG_ASSERT(block->size >= p.size(), "handing out a block smaller than the request");
  const bool already_split = block->is_split();
  if (split) {
    VRAMLAB_DEBUG_ASSERT(block->size > p.size(), "a split leaves an empty remainder");
    Block* remaining = block;
    block = new_block(p.stream(), p.size(), pool, remaining->ptr);
    block->expandable = remaining->expandable;
    block->prev = remaining->prev;
    if (block->prev) block->prev->next = block;
    block->next = remaining;
    remaining->prev = block;
    remaining->ptr += p.size();
    remaining->size -= p.size();
    VRAMLAB_DEBUG_ASSERT(!remaining->next || remaining->ptr + remaining->size == remaining->next->ptr,
                         "a split remainder runs past its segment");
    if (remaining->segment_context && !block->prev) {  // the head keeps the segment's context
      block->segment_context = remaining->segment_context;
      remaining->segment_context = 0;
    }
    pool->insert_into_blocks(remaining);
    if (already_split && !block->expandable) {
      stat_down(stats_.inactive_split_bytes, *pool, static_cast<int64_t>(block->size));
    } else if (!block->expandable) {
      stat_up(stats_.inactive_split_bytes, *pool, static_cast<int64_t>(remaining->size));
      stat_up(stats_.inactive_split, *pool, 1);
    }
  } else if (already_split && !block->expandable) {
    stat_down(stats_.inactive_split_bytes, *pool, static_cast<int64_t>(block->size));
    stat_down(stats_.inactive_split, *pool, 1);
  }

  block->allocated = true;
  block->requested_size = orig_size;
  block->context = ctx;
  record(TraceAction::kAlloc, block->ptr, orig_size, block->size, block->stream, ctx);
  allocated_.insert(block->ptr, block);

  stat_up(stats_.allocation, *pool, 1);
  stat_up(stats_.allocated_bytes, *pool, static_cast<int64_t>(block->size));
  stat_up(stats_.active, *pool, 1);
  stat_up(stats_.active_bytes, *pool, static_cast<int64_t>(block->size));
  stat_up(stats_.requested_bytes, *pool, static_cast<int64_t>(orig_size));
  if (block->size >= settings_.max_split_size) stats_.oversize_allocations.increase(1);
  return block;
}

// ---- free -----------------------------------------------------------------

void CachingAllocator::free(uintptr_t ptr) {
  if (ptr == 0) return;
  std::lock_guard<std::mutex> lock(mu_);
  Block* b = allocated_.erase(ptr);
  if (!b) throw std::invalid_argument("free of an address this allocator did not hand out (or already freed)");
  VRAMLAB_DEBUG_ASSERT(b->allocated && b->ptr == ptr, "the allocated map holds a block that is not handed out");
  VRAMLAB_DEBUG_ASSERT(b->pool == &small_blocks_ || b->pool == &large_blocks_,
                       "a freed block belongs to no pool of ours");
  host_ns_ += host_op_ns_;
  b->allocated = false;
  stat_down(stats_.allocation, *b->pool, 1);
  stat_down(stats_.allocated_bytes, *b->pool, static_cast<int64_t>(b->size));
  if (b->size >= settings_.max_split_size) stats_.oversize_allocations.decrease(1);
  free_block(b);
  publish();
}

void CachingAllocator::free_block(Block* b) {
  record(TraceAction::kFree, b->ptr, b->requested_size, b->size, b->stream, b->context);
  const size_t original_size = b->size;
  const size_t requested = b->requested_size;
  BlockPool& pool = *b->pool;
  int64_t net_blocks = 0, net_bytes = 0;
  for (Block* candidate : {b->prev, b->next}) {
    size_t subsumed = try_merge_blocks(b, candidate, pool);
    if (subsumed > 0) {
      net_blocks -= 1;
      net_bytes -= static_cast<int64_t>(subsumed);
    }
  }
  pool.insert_into_blocks(b);
  if (b->is_split()) {
    net_blocks += 1;
    net_bytes += static_cast<int64_t>(b->size);
  }
  // Expandable segments are left out of inactive_split: their free pages can always be released.
  if (!b->expandable) {
    if (net_blocks > 0)
      stat_up(stats_.inactive_split, pool, net_blocks);
    else if (net_blocks < 0)
      stat_down(stats_.inactive_split, pool, -net_blocks);
    if (net_bytes > 0)
      stat_up(stats_.inactive_split_bytes, pool, net_bytes);
    else if (net_bytes < 0)
      stat_down(stats_.inactive_split_bytes, pool, -net_bytes);
  }
  stat_down(stats_.active, pool, 1);
  stat_down(stats_.active_bytes, pool, static_cast<int64_t>(original_size));
  stat_down(stats_.requested_bytes, pool, static_cast<int64_t>(requested));
}

size_t CachingAllocator::try_merge_blocks(Block* dst, Block* src, BlockPool& pool) {
  if (!src || src->allocated || dst->mapped != src->mapped) return 0;
  VRAMLAB_DEBUG_ASSERT(!dst->allocated, "merging into an allocated block");
  VRAMLAB_DEBUG_ASSERT(
      src->stream == dst->stream && src->pool == &pool && dst->pool == &pool && src->expandable == dst->expandable,
      "merging blocks of different streams, pools or segments");
  VRAMLAB_DEBUG_ASSERT(
      dst->prev == src ? src->ptr + src->size == dst->ptr : dst->next == src && dst->ptr + dst->size == src->ptr,
      "merging blocks that are not neighbours");
  if (dst->prev == src) {  // [src dst]
    dst->ptr = src->ptr;
    dst->prev = src->prev;
    if (dst->prev) dst->prev->next = dst;
    if (src->segment_context) dst->segment_context = src->segment_context;
  } else {  // [dst src]
    dst->next = src->next;
    if (dst->next) dst->next->prev = dst;
  }
  const size_t subsumed = src->size;
  dst->size += subsumed;
  if (src->mapped)
    pool.blocks.erase(src);
  else
    pool.unmapped.erase(src);
  delete_block(src);
  return subsumed;
}

// ---- expandable segments ----------------------------------------------------

// The lowest address with room for size, made of free and unmapped blocks; creates a
// new segment for this stream and pool when none has room.
Block* CachingAllocator::find_expandable_block(StreamId stream, BlockPool* pool, size_t size) {
  Block key(stream, 0, nullptr, 0);
  auto allocatable = [](const Block* b) { return b && !b->allocated; };
  auto has_room = [&](const Block* b) {
    size_t bytes = 0;
    while (bytes < size && allocatable(b)) {
      bytes += b->size;
      b = b->next;
    }
    return bytes >= size;
  };
  for (auto it = pool->unmapped.lower_bound(&key); it != pool->unmapped.end() && (*it)->stream == stream; ++it) {
    Block* c = *it;
    if (allocatable(c->prev)) c = c->prev;  // a free block right before can be used too
    if (has_room(c)) return c;
  }
  size_t segment_size = pool->is_small ? kSmallBuffer : settings_.large_segment_size;
  expandable_segments_.push_back(std::make_unique<ExpandableSegment>(device_.get(), stream, segment_size));
  ExpandableSegment* es = expandable_segments_.back().get();
  Block* candidate = new_block(stream, es->size(), pool, es->ptr());
  candidate->mapped = false;
  candidate->expandable = es;
  pool->unmapped.insert(candidate);
  return candidate;
}

bool CachingAllocator::map_block(Block* to_map, size_t size, ContextId ctx) {
  SegmentRange mapped = to_map->expandable->map({to_map->ptr, size});
  if (mapped.size == 0) return false;
  VRAMLAB_DEBUG_ASSERT(!to_map->mapped && mapped.ptr == to_map->ptr && mapped.size <= to_map->size,
                       "mapped pages lie outside the unmapped range");
  BlockPool& pool = *to_map->pool;
  pool.unmapped.erase(to_map);
  to_map->mapped = true;
  if (mapped.size < to_map->size) {
    Block* remaining = new_block(to_map->stream, to_map->size - mapped.size, &pool, to_map->ptr + mapped.size);
    remaining->mapped = false;
    remaining->expandable = to_map->expandable;
    remaining->splice(to_map, to_map->next);
    pool.unmapped.insert(remaining);
    to_map->size = mapped.size;
  }
  try_merge_blocks(to_map, to_map->prev, pool);
  try_merge_blocks(to_map, to_map->next, pool);
  pool.insert_into_blocks(to_map);

  total_allocated_memory_ += mapped.size;
  stat_up(stats_.reserved_bytes, pool, static_cast<int64_t>(mapped.size));
  stats_.num_device_alloc++;
  record(TraceAction::kSegmentMap, mapped.ptr, mapped.size, mapped.size, to_map->stream, ctx);
  if (!to_map->prev && !to_map->segment_context) to_map->segment_context = ctx;
  return true;
}

Block* CachingAllocator::try_allocate_expandable_block(StreamId stream, BlockPool* pool, size_t size, ContextId ctx) {
  Block* candidate = find_expandable_block(stream, pool, size);
  // candidate is: unmapped -> null | unmapped -> free -> * | free -> unmapped -> *
  if (!candidate->mapped && !map_block(candidate, std::min(candidate->size, size), ctx)) return nullptr;
  while (candidate->size < size) {
    size_t remaining = size - candidate->size;
    Block* next = candidate->next;
    VRAMLAB_DEBUG_ASSERT(next && !next->allocated, "find_expandable_block promised room it does not have");
    if (!map_block(next, std::min(remaining, next->size), ctx)) return nullptr;
    candidate = next;
  }
  pool->blocks.erase(candidate);
  return candidate;
}

// ---- cache control, caps, settings ----------------------------------------------

void CachingAllocator::empty_cache() {
  std::lock_guard<std::mutex> lock(mu_);
  int64_t before = stats_.reserved_bytes[kAggregate].current;
  release_cached_blocks();
  record(TraceAction::kEmptyCache, 0, static_cast<uint64_t>(before - stats_.reserved_bytes[kAggregate].current), 0, 0,
         0);
  publish();
}

void CachingAllocator::set_fraction_locked(double fraction) {
  if (!(fraction >= 0.0 && fraction <= 1.0))
    throw std::invalid_argument("invalid fraction: " + std::to_string(fraction) + ". Please set within [0, 1].");
  allowed_memory_maximum_.reset();
  if (fraction < 1.0)
    allowed_memory_maximum_ = static_cast<uint64_t>(fraction * static_cast<double>(device_->total_memory()));
}

void CachingAllocator::set_memory_fraction(double fraction) {
  std::lock_guard<std::mutex> lock(mu_);
  set_fraction_locked(fraction);
}

double CachingAllocator::memory_fraction() const {
  std::lock_guard<std::mutex> lock(mu_);
  if (!allowed_memory_maximum_) return 1.0;
  return static_cast<double>(*allowed_memory_maximum_) / static_cast<double>(device_->total_memory());
}

void CachingAllocator::set_capacity_limit(std::optional<uint64_t> bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  allowed_memory_maximum_ = bytes;
}

std::optional<uint64_t> CachingAllocator::capacity_limit() const {
  std::lock_guard<std::mutex> lock(mu_);
  return allowed_memory_maximum_;
}

void CachingAllocator::set_settings(const AllocatorSettings& s) {
  std::lock_guard<std::mutex> lock(mu_);
  settings_ = s;
  stats_.max_split_size = s.max_split_unlimited() ? -1 : static_cast<int64_t>(s.max_split_size);
  if (s.per_process_memory_fraction) set_fraction_locked(*s.per_process_memory_fraction);
}

AllocatorSettings CachingAllocator::settings() const {
  std::lock_guard<std::mutex> lock(mu_);
  return settings_;
}

// ---- statistics, history, snapshots ------------------------------------------

DeviceStats CachingAllocator::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

uint64_t CachingAllocator::max_memory_allocated() const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<uint64_t>(stats_.allocated_bytes[kAggregate].peak);
}

uint64_t CachingAllocator::max_memory_reserved() const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<uint64_t>(stats_.reserved_bytes[kAggregate].peak);
}

void CachingAllocator::reset_peak() {
  std::lock_guard<std::mutex> lock(mu_);
  stats_.reset_peak();
}

void CachingAllocator::reset_accumulated() {
  std::lock_guard<std::mutex> lock(mu_);
  stats_.reset_accumulated();
}

std::vector<std::pair<std::string, int64_t>> CachingAllocator::memory_stats() const {
  return memory_stats_dict(stats());
}

std::string CachingAllocator::memory_summary(bool abbreviated) const {
  return alloc::memory_summary(stats(), device_index_, abbreviated);
}

void CachingAllocator::set_history(bool enabled, size_t max_entries) {
  std::lock_guard<std::mutex> lock(mu_);
  record_history_ = enabled;
  trace_.set_max_entries(max_entries);
  if (!enabled) trace_.clear();
}

bool CachingAllocator::history_enabled() const {
  std::lock_guard<std::mutex> lock(mu_);
  return record_history_;
}

std::vector<TraceEvent> CachingAllocator::history() const {
  std::lock_guard<std::mutex> lock(mu_);
  return trace_.entries();
}

uint64_t CachingAllocator::virtual_time_ns() const {
  std::lock_guard<std::mutex> lock(mu_);
  return virtual_time_ns_locked();
}

void CachingAllocator::set_host_op_ns(uint64_t ns) {
  std::lock_guard<std::mutex> lock(mu_);
  host_op_ns_ = ns;
}

MemorySnapshot CachingAllocator::snapshot(bool include_trace) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<const Block*> all;
  all.reserve(allocated_.size() + large_blocks_.blocks.size() + small_blocks_.blocks.size());
  for (const BlockPool* pool : {&small_blocks_, &large_blocks_})
    for (const Block* b : pool->blocks) all.push_back(b);
  allocated_.for_each([&](const Block* b) { all.push_back(b); });

  MemorySnapshot snap;
  for (const Block* head : all) {
    // Expandable segments report one segment per contiguous mapped range.
    if (head->prev && head->prev->mapped) continue;
    SegmentSnapshot seg;
    seg.address = head->ptr;
    seg.stream = head->stream;
    seg.is_large = !head->pool->is_small;
    seg.is_expandable = head->expandable != nullptr;
    seg.context = head->segment_context;
    for (const Block* b = head; b && b->mapped; b = b->next) {
      BlockSnapshot bs{b->ptr, b->size, b->requested_size, b->allocated, b->allocated ? b->context : 0};
      seg.total_size += b->size;
      if (b->allocated) {
        seg.allocated_size += b->size;
        seg.active_size += b->size;
        seg.requested_size += b->requested_size;
      }
      seg.blocks.push_back(bs);
    }
    snap.segments.push_back(std::move(seg));
  }
  std::sort(snap.segments.begin(), snap.segments.end(),
            [](const SegmentSnapshot& a, const SegmentSnapshot& b) { return a.address < b.address; });
  if (include_trace) snap.trace = trace_.entries();
  return snap;
}

}  // namespace vramlab::alloc
