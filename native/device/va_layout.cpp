#include "device/va_layout.h"

#include <algorithm>
#include <iterator>

namespace vramlab {

VaLayout::VaLayout(uintptr_t base, uint64_t span) : base_(base), span_(span) {
  origin_ = base_ + span_ - kAbove;
  free_.emplace(origin_, kFirst);
  free_.emplace(origin_ + kContext, kAbove - kContext);
  lowest_ = origin_ - kStartup;
}

void VaLayout::driver_use(DriverUse u, int thread, const Occupied& occupied) {
  const DriverTake& t = driver_take(u);
  if (u != DriverUse::FirstKernel) driver_use(DriverUse::FirstKernel, 0, occupied);
  // NCCL's range moves only once its communicator has placed it
  if (u == DriverUse::NcclReload && !used_.count({int(DriverUse::NcclInit), -1})) return;
  if (!used_.emplace(int(u), t.per_thread ? thread : -1).second) return;
  if (u == DriverUse::NcclInit || u == DriverUse::NcclReload) return nccl(u);
  const size_t mib = size_t(1) << 20;
  for (size_t done = 0; done < t.mib; done += t.piece_mib) {
    const uintptr_t va = take(t.piece_mib * mib, occupied);
    if (u == DriverUse::FirstReduction) reduction_va_ = va;
  }
  if (u == DriverUse::FirstReduction) give(origin_ - kStartupHandedOver, kStartupHandedOver);
}

void VaLayout::nccl(DriverUse u) {
  const size_t mib = size_t(1) << 20;
  if (u == DriverUse::NcclInit) {
    free_.clear();  // channels (2 MiB each), kernels and the proxy's first buffers fill every hole
    if (lowest_ > at_mib(kNcclLowest)) lowest_ = at_mib(kNcclLowest);
    if (reduction_va_) give(reduction_va_, (driver_take(DriverUse::FirstReduction).mib - 2) * mib);
    give(at_mib(kNcclHole), size_t(kNcclHoleMib) * mib);
    return;
  }
  if (!used_.count({int(DriverUse::NcclInit), -1})) return;     // moves only what init placed
  const bool untouched_below = lowest_ == at_mib(kNcclLowest);  // nothing placed below the heap's end since
  if (lowest_ > at_mib(kNcclMovedLowest)) lowest_ = at_mib(kNcclMovedLowest);
  if (untouched_below) give(at_mib(kNcclTailLo), size_t(kNcclTailHi - kNcclTailLo) * mib);
  give(at_mib(kNcclFreedLo), size_t(kNcclFreedHi - kNcclFreedLo) * mib);
}

uintptr_t VaLayout::take(size_t bytes, const Occupied& occupied) {
  const size_t need = align_up(bytes);
  for (auto it = free_.begin(); it != free_.end(); ++it) {
    if (it->second >= need) {
      uintptr_t va = it->first;
      size_t rest = it->second - need;
      free_.erase(it);
      if (rest) free_.emplace(va + need, rest);
      return va;
    }
  }
  // The driver reserves whole 32 MiB units (a 150 MiB cudaMalloc grows its reservation by
  // 160 MiB) and puts the allocation at the bottom; the rest is free for later requests.
  const size_t chunk = (need + kChunk - 1) / kChunk * kChunk;
  for (;;) {
    if (lowest_ < base_ + chunk) return 0;
    const uintptr_t below = occupied ? occupied(lowest_ - chunk, lowest_) : lowest_;
    if (below >= lowest_) break;
    lowest_ = below - below % kAlign;  // step below what the caller placed
  }
  lowest_ -= chunk;
  if (chunk > need) give(lowest_ + need, chunk - need);
  return lowest_;
}

void VaLayout::carve(uintptr_t va, size_t bytes) {
  const size_t need = align_up(bytes);
  auto it = free_.upper_bound(va);
  if (it != free_.begin()) --it;
  while (it != free_.end() && it->first < va + need) {
    uintptr_t start = it->first;
    size_t len = it->second;
    if (start + len <= va) {
      ++it;
      continue;
    }
    it = free_.erase(it);
    if (start < va) free_.emplace(start, va - start);
    if (start + len > va + need) free_.emplace(va + need, start + len - (va + need));
  }
}

void VaLayout::give(uintptr_t va, size_t bytes) {
  size_t len = align_up(bytes);
  auto next = free_.lower_bound(va);
  if (next != free_.end() && next->first == va + len) {  // merge with the range after
    len += next->second;
    next = free_.erase(next);
  }
  if (next != free_.begin()) {  // merge with the range before
    auto prev = std::prev(next);
    if (prev->first + prev->second == va) {
      prev->second += len;
      return;
    }
  }
  free_.emplace(va, len);
}

}  // namespace vramlab
