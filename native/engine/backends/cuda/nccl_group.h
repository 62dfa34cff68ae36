#pragma once
// One rank of a real data-parallel job on cuda:<rank>, its collectives through NCCL on the
// CUDA backend's stream (so they are ordered with the kernels that produce and read the
// tensors, and the caching allocator sees no other stream). NCCL's own buffers are
// cudaMalloc'ed by NCCL, outside the caching allocator: what engine/parallel/nccl.h models.
#include <cstdint>
#include <memory>
#include <string>

#include "engine/backends/cuda/nccl_loader.h"
#include "engine/parallel/process_group.h"

namespace vramlab::engine::cuda {

// Device memory in use (cudaMemGetInfo: total - free) around the group's start, in bytes.
// The deltas are NCCL's footprint on this rank: the communicator, then what its first
// all-reduce, broadcast, all-gather and reduce-scatter connect (NCCL_RUNTIME_CONNECT=0
// connects everything at init). DDP uses the first two, FSDP2 the last two.
struct NcclFootprint {
  int64_t before_init = 0;  // context and the group's scratch, before ncclCommInitRank
  int64_t after_init = 0;   // after ncclCommInitRank
  int64_t after_first_all_reduce = 0;
  int64_t after_first_broadcast = 0;
  int64_t after_first_all_gather = 0;
  int64_t after_first_reduce_scatter = 0;
  int nccl_version = 0;
};

// Rank 0 makes the id the other ranks join with (NCCL's bootstrap root lives in this process).
bool nccl_unique_id(NcclUniqueId* id, std::string* why);

// Selects cuda:<rank>, joins the communicator and runs one all-reduce, broadcast,
// all-gather and reduce-scatter on a private cudaMalloc buffer (as dist_protocol.py's
// warm-up all_reduce, and so the footprint counts every collective DDP and FSDP2 use).
// Null with the reason in *why.
std::unique_ptr<ProcessGroup> make_nccl_group(int rank, int world, const NcclUniqueId& id, NcclFootprint* fp,
                                              std::string* why);

}  // namespace vramlab::engine::cuda
