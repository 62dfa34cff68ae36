#pragma once
// Real CUDA GPUs (compiled only with VRAMLAB_HAVE_CUDA; otherwise these find nothing).
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

}  // namespace vramlab
