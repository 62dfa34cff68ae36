#pragma once
// PyTorch's allocator statistics (c10 DeviceStats): names, meaning and the flat
// memory_stats() dictionary built from them.
#include <array>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace vramlab::alloc {

struct Stat {
  int64_t current = 0;
  int64_t peak = 0;
  int64_t allocated = 0;  // running sum of increases
  int64_t freed = 0;      // running sum of decreases

  void increase(int64_t n) {
    current += n;
    if (current > peak) peak = current;
    allocated += n;
  }
  void decrease(int64_t n) {
    current -= n;
    freed += n;
  }
  void reset_peak() { peak = current; }
  void reset_accumulated() { allocated = freed = 0; }
};

enum StatType : size_t { kAggregate = 0, kSmallPool = 1, kLargePool = 2, kNumStatTypes = 3 };
using StatArray = std::array<Stat, kNumStatTypes>;

struct DeviceStats {
  StatArray allocation;      // live allocations (count)
  StatArray segment;         // cudaMalloc'd segments (count)
  StatArray active;          // active blocks (count)
  StatArray inactive_split;  // free blocks inside split segments (count)
  StatArray allocated_bytes;
  StatArray reserved_bytes;
  StatArray active_bytes;
  StatArray inactive_split_bytes;
  StatArray requested_bytes;      // sizes as requested, before rounding
  int64_t num_alloc_retries = 0;  // mallocs retried after releasing all cached blocks
  int64_t num_ooms = 0;
  int64_t num_sync_all_streams = 0;
  int64_t num_device_alloc = 0;  // cudaMalloc + expandable page maps
  int64_t num_device_free = 0;   // cudaFree + expandable page unmaps
  Stat oversize_allocations;     // allocations >= max_split_size
  Stat oversize_segments;
  int64_t max_split_size = -1;  // -1: unlimited

  void reset_peak();
  void reset_accumulated();
};

// torch.cuda.memory_stats(): "allocated_bytes.all.current", ... sorted by key.
std::vector<std::pair<std::string, int64_t>> memory_stats_dict(const DeviceStats& s);

// c10's format_size: "512 bytes", "1.50 KiB", "400.00 MiB", "1.07 GiB".
std::string format_size(uint64_t size);

// torch.cuda.memory_summary(): the 75-column table.
std::string memory_summary(const DeviceStats& s, int device_index, bool abbreviated = false);

}  // namespace vramlab::alloc
