#pragma once
// Memory outside the caching allocator whose blocks can hold a backend's data: FSDP2 builds
// its model there (PyTorch's meta device) and, on a backend with data, keeps the initial
// values until they are copied into the shards. Plain cudaMalloc/cudaFree on the CUDA
// backend's GPU (the device's own segments live in their own reserved range, so its
// address layout does not move); sizes only elsewhere (the CPU backend attaches host
// memory to any block).
#include <memory>

#include "engine/core/memory.h"

namespace vramlab::engine {

class Backend;

std::unique_ptr<MemoryBackend> make_scratch_memory(Backend& be);

}  // namespace vramlab::engine
