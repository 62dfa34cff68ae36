#include "addon/bindings.h"
#include "device/device.h"

#ifdef VRAMLAB_HAVE_CUDA
#include <cuda_runtime.h>
#endif

namespace vramlab::addon {

namespace {

Napi::Object toJs(Napi::Env env, const DeviceInfo& d) {
  auto o = Napi::Object::New(env);
  o.Set("id", d.id);
  o.Set("kind", d.kind);
  o.Set("name", d.name);
  o.Set("total", double(d.total));  // exact: device sizes are far below 2^53
  o.Set("free", double(d.free));
  o.Set("context", double(d.context));
  o.Set("contextSource", d.context_source);
  o.Set("contextNote", d.context_note);
  o.Set("ordinal", d.ordinal);
  o.Set("memBandwidthGBs", d.mem_bandwidth_gbs);
  o.Set("fp32Tflops", d.fp32_tflops);
  o.Set("bf16Tflops", d.bf16_tflops);
  return o;
}

Napi::Value ListDevices(const Napi::CallbackInfo& info) {
  auto list = list_devices();
  auto arr = Napi::Array::New(info.Env(), list.size());
  for (size_t i = 0; i < list.size(); ++i) arr.Set(uint32_t(i), toJs(info.Env(), list[i]));
  return arr;
}

Napi::Value BuildInfo(const Napi::CallbackInfo& info) {
  auto o = Napi::Object::New(info.Env());
  o.Set("version", VRAMLAB_VERSION);
#ifdef VRAMLAB_HAVE_CUDA
  o.Set("cuda", true);
  o.Set("cudaRuntime", CUDART_VERSION);
#else
  o.Set("cuda", false);
  o.Set("cudaRuntime", 0);
#endif
  return o;
}

}  // namespace

void registerDevices(Napi::Env env, Napi::Object exports) {
  exports.Set("listDevices", Napi::Function::New(env, ListDevices, "listDevices"));
  exports.Set("buildInfo", Napi::Function::New(env, BuildInfo, "buildInfo"));
}

}  // namespace vramlab::addon
