#pragma once
// One expandable segment: a large reserved virtual range that grows by mapping
// physical pages of segment_size (2 MiB in the small pool, 20 MiB in the large one)
// and shrinks by unmapping wholly free pages (PyTorch's ExpandableSegment).
#include <cstddef>
#include <cstdint>
#include <vector>

#include "allocator/constants.h"
#include "device/device.h"

namespace vramlab::alloc {

struct SegmentRange {
  uintptr_t ptr;
  size_t size;
};

class ExpandableSegment {
 public:
  // Reserves address space for 1 1/8 of the device's total memory, like PyTorch.
  ExpandableSegment(Device* device, StreamId stream, size_t segment_size);
  ~ExpandableSegment();
  ExpandableSegment(const ExpandableSegment&) = delete;
  ExpandableSegment& operator=(const ExpandableSegment&) = delete;

  // Maps the pages covering [range.ptr, range.ptr + range.size); range.ptr must be
  // page aligned. Returns the mapped range, or size 0 when the device is out of memory.
  SegmentRange map(SegmentRange range);
  // Unmaps the pages lying wholly inside range. Returns what was unmapped.
  SegmentRange unmap(SegmentRange range);

  uintptr_t ptr() const { return ptr_; }
  size_t size() const { return max_handles_ * segment_size_; }
  size_t segment_size() const { return segment_size_; }
  size_t mapped_size() const { return mapped_size_; }
  StreamId stream() const { return stream_; }

 private:
  size_t num_segments(size_t bytes) const { return (bytes + segment_size_ - 1) / segment_size_; }
  size_t segment_left(uintptr_t p) const { return (p - ptr_) / segment_size_; }
  size_t segment_right(uintptr_t p) const { return num_segments(p - ptr_); }
  SegmentRange range_from(size_t begin, size_t end) const {
    return {ptr_ + segment_size_ * begin, segment_size_ * (end - begin)};
  }
  void unmap_handles(size_t begin, size_t end);
  void trim();

  Device* device_;
  StreamId stream_;
  size_t segment_size_;
  size_t max_handles_;
  uintptr_t ptr_ = 0;
  size_t mapped_size_ = 0;
  std::vector<bool> mapped_;  // one flag per page, trimmed of trailing unmapped pages
};

}  // namespace vramlab::alloc
