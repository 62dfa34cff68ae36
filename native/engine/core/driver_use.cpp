#include "engine/core/driver_use.h"

#include "engine/backends/allocator_memory.h"
#include "engine/core/context.h"

namespace vramlab::engine {

void driver_use(DriverUse u) {
  EngineContext* ctx = current_context_or_null();
  if (!ctx) return;
  auto* mem = dynamic_cast<AllocatorMemory*>(&ctx->memory());
  if (!mem) return;  // a rounding or CPU memory model has no address layout
  apply_driver_use(mem->allocator().device(), u, int(thread_role()));
}

}  // namespace vramlab::engine
