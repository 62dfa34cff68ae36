#pragma once
// The collectives data parallelism runs, for a rank of a real multi-process job. DDP and
// FSDP2 call them at the sites PyTorch's Reducer, _sync_module_states and FSDP2's
// foreach_all_gather / foreach_reduce launch theirs; with no group
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
  // all_gather_into_tensor: out (world * in.numel() elements) holds every rank's `in`,
  // rank-major; FSDP2 passes its own slice of out as `in` (in place).
  virtual void all_gather_into_tensor(const Tensor& out, const Tensor& in) = 0;
  // reduce_scatter_tensor: out (in.numel() / world elements) = this rank's chunk of the
  // mean (avg) or sum of every rank's `in`.
  virtual void reduce_scatter_tensor(const Tensor& out, const Tensor& in, bool avg) = 0;
  // Every rank's bytes of t (contiguous), rank-major, on the host; taken outside the
  // caching allocator (after the readings: what a sharded model's fingerprint needs).
  // Empty where tensors hold no data.
  virtual std::vector<uint8_t> gather_to_host(const Tensor& t) = 0;
  // A hash of the tensors' bytes after every queued kernel finished (0 where tensors hold
  // no data): equal on every rank when the ranks hold the same values.
  virtual uint64_t fingerprint(const std::vector<Tensor>& ts) = 0;

  // What the rank launched: the DDP hooks' count, checked against the bucket plan.
  struct Counts {
    int64_t all_reduce = 0, broadcast = 0, all_gather = 0, reduce_scatter = 0;
    int64_t all_reduce_bytes = 0, broadcast_bytes = 0;
    int64_t all_gather_bytes = 0, reduce_scatter_bytes = 0;  // of the output / the input
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
  void count_all_gather(const Tensor& out) {
    ++counts_.all_gather;
    counts_.all_gather_bytes += int64_t(out.nbytes());
  }
  void count_reduce_scatter(const Tensor& in) {
    ++counts_.reduce_scatter;
    counts_.reduce_scatter_bytes += int64_t(in.nbytes());
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
  void all_gather_into_tensor(const Tensor& out, const Tensor&) override { count_all_gather(out); }
  void reduce_scatter_tensor(const Tensor&, const Tensor& in, bool) override { count_reduce_scatter(in); }
  std::vector<uint8_t> gather_to_host(const Tensor&) override { return {}; }
  uint64_t fingerprint(const std::vector<Tensor>&) override { return 0; }

 private:
  int rank_, world_;
};

// A group of one on a backend with data (CPU, or one CUDA GPU without NCCL): the mean,
// broadcast and all-gather of one rank leave values as they are, the reduce-scatter
// copies; the fingerprint hashes the tensors' bytes. A single-GPU run read back as a rank
// (losses, final parameters) to compare a real job with.
class LocalGroup : public ProcessGroup {
 public:
  int rank() const override { return 0; }
  int world() const override { return 1; }
  void all_reduce_mean(const Tensor& t) override { count_all_reduce(t); }
  void broadcast(const Tensor& t, int) override { count_broadcast(t); }
  void all_gather_into_tensor(const Tensor& out, const Tensor& in) override;
  void reduce_scatter_tensor(const Tensor& out, const Tensor& in, bool avg) override;
  std::vector<uint8_t> gather_to_host(const Tensor& t) override;
  uint64_t fingerprint(const std::vector<Tensor>& ts) override;
};

// FNV-1a, the parameters' fingerprint on every group.
inline uint64_t fnv1a(const uint8_t* p, size_t n, uint64_t h = 14695981039346656037ull) {
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

}  // namespace vramlab::engine
