#pragma once
// The engine tells the device when it first uses a library or kernel family, at the moment
// PyTorch's process would: the driver's own take then lands in the device's address layout
// (device/driver_takes.h) between the same segments as in PyTorch's process.
#include "device/driver_takes.h"

namespace vramlab::engine {

// On the current context's device, for the calling thread's role (forward or backward).
void driver_use(DriverUse u);

}  // namespace vramlab::engine
