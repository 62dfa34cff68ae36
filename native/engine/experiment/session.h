#pragma once
// A run's device, caching allocator, backend and engine context, and the warm-up the
// protocols run before reading the base.
#include <memory>
#include <string>

#include "allocator/caching_allocator.h"
#include "engine/backends/allocator_memory.h"
#include "engine/core/context.h"

namespace vramlab::engine {

struct Session {
  std::shared_ptr<Device> device;
  std::shared_ptr<alloc::CachingAllocator> allocator;
  std::unique_ptr<AllocatorMemory> memory;
  std::unique_ptr<EngineContext> ctx;
};

// backend: "sim" | "cpu" | "cuda"; "" picks cuda for cuda:N devices and sim otherwise.
Session open_session(const std::string& device_id, const std::string& backend, const std::string& alloc_conf);

// "linear": an nn.Linear forward + backward (both threads' cuBLAS workspaces and the
// forward thread's cuBLASLt one); "matmul": a plain a @ a forward + backward.
void warm_up(const std::string& kind);

}  // namespace vramlab::engine
