#pragma once
// Where a fresh process's cudaMallocs land: the CUDA driver's address layout as PyTorch
// traces on an H100 (driver 580) show it. The caching allocator breaks ties between
// equal free blocks by address, so this order decides which block a request reuses and
// so the allocated and reserved bytes; both devices place segments by it: the simulated
// device as its addresses, the CUDA device by mapping physical memory at the same
// offsets in a range it reserves. One layout, so cuda:0 and sim decide alike.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>

namespace vramlab {

class VaLayout {
 public:
  static constexpr size_t kAlign = size_t(2) << 20;          // segments start 2 MiB aligned
  static constexpr size_t kFirstRegion = size_t(400) << 20;  // the first segments, going up
  static constexpr size_t kChunk = size_t(32) << 20;         // then chunks below the lowest

  // The layout inside [base, base + span): the first region at the top.
  VaLayout(uintptr_t base, uint64_t span);

  // The lowest start of a range the caller placed itself (a snapshot's adopted or
  // scripted segment) that overlaps [lo, hi), or hi when none does.
  using Occupied = std::function<uintptr_t(uintptr_t lo, uintptr_t hi)>;

  // First fit among free ranges, lowest address first; else a new chunk of bytes rounded
  // up to kChunk directly below the lowest so far (and below any range the caller placed
  // there), used from its start. Returns 0 when the span is exhausted.
  uintptr_t take(size_t bytes, const Occupied& occupied = nullptr);
  // Takes the free parts of [va, va + bytes) out of the free ranges (a scripted address).
  void carve(uintptr_t va, size_t bytes);
  // Returns a range to the free ranges, merged with its neighbours.
  void give(uintptr_t va, size_t bytes);

  uintptr_t base() const { return base_; }
  uint64_t span() const { return span_; }
  static size_t align_up(size_t v) { return (v + kAlign - 1) / kAlign * kAlign; }

 private:
  uintptr_t base_;
  uint64_t span_;
  std::map<uintptr_t, size_t> free_;  // unused ranges in the regions handed out so far
  uintptr_t lowest_;                  // the lowest region's start; new chunks go below
};

}  // namespace vramlab
