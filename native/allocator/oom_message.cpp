// The out-of-memory error, worded exactly as PyTorch's malloc() words it.
#include "allocator/caching_allocator.h"

namespace vramlab::alloc {

void CachingAllocator::throw_oom(const AllocParams& p, size_t orig_size, ContextId ctx) {
  const uint64_t device_free = device_->free_memory();
  const uint64_t device_total = device_->total_memory();
  std::string allowed_info;
  if (allowed_memory_maximum_) allowed_info = format_size(*allowed_memory_maximum_) + " allowed; ";
  const std::string proc_info = device_->process_memory_report();

  record(TraceAction::kOom, device_free, p.size(), p.alloc_size, p.stream(), ctx);
  stats_.num_ooms += 1;
  publish();

  const auto allocated = static_cast<uint64_t>(stats_.allocated_bytes[kAggregate].current);
  const auto reserved = static_cast<uint64_t>(stats_.reserved_bytes[kAggregate].current);
  std::string msg =
      "CUDA out of memory. Tried to allocate " + format_size(p.alloc_size) + ". GPU " + std::to_string(device_index_) +
      " has a total capacity of " + format_size(device_total) + " of which " + format_size(device_free) + " is free. " +
      proc_info + allowed_info + "Of the allocated memory " + format_size(allocated) +
      " is allocated by PyTorch, and " + format_size(reserved - allocated) +
      " is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try "
      "setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See "
      "documentation for Memory Management  "
      "(https://docs.pytorch.org/docs/stable/notes/cuda.html#optimizing-memory-usage-with-pytorch-cuda-alloc-conf)";
  throw OutOfMemoryError(msg, orig_size, p.alloc_size, device_total, device_free, allowed_memory_maximum_, allocated,
                         reserved);
}

}  // namespace vramlab::alloc
