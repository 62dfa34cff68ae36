#pragma once
// NCCL's device memory per rank, outside PyTorch's caching allocator: the communicator's
// channel buffers and proxy state, allocated when the process group runs its first
// collective (torch creates the communicator lazily). Measured on 2x H100 80GB (NVLink,
// NCCL 2.28.9, PyTorch 2.11; test/refs/measured/h100x2_nccl_footprint.json) as
// mem_get_info's used bytes minus memory_reserved(): 846 MiB after the first all-reduce /
// all-gather / reduce-scatter with NCCL's defaults (4 MiB more after a broadcast), 1102 MiB
// with NCCL_RUNTIME_CONNECT=0. Only world 2 is measured: larger worlds use the same figure
// (an estimate; ring and tree channels keep buffers per peer, so it grows with the world).
// The engine's own ranks (vramlab_dist, test/refs/measured/h100x2_ddp_nccl.json) measure
// NCCL alone at 870 MiB (1126 with NCCL_RUNTIME_CONNECT=0): 20 MiB more at communicator
// creation than PyTorch's process showed; this models PyTorch's.
#include <cstdint>

namespace vramlab::engine {

inline int64_t nccl_device_bytes(int64_t world) { return world > 1 ? int64_t(846) << 20 : 0; }

}  // namespace vramlab::engine
