// Module init: one registration call per area (devices, allocator, engine, runner).
#include "addon/bindings.h"

static Napi::Object InitVramlab(Napi::Env env, Napi::Object exports) {
  vramlab::addon::registerDevices(env, exports);
  vramlab::addon::registerRunner(env, exports);
  vramlab::addon::registerAllocator(env, exports);
  vramlab::addon::registerEngine(env, exports);
  vramlab::addon::registerDist(env, exports);
  return exports;
}

NODE_API_MODULE(vramlab, InitVramlab)
