#pragma once
// Allocation history: a bounded ring buffer of trace events (PyTorch's
// _record_memory_history / TraceEntry) and the table of interned caller contexts.
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "allocator/constants.h"

namespace vramlab::alloc {

enum class TraceAction : uint8_t {
  kAlloc,         // block handed out (size = requested, block_size = rounded block)
  kFree,          // block returned (PyTorch's free_completed; no deferred frees here)
  kSegmentAlloc,  // cudaMalloc
  kSegmentFree,   // cudaFree
  kSegmentMap,    // expandable segment grew by mapping pages
  kSegmentUnmap,  // expandable segment pages unmapped
  kOom,           // malloc failed (addr = device free bytes, like PyTorch)
  kEmptyCache,    // empty_cache() (size = bytes returned to the device)
};
const char* trace_action_name(TraceAction a);

struct TraceEvent {
  uint64_t time_ns = 0;  // allocator virtual clock
  TraceAction action = TraceAction::kAlloc;
  uintptr_t addr = 0;
  uint64_t size = 0;        // requested bytes (alloc/free/oom), segment or range bytes otherwise
  uint64_t block_size = 0;  // rounded block size (alloc/free), alloc size (oom)
  StreamId stream = 0;
  ContextId context = 0;
};

// Keeps the newest max_entries events (PyTorch's RingBuffer<TraceEntry>).
class TraceRing {
 public:
  void set_max_entries(size_t n);
  size_t max_entries() const { return max_entries_; }
  void push(const TraceEvent& e) {
    if (buf_.size() < max_entries_) {
      buf_.push_back(e);
    } else {
      buf_[next_++] = e;
      if (next_ == max_entries_) next_ = 0;
    }
  }
  std::vector<TraceEvent> entries() const;  // oldest first
  size_t size() const { return buf_.size(); }
  void clear();

 private:
  size_t max_entries_ = 1;
  size_t next_ = 0;
  std::vector<TraceEvent> buf_;
};

// Caller tags ("op|phase|module.path") interned to small ids so events stay POD.
class ContextTable {
 public:
  ContextTable();
  ContextId intern(std::string_view name);
  std::string name(ContextId id) const;
  size_t size() const;

 private:
  mutable std::mutex mu_;
  std::vector<std::string> names_;
  std::unordered_map<std::string, ContextId> ids_;
};

}  // namespace vramlab::alloc
