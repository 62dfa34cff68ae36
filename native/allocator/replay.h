#pragma once
// Runs a recorded alloc/free/empty_cache sequence through a fresh allocator in one
// call (used by the JS binding, the fixture tests and the benchmark).
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "allocator/caching_allocator.h"

namespace vramlab::alloc {

// kOomAttempt replays a recorded 'oom' event: the allocation PyTorch tried and gave up on
// (after freeing cached blocks and retrying). It is tried again; if it now fits, the block
// is returned at once, since the recorded program went on without it.
enum class ReplayOpKind : uint8_t { kAlloc = 0, kFree = 1, kEmptyCache = 2, kOomAttempt = 3 };

// Allocations alive when the trace began belong to seeded segments: a SeedBlock that is
// allocated carries, at the same position in seed_ids, the replay id later frees use.

// Column views over caller-owned arrays (typed arrays on the JS side). For a free,
// ids[i] names the allocation to release: the id its alloc op carried.
struct ReplayInput {
  const uint8_t* ops = nullptr;
  const uint64_t* sizes = nullptr;  // bytes requested (alloc ops)
  const uint32_t* ids = nullptr;
  const uint32_t* streams = nullptr;  // optional; stream 0 when null
  size_t count = 0;
  // Optional: the addresses the recorded run's cudaMallocs returned, in order. A sim
  // device hands them out again so best-fit ties break as they did in the recording.
  const uint64_t* segment_addresses = nullptr;
  size_t segment_count = 0;
  // Optional: the allocator state when the trace began (CachingAllocator::seed), and one
  // id per seeded block in segment then block order (0 for free blocks).
  const std::vector<SeedSegment>* seed = nullptr;
  const std::vector<uint32_t>* seed_ids = nullptr;
};

// Owning form, convenient in C++.
struct ReplayTrace {
  std::vector<uint8_t> ops;
  std::vector<uint64_t> sizes;
  std::vector<uint32_t> ids;
  std::vector<uint32_t> streams;
  std::vector<uint64_t> segment_addresses;
  void alloc(uint32_t id, uint64_t size, uint32_t stream = 0) { push(ReplayOpKind::kAlloc, size, id, stream); }
  void free(uint32_t id) { push(ReplayOpKind::kFree, 0, id, 0); }
  void empty_cache() { push(ReplayOpKind::kEmptyCache, 0, 0, 0); }
  ReplayInput view() const {
    return {ops.data(),
            sizes.data(),
            ids.data(),
            streams.data(),
            ops.size(),
            segment_addresses.data(),
            segment_addresses.size()};
  }

 private:
  void push(ReplayOpKind k, uint64_t size, uint32_t id, uint32_t stream) {
    ops.push_back(static_cast<uint8_t>(k));
    sizes.push_back(size);
    ids.push_back(id);
    streams.push_back(stream);
  }
};

// Parses the text form "a <id> <size> <stream>" / "f <id>" / "e", one op per line
// ('#' starts a comment). "s <address> <size>" lines are not ops: they record the
// address a cudaMalloc returned in the recorded run (see segment_addresses).
// Throws std::invalid_argument naming the bad line.
ReplayTrace parse_replay_text(const std::string& text);

struct ReplayOptions {
  std::string device_id = "sim:h200-141gb";
  std::string settings;                   // PYTORCH_CUDA_ALLOC_CONF string
  std::optional<uint64_t> capacity;       // cap in bytes (set_capacity_limit)
  std::optional<double> memory_fraction;  // set_per_process_memory_fraction
  bool record_history = false;
  size_t history_max_entries = 1u << 20;
  bool take_snapshot = false;
};

struct ReplayResult {
  uint64_t peak_allocated = 0;
  uint64_t peak_reserved = 0;
  // Reserved minus allocated bytes just after the op that first took reserved to its peak.
  uint64_t unallocated_at_peak = 0;
  int64_t num_device_alloc = 0;
  int64_t num_device_free = 0;
  int64_t num_ooms = 0;
  int64_t num_alloc_retries = 0;
  uint64_t virtual_time_ns = 0;
  std::vector<std::pair<std::string, int64_t>> memory_stats;
  int64_t first_oom_index = -1;  // op index of the first failed alloc
  std::string first_oom_message;
  // Each kOomAttempt op in order: its op index, whether it failed again, and the message.
  struct OomAttempt {
    size_t index = 0;
    bool failed = false;
    std::string message;
  };
  std::vector<OomAttempt> oom_attempts;
  std::vector<TraceEvent> history;
  std::optional<MemorySnapshot> snapshot;
};

// Applies in.segment_addresses to the allocator's device when it is a SimDevice.
// A failed alloc is counted and its id stays unallocated (a later free of it is skipped).
// Throws std::invalid_argument for malformed input (unknown op, double alloc of an id, ...).
ReplayResult replay(CachingAllocator& allocator, const ReplayInput& in, bool take_snapshot = false);
ReplayResult replay(const ReplayInput& in, const ReplayOptions& options);

}  // namespace vramlab::alloc
