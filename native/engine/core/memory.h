#pragma once
// The engine's view of device memory: every tensor storage and workspace is one
// block from a MemoryBackend. The production backend is the caching allocator
// (backends/allocator_memory.h); RoundingMemory is a stand-in with PyTorch's 512 B
// rounding and no cache, used where no allocator is wanted.
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "engine/core/alloc_tag.h"

namespace vramlab::engine {

struct MemBlock {
  uintptr_t ptr = 0;
  size_t size = 0;       // block size as the allocator accounts it
  size_t requested = 0;  // bytes asked for
  explicit operator bool() const { return ptr != 0 || size != 0; }
};

class OutOfMemoryError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class MemoryBackend {
 public:
  virtual ~MemoryBackend() = default;
  virtual MemBlock allocate(size_t bytes, TagId tag) = 0;  // throws OutOfMemoryError
  virtual void release(const MemBlock& b) = 0;
  virtual int64_t memory_allocated() const = 0;
  virtual int64_t max_memory_allocated() const = 0;
  virtual int64_t memory_reserved() const = 0;
  virtual void reset_peak() = 0;
  virtual void empty_cache() {}
  virtual std::string memory_summary() const;
  // The CUDA stream new blocks are allocated for (the caching allocator keeps a pool per
  // stream: a block freed on one stream is not handed to another). 0: the default stream.
  virtual void set_stream(int) {}
  virtual int stream() const { return 0; }
};

// torch.cuda.stream(s) for allocations: blocks allocated inside come from s's pool.
class StreamScope {
 public:
  StreamScope(MemoryBackend& m, int s) : m_(m), saved_(m.stream()) { m_.set_stream(s); }
  ~StreamScope() { m_.set_stream(saved_); }
  StreamScope(const StreamScope&) = delete;
  StreamScope& operator=(const StreamScope&) = delete;

 private:
  MemoryBackend& m_;
  int saved_;
};

// 512-byte rounding, no caching: memory_allocated() as PyTorch's would read when
// no cached block is ever reused with an unsplit remainder.
class RoundingMemory : public MemoryBackend {
 public:
  MemBlock allocate(size_t bytes, TagId tag) override;
  void release(const MemBlock& b) override;
  int64_t memory_allocated() const override { return allocated_; }
  int64_t max_memory_allocated() const override { return peak_; }
  int64_t memory_reserved() const override { return allocated_; }
  void reset_peak() override { peak_ = allocated_; }

 private:
  int64_t allocated_ = 0, peak_ = 0;
  uintptr_t next_ = 0x7f0000000000ull;
};

inline size_t round_block_size(size_t bytes) { return bytes < 512 ? 512 : (bytes + 511) / 512 * 512; }

}  // namespace vramlab::engine
