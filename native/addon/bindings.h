#pragma once
// Each area of the engine registers its functions and classes on the module's exports.
#include <napi.h>

namespace vramlab::addon {
void registerDevices(Napi::Env env, Napi::Object exports);
void registerRunner(Napi::Env env, Napi::Object exports);
void registerAllocator(Napi::Env env, Napi::Object exports);
void registerEngine(Napi::Env env, Napi::Object exports);
void registerDist(Napi::Env env, Napi::Object exports);
}  // namespace vramlab::addon
