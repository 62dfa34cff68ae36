#include "allocator/expandable_segment.h"

#include <stdexcept>

namespace vramlab::alloc {

ExpandableSegment::ExpandableSegment(Device* device, StreamId stream, size_t segment_size)
    : device_(device), stream_(stream), segment_size_(segment_size) {
  if (segment_size_ % device_->granularity() != 0)
    throw std::runtime_error("expandable segment page size is not a multiple of the device granularity");
  uint64_t total = device_->total_memory();
  max_handles_ = num_segments(total + total / 8);
  ptr_ = device_->reserve_address(segment_size_ * max_handles_);
}

ExpandableSegment::~ExpandableSegment() {
  try {
    if (mapped_size_) device_->synchronize();  // queued kernels may still use the pages
    for (size_t i = 0; i < mapped_.size(); ++i)
      if (mapped_[i]) device_->unmap_pages(ptr_ + i * segment_size_, segment_size_);
    device_->release_address(ptr_, segment_size_ * max_handles_);
  } catch (...) {
    // Teardown must not throw; the device is going away with us.
  }
}

SegmentRange ExpandableSegment::map(SegmentRange range) {
  size_t begin = segment_left(range.ptr);
  size_t end = segment_right(range.ptr + range.size);
  if (ptr_ + begin * segment_size_ != range.ptr)
    throw std::logic_error("expandable map: range start is not page aligned");
  if (end > max_handles_) throw std::logic_error("expandable map: range beyond the reserved address space");
  if (begin == end) return range_from(begin, end);
  if (mapped_.size() < end) mapped_.resize(end, false);
  for (size_t i = begin; i < end; ++i)
    if (mapped_[i]) throw std::logic_error("expandable map: page already mapped");
  // All pages or none: out of memory, the device gives back what it took, as PyTorch
  // releases the handles it created.
  if (!device_->map_page_run(ptr_ + begin * segment_size_, segment_size_, end - begin)) {
    trim();
    return range_from(begin, begin);
  }
  for (size_t i = begin; i < end; ++i) mapped_[i] = true;
  mapped_size_ += (end - begin) * segment_size_;
  return range_from(begin, end);
}

SegmentRange ExpandableSegment::unmap(SegmentRange range) {
  size_t begin = segment_right(range.ptr);
  size_t end = segment_left(range.ptr + range.size);
  if (begin >= end) return {range.ptr, 0};
  unmap_handles(begin, end);
  mapped_size_ -= (end - begin) * segment_size_;
  return range_from(begin, end);
}

void ExpandableSegment::unmap_handles(size_t begin, size_t end) {
  device_->synchronize();  // once for the run (as PyTorch): unmapping does not wait for queued kernels
  for (size_t i = begin; i < end; ++i) {
    if (i >= mapped_.size() || !mapped_[i]) throw std::logic_error("expandable unmap: page not mapped");
    device_->unmap_pages(ptr_ + i * segment_size_, segment_size_);
    mapped_[i] = false;
  }
  trim();
}

void ExpandableSegment::trim() {
  while (!mapped_.empty() && !mapped_.back()) mapped_.pop_back();
}

}  // namespace vramlab::alloc
