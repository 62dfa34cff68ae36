#pragma once
// A CPU (reference kernels) or sim engine session over the caching allocator, for tests.
#include <memory>

#include "allocator/caching_allocator.h"
#include "engine/backends/allocator_memory.h"
#include "engine/backends/backend.h"
#include "engine/core/context.h"

namespace vramlab::enginetest {

struct EngineSession {
  std::shared_ptr<vramlab::Device> device;
  std::shared_ptr<vramlab::alloc::CachingAllocator> allocator;
  std::unique_ptr<vramlab::engine::AllocatorMemory> memory;
  std::unique_ptr<vramlab::engine::EngineContext> ctx;
  std::unique_ptr<vramlab::engine::ContextGuard> guard;

  explicit EngineSession(bool cpu, const std::string& device_id = "sim:h200-141gb") {
    device = std::shared_ptr<vramlab::Device>(vramlab::open_device(device_id));
    allocator = std::make_shared<vramlab::alloc::CachingAllocator>(device);
    memory = std::make_unique<vramlab::engine::AllocatorMemory>(allocator);
    auto be = cpu ? vramlab::engine::make_cpu_backend() : vramlab::engine::make_sim_backend(device->info());
    ctx = std::make_unique<vramlab::engine::EngineContext>(be, memory.get(), device->info());
    guard = std::make_unique<vramlab::engine::ContextGuard>(*ctx);
  }
  int64_t allocated() const { return memory->memory_allocated(); }
};

}  // namespace vramlab::enginetest
