#pragma once
// FSDP2 (torch.distributed.fsdp.fully_shard) as the memory of one rank sees it:
// fully_shard on every block, then on the root, on a model built on the meta device.
// What lives where follows torch/distributed/fsdp/_fully_shard/ (PyTorch 2.11):
// - each parameter's shard is a padded flat block (dim 0 split in world chunks of
//   ceil(rows / world), every rank padded to that chunk), the optimizer sees the unpadded
//   local view; buffers are whole on every rank and keep their dtype (a CPU-made buffer
//   goes to the device at fully_shard, then to_empty gives it a new block); to_empty runs
//   once per module holding a parameter, so a tied weight's shard is allocated twice;
// - forward pre-hook: floating inputs cast to param_dtype, not in a checkpoint
//   recomputation (PyTorch's checkpoint then raises CheckpointError, and so does this);
// - unshard: the all-gather input (a flat copy in param_dtype, when one is set) and output
//   are allocated on the all-gather copy-in stream; the copy-out gives every parameter its
//   own unsharded block on the default stream; in forward the output stays alive until the
//   next group's copy-out (implicit prefetch), in backward it is freed at once;
// - reshard frees the unsharded blocks (after forward only with reshard_after_forward);
// - backward: the pre-backward hook on each group's output unshards it and prefetches the
//   group that ran forward before it; the post-backward hook on its input frees the
//   unsharded parameters, allocates the reduce-scatter input (reduce_dtype, default
//   stream), frees the unsharded gradients and allocates the reduce-scatter output on the
//   reduce-scatter stream, whose views become the sharded gradients; the input stays until
//   the next reduce-scatter; the root's gradients are reduced in the final callback.
// Streams are the caching allocator's: blocks freed on one are not reused by another.
// On a backend with data the same program moves the values: the shards hold rows of the
// parameters the unsharded build initialises, the copy-in/all-gather/copy-out and the
// copy-in/reduce-scatter run through the process group (a real job's NCCL ranks, a group
// of one, or none at world 1), the casts of the mixed-precision policy included.
#include <memory>
#include <string>
#include <vector>

#include "engine/core/context.h"
#include "engine/models/model.h"
#include "engine/parallel/process_group.h"

namespace vramlab::engine {

struct FsdpOptions {
  int64_t world = 1, rank = 0;
  bool reshard_after_forward = true;
  bool has_param_dtype = false, has_reduce_dtype = false;
  DType param_dtype = DType::Float32, reduce_dtype = DType::Float32;
  // A real job's rank (or a group of one): the all-gathers and reduce-scatters run through
  // it. Null: the simulated device (memory only), or world 1 on a backend with data.
  ProcessGroup* group = nullptr;
};

// Streams as the allocator sees them (ids are ours; only their distinctness matters).
enum FsdpStream : int { kDefaultStream = 0, kAllGatherCopyIn = 1, kReduceScatter = 3 };

class Fsdp;

// Builds the family on the meta device (parameters take no memory), applies fully_shard to
// each block and the root, then to_empty + init: the shards and buffers are allocated.
std::shared_ptr<Fsdp> fully_shard_model(const RunSpec& spec, const FsdpOptions& o, std::unique_ptr<Model>& model);

class Fsdp {
 public:
  // The sharded parameters (local views), in model.parameters() order: what the
  // optimizer is built over.
  const std::vector<Tensor>& sharded_parameters() const { return sharded_; }
  // FNV-1a over every parameter's full (unpadded) bytes in model.parameters() order,
  // gathered from the ranks through g outside the allocator: what a run without FSDP
  // hashes for the same values. 0 where tensors hold no data.
  uint64_t fingerprint(ProcessGroup& g) const;
  ~Fsdp();

  struct Impl;
  std::unique_ptr<Impl> impl;
  std::vector<Tensor> sharded_;
};

// Rows of dim 0 that `rank` holds of a parameter with `rows` rows (torch.chunk), and the
// padded chunk every rank allocates.
int64_t fsdp_local_rows(int64_t rows, int64_t world, int64_t rank);
int64_t fsdp_padded_rows(int64_t rows, int64_t world);

}  // namespace vramlab::engine
