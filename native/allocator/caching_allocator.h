#pragma once
// vramlab's caching allocator: a faithful model of PyTorch 2.11's
// CUDACachingAllocator (DeviceCachingAllocator) for one device. Placement decisions,
// statistics, OOM handling and expandable segments follow c10; CUDA graph pools,
// cross-stream events and IPC are not modelled.
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "allocator/block_pool.h"
#include "allocator/constants.h"
#include "allocator/debug_assert.h"
#include "allocator/expandable_segment.h"
#include "allocator/history.h"
#include "allocator/settings.h"
#include "allocator/stats.h"
#include "device/device.h"

namespace vramlab::alloc {

struct Allocation {
  uintptr_t ptr = 0;     // 0 for a zero-byte request
  size_t size = 0;       // block size (rounded)
  size_t requested = 0;  // bytes asked for
  StreamId stream = 0;
};

// Thrown when a request cannot be satisfied; what() is PyTorch's message.
class OutOfMemoryError : public std::runtime_error {
 public:
  OutOfMemoryError(const std::string& msg, uint64_t requested, uint64_t alloc_size, uint64_t device_total,
                   uint64_t device_free, std::optional<uint64_t> allowed, uint64_t allocated, uint64_t reserved)
      : std::runtime_error(msg),
        requested(requested),
        alloc_size(alloc_size),
        device_total(device_total),
        device_free(device_free),
        allowed(allowed),
        allocated(allocated),
        reserved(reserved) {}
  uint64_t requested;   // bytes asked for
  uint64_t alloc_size;  // bytes the allocator tried to get from the device ("Tried to allocate")
  uint64_t device_total;
  uint64_t device_free;
  std::optional<uint64_t> allowed;  // the per-process cap, when set
  uint64_t allocated;               // allocated_bytes.all.current
  uint64_t reserved;                // reserved_bytes.all.current
};

struct BlockSnapshot {
  uintptr_t address = 0;
  size_t size = 0;
  size_t requested_size = 0;
  bool allocated = false;  // state: "active_allocated" or "inactive"
  ContextId context = 0;
  const char* state() const { return allocated ? "active_allocated" : "inactive"; }
};

struct SegmentSnapshot {
  uintptr_t address = 0;
  size_t total_size = 0;
  size_t allocated_size = 0;
  size_t active_size = 0;
  size_t requested_size = 0;
  StreamId stream = 0;
  bool is_large = false;       // pool: "large" or "small"
  bool is_expandable = false;  // one contiguous mapped range of an expandable segment
  ContextId context = 0;       // context that created the segment
  std::vector<BlockSnapshot> blocks;
};

// A segment as a recorded allocator held it (see CachingAllocator::seed).
struct SeedBlock {
  size_t size = 0;       // block size (rounded)
  size_t requested = 0;  // bytes asked for (allocated blocks)
  bool allocated = false;
};

struct SeedSegment {
  uintptr_t address = 0;
  StreamId stream = 0;
  bool is_small = false;          // small pool (2 MiB segments) or large
  std::vector<SeedBlock> blocks;  // in address order, tiling the segment
};

struct MemorySnapshot {
  std::vector<SegmentSnapshot> segments;  // sorted by address
  std::vector<TraceEvent> trace;          // oldest first (empty unless history is on)
};

class CachingAllocator {
 public:
  explicit CachingAllocator(std::shared_ptr<Device> device, AllocatorSettings settings = {}, int device_index = 0);
  ~CachingAllocator();
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

  // Throws OutOfMemoryError when neither the cache nor the device can serve it.
  Allocation malloc(size_t bytes, StreamId stream = 0, ContextId context = 0);
  // Returns a block to the cache. Throws std::invalid_argument for an unknown address.
  void free(uintptr_t ptr);
  void free(const Allocation& a) { free(a.ptr); }
  // Returns every unused cached segment (and free expandable pages) to the device.
  void empty_cache();

  // Starts a fresh allocator from a recorded state: each segment is taken over at its
  // address (the device must support Device::adopt), its free blocks cached and its
  // allocated blocks handed out, so a replay can go on from the moment a trace began.
  // Counts as state (reserved, allocated, peaks) but not as device allocations.
  // Throws std::invalid_argument for a malformed layout, one the device cannot hold or
  // one above the cap. Expandable segments are not supported.
  void seed(const std::vector<SeedSegment>& segments);

  // torch.cuda.set_per_process_memory_fraction: cap = fraction * device total (1.0 lifts it).
  void set_memory_fraction(double fraction);
  double memory_fraction() const;
  // Cap in bytes; nullopt removes it.
  void set_capacity_limit(std::optional<uint64_t> bytes);
  std::optional<uint64_t> capacity_limit() const;

  // Like torch.cuda.memory._set_allocator_settings; applies to later requests.
  void set_settings(const AllocatorSettings& s);
  AllocatorSettings settings() const;

  DeviceStats stats() const;
  // Lock-free reads for other threads (updated after every operation).
  uint64_t memory_allocated() const { return allocated_now_.load(std::memory_order_relaxed); }
  uint64_t memory_reserved() const { return reserved_now_.load(std::memory_order_relaxed); }
  uint64_t max_memory_allocated() const;
  uint64_t max_memory_reserved() const;
  void reset_peak();
  void reset_accumulated();
  std::vector<std::pair<std::string, int64_t>> memory_stats() const;
  std::string memory_summary(bool abbreviated = false) const;

  MemorySnapshot snapshot(bool include_trace = true) const;
  // Every block in exactly one place: each block of each segment is in the allocated map
  // (handed out), its pool's best-fit index (free) or its pool's unmapped set, nothing else
  // is in them, and neighbours tile their segment. "" when so, else what is wrong. For
  // tests: it walks every block.
  std::string check_block_placement() const;
  // Starts/stops recording; stopping clears the buffer (like _record_memory_history(None)).
  void set_history(bool enabled, size_t max_entries = 100000);
  bool history_enabled() const;
  std::vector<TraceEvent> history() const;

  ContextTable& contexts() { return contexts_; }
  const ContextTable& contexts() const { return contexts_; }

  // Virtual time: device-call time (modelled or measured) plus host_op_ns per malloc/free.
  uint64_t virtual_time_ns() const;
  void set_host_op_ns(uint64_t ns);

  Device& device() { return *device_; }
  const Device& device() const { return *device_; }
  int device_index() const { return device_index_; }

 private:
  struct AllocParams {
    Block search_key;
    BlockPool* pool;
    size_t alloc_size;
    bool expandable_active;
    Block* block = nullptr;
    bool failed_oom = false;
    size_t size() const { return search_key.size; }
    StreamId stream() const { return search_key.stream; }
  };

  size_t round_size(size_t size) const;
  size_t allocation_size(size_t size) const;
  size_t pool_index(const BlockPool& p) const { return p.is_small ? kSmallPool : kLargePool; }
  void stat_up(StatArray& a, const BlockPool& p, int64_t n) {
    a[kAggregate].increase(n);
    a[pool_index(p)].increase(n);
  }
  void stat_down(StatArray& a, const BlockPool& p, int64_t n) {
    // Not in Stat::decrease: the oversize counters may go negative, as in c10, when
    // max_split_size changes while oversize blocks are live.
    VRAMLAB_DEBUG_ASSERT(n >= 0 && a[kAggregate].current >= n && a[pool_index(p)].current >= n,
                         "an allocator statistic would go negative");
    a[kAggregate].decrease(n);
    a[pool_index(p)].decrease(n);
  }

  bool get_free_block(AllocParams& p);
  bool alloc_block(AllocParams& p, bool is_retry, ContextId ctx);
  bool release_available_cached_blocks(const AllocParams& p);
  bool release_cached_blocks();
  void release_blocks(BlockPool& pool);
  void release_block(Block* b);
  void unmap_block(Block* b);
  void release_expandable_segment(Block* b);
  void garbage_collect_cached_blocks();
  bool should_split(const Block* b, size_t size, bool expandable_active) const;
  Block* alloc_found_block(AllocParams& p, size_t orig_size, ContextId ctx, bool split);
  void free_block(Block* b);
  size_t try_merge_blocks(Block* dst, Block* src, BlockPool& pool);
  Block* find_expandable_block(StreamId stream, BlockPool* pool, size_t size);
  bool map_block(Block* to_map, size_t size, ContextId ctx);
  Block* try_allocate_expandable_block(StreamId stream, BlockPool* pool, size_t size, ContextId ctx);
  [[noreturn]] void throw_oom(const AllocParams& p, size_t orig_size, ContextId ctx);
  void set_fraction_locked(double fraction);

  Block* new_block(StreamId s, size_t size, BlockPool* pool, uintptr_t ptr) {
    return new (block_arena_.take()) Block(s, size, pool, ptr);
  }
  void delete_block(Block* b) {
    b->~Block();
    block_arena_.give(b);
  }
  void record(TraceAction a, uintptr_t addr, uint64_t size, uint64_t block_size, StreamId stream, ContextId ctx) {
    if (record_history_) trace_.push({virtual_time_ns_locked(), a, addr, size, block_size, stream, ctx});
  }
  uint64_t virtual_time_ns_locked() const { return host_ns_ + device_->busy_ns(); }
  void publish() {
    allocated_now_.store(static_cast<uint64_t>(stats_.allocated_bytes[kAggregate].current), std::memory_order_relaxed);
    reserved_now_.store(static_cast<uint64_t>(stats_.reserved_bytes[kAggregate].current), std::memory_order_relaxed);
  }

  std::shared_ptr<Device> device_;
  int device_index_;
  mutable std::mutex mu_;
  AllocatorSettings settings_;
  DeviceStats stats_;
  NodeArena node_arena_;  // declared before the pools that draw from it
  NodeArena block_arena_;
  BlockPool large_blocks_;
  BlockPool small_blocks_;
  PtrMap allocated_;  // address -> allocated block
  std::vector<std::unique_ptr<ExpandableSegment>> expandable_segments_;
  size_t total_allocated_memory_ = 0;  // bytes obtained from the device
  std::optional<uint64_t> allowed_memory_maximum_;
  bool record_history_ = false;
  TraceRing trace_;
  ContextTable contexts_;
  uint64_t host_ns_ = 0;
  uint64_t host_op_ns_ = 150;
  std::atomic<uint64_t> allocated_now_{0};
  std::atomic<uint64_t> reserved_now_{0};
};

}  // namespace vramlab::alloc
