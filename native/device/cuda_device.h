#pragma once
// Real CUDA GPUs (compiled only with VRAMLAB_HAVE_CUDA; otherwise these find nothing).
#include <cstdint>
#include <memory>
#include <vector>

#include "device/device.h"
#include "device/driver_takes.h"

namespace vramlab {

// Each usable CUDA GPU; empty (never throws) when there is no driver or no GPU.
std::vector<DeviceInfo> cuda_list_devices();

// Throws std::invalid_argument when the ordinal does not name a usable GPU.
std::unique_ptr<Device> cuda_open_device(int ordinal);

// The driver's take at a library's first use (driver_takes.h) on a CUDA device's layout;
// false when d is not one.
bool cuda_driver_use(Device& d, DriverUse u, int thread);

// The driver calls this process's CUDA devices made for segments, by kind, with their wall
// time: what a segment costs on the device side (vramlab_bench_allocator prints them per
// replay). All zero without CUDA.
enum class CudaCall : int {
  kAddressReserve,
  kAddressFree,
  kCreate,
  kMap,
  kSetAccess,
  kSynchronize,
  kUnmap,
  kRelease,
  kCudaMalloc,
  kCudaFree,
  kCount
};
struct CudaCallStats {
  uint64_t count[static_cast<int>(CudaCall::kCount)] = {};
  uint64_t ns[static_cast<int>(CudaCall::kCount)] = {};
};
const char* cuda_call_name(CudaCall call);  // the driver function's name, e.g. "cuMemSetAccess"
CudaCallStats cuda_call_stats();            // totals since the process started

}  // namespace vramlab
