#pragma once
// DistributedDataParallel (torch/nn/parallel/distributed.py and c10d's Reducer, PyTorch
// 2.11) as the memory of one rank sees it:
// - construction: _verify_param_shape_across_processes (small metadata tensors), then
//   _sync_module_states: parameters and buffers broadcast in 250 MiB coalesced buckets
//   (a bucket of several tensors is flattened into one new block, at most two in flight);
//   then the Reducer allocates one flat gradient bucket per dtype holding every parameter
//   (find_unused_parameters and static_graph off: the first iteration's limit is
//   sys.maxsize);
// - every forward broadcasts the module's buffers the same way (broadcast_buffers);
// - backward: after a parameter's AccumulateGrad runs, its gradient is copied (divided by
//   the world size) into its bucket view; with gradient_as_bucket_view the .grad becomes
//   that view and the gradient AccumulateGrad made is freed; a full bucket is all-reduced
//   in place on NCCL's stream; once every bucket is launched, the final callback copies
//   each bucket view back into .grad (or clones it where .grad is unset);
// - the second forward rebuilds the buckets once in the order gradients became ready in
//   the first backward, bucket_cap_mb each (the first bucket too: the protocol passes
//   bucket_cap_mb): two small index broadcasts, the old buckets dropped, the new ones
//   allocated.
// What PyTorch leaves to timing: ProcessGroupNCCL keeps each collective's tensors on its
// Work until the watchdog thread (which wakes on a timer) sees it completed; DDP never
// waits on the Work itself, so the first iteration's buckets stay allocated after the
// rebuild until the watchdog next runs: at once, or after the last reading. `hold`
// chooses the side; the two bound every reading after the rebuild.
#include <memory>
#include <vector>

#include "engine/core/context.h"
#include "engine/models/model.h"
#include "engine/parallel/process_group.h"

namespace vramlab::engine {

struct DdpOptions {
  int64_t world = 1;
  size_t bucket_bytes_cap = size_t(25) << 20;
  bool gradient_as_bucket_view = false;
  // true: collective Works keep their tensors to the end of the run (the watchdog never
  // ran in time); false: released as soon as nothing else holds them.
  bool hold = false;
  // A real job's rank: the broadcasts and bucket all-reduces run through it, in place on
  // the tensors allocated here (null: the simulated device, memory only).
  ProcessGroup* group = nullptr;
};

class Ddp;

// Wraps a model already on the device: the construction-time collectives and the
// Reducer's first buckets are allocated here; hooks on the model and its parameters'
// gradient accumulators do the rest.
std::shared_ptr<Ddp> distributed_data_parallel(Model& model, const DdpOptions& o);

class Ddp {
 public:
  ~Ddp();
  struct Impl;
  std::unique_ptr<Impl> impl;
};

// compute_bucket_assignment_by_size for tensors of one dtype: consecutive runs closed once
// their bytes reach the current limit (the next limit applies after each closed bucket,
// the last one repeats). Returns index lists into `bytes`.
std::vector<std::vector<size_t>> ddp_bucket_assignment(const std::vector<size_t>& bytes,
                                                       const std::vector<size_t>& limits);

}  // namespace vramlab::engine
