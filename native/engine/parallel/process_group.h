#pragma once
// The collectives data parallelism runs, for a rank of a real multi-process job. DDP calls
// them at the sites PyTorch's Reducer and _sync_module_states launch theirs; with no group
// (the simulated device) those sites only allocate what PyTorch allocates there. A group
// never allocates through the caching allocator: it works in place on tensors the
// simulation already holds, so a rank's readings are its simulated twin's.
#include <cstdint>
#include <vector>

#include "engine/core/tensor.h"

namespace vramlab::engine {

class ProcessGroup {
 public:
  virtual ~ProcessGroup() = default;
  virtual int rank() const = 0;
  virtual int world() const = 0;
  // In place, on the device's compute stream: t = the mean of t over the ranks (DDP's
  // bucket all-reduce; PyTorch divides each gradient by the world size while copying it
  // into the bucket and then sums).
  virtual void all_reduce_mean(const Tensor& t) = 0;
  // In place: every rank's t becomes the root's.
  virtual void broadcast(const Tensor& t, int root) = 0;
  // A hash of the tensors' bytes after every queued kernel finished (0 where tensors hold
  // no data): equal on every rank when the ranks hold the same values.
  virtual uint64_t fingerprint(const std::vector<Tensor>& ts) = 0;

  // What the rank launched: the DDP hooks' count, checked against the bucket plan.
  struct Counts {
    int64_t all_reduce = 0, broadcast = 0;
    int64_t all_reduce_bytes = 0, broadcast_bytes = 0;
  };
  const Counts& counts() const { return counts_; }

 protected:
  void count_all_reduce(const Tensor& t) {
    ++counts_.all_reduce;
    counts_.all_reduce_bytes += int64_t(t.nbytes());
  }
  void count_broadcast(const Tensor& t) {
    ++counts_.broadcast;
    counts_.broadcast_bytes += int64_t(t.nbytes());
  }

 private:
  Counts counts_;
};

// A group of ranks whose tensors hold no data (the simulated device, one process per
// rank): it counts what would be launched and moves nothing. The launcher's plumbing runs
// through it where no GPU is.
class CountingGroup : public ProcessGroup {
 public:
  CountingGroup(int rank, int world) : rank_(rank), world_(world) {}
  int rank() const override { return rank_; }
  int world() const override { return world_; }
  void all_reduce_mean(const Tensor& t) override { count_all_reduce(t); }
  void broadcast(const Tensor& t, int) override { count_broadcast(t); }
  uint64_t fingerprint(const std::vector<Tensor>&) override { return 0; }

 private:
  int rank_, world_;
};

}  // namespace vramlab::engine
