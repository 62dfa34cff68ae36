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
#include <set>
#include <utility>

#include "device/driver_takes.h"

namespace vramlab {

class VaLayout {
 public:
  static constexpr size_t kAlign = size_t(2) << 20;   // segments start 2 MiB aligned
  static constexpr size_t kChunk = size_t(32) << 20;  // the heap grows downward by whole chunks
  // A fresh process's heap (h100_va_layout_probe.json "sizes", a bare process): the first
  // cudaMalloc at the origin, the context's memory above it to +74 MiB, then room to +98;
  // below the origin a 414 MiB startup range the driver holds, so the first chunk that
  // anything needs goes below it. The driver hands the startup range's top 404 MiB to the
  // heap when the first reduction kernel loads (DriverUse::FirstReduction).
  static constexpr size_t kFirst = size_t(2) << 20;                // [origin, origin + 2 MiB): free
  static constexpr size_t kContext = size_t(74) << 20;             // [origin + 2, origin + 74): the context's
  static constexpr size_t kAbove = size_t(98) << 20;               // [origin + 74, origin + 98): free
  static constexpr size_t kStartup = size_t(414) << 20;            // [origin - 414, origin): held
  static constexpr size_t kStartupHandedOver = size_t(404) << 20;  // its top, freed later

  // The layout inside [base, base + span): the origin 98 MiB below the top.
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
  // The driver's own take at a library's or kernel family's first use (driver_takes.h):
  // its pieces placed as take() places segments, once per process or once per thread
  // (a per-thread use names its thread); the first use of anything is a kernel launch.
  void driver_use(DriverUse u, int thread = 0, const Occupied& occupied = nullptr);

  // NCCL's address space at world 2 on rank 0, MiB from the origin (h100x2_nccl_layout.json,
  // the heap filled with 2 MiB cudaMallocs after the first all_reduce and after DDP's
  // constructor): after init the heap ends at -2718 with a 14 MiB hole at -1868 and the
  // first reduction's range free; the move takes down to -3422 and frees [-2558, -1868)
  // and [-2728, -2718).
  static constexpr int64_t kNcclLowest = -2718, kNcclHole = -1868, kNcclHoleMib = 14;
  static constexpr int64_t kNcclMovedLowest = -3422, kNcclFreedLo = -2558, kNcclFreedHi = -1868;
  static constexpr int64_t kNcclTailLo = -2728, kNcclTailHi = -2718;

  uintptr_t base() const { return base_; }
  uintptr_t origin() const { return origin_; }
  uint64_t span() const { return span_; }
  static size_t align_up(size_t v) { return (v + kAlign - 1) / kAlign * kAlign; }

 private:
  uintptr_t base_;
  uint64_t span_;
  uintptr_t origin_;                    // where a fresh process's first cudaMalloc lands
  std::map<uintptr_t, size_t> free_;    // unused ranges in the regions handed out so far
  uintptr_t lowest_;                    // the lowest region's start; new chunks go below
  std::set<std::pair<int, int>> used_;  // driver uses taken: (use, thread or -1)
  uintptr_t reduction_va_ = 0;          // the first reduction's range (NCCL hands it back)
  void nccl(DriverUse u);
  uintptr_t at_mib(int64_t mib) const { return uintptr_t(int64_t(origin_) + mib * (int64_t(1) << 20)); }
};

}  // namespace vramlab
