#include "device/driver_takes.h"

#include "device/cuda_device.h"
#include "device/sim_device.h"

namespace vramlab {

namespace {
// Sizes: where each take's pieces went in the heap between two aten ops, found by filling
// the heap's free ranges with 2 MiB cudaMallocs right after the op before and after it, in
// fresh processes of hf_protocol.py / torch_protocol_finetune.py (h100_driver_takes.json
// "stages"); cudaMemGetInfo around every op named the ops ("takes"). Kernel code comes in
// 2 MiB pages, each placed lowest first (the cuDNN handle's 8 MiB split 4 + 4 over two
// holes); handles and reservations are single ranges (a 64 MiB handle skipped a 20 MiB hole).
constexpr DriverTake kTakes[kDriverUses] = {
    {"first kernel launch", 2, 2, false},
    {"cuBLAS kernels", 2, 2, false},
    {"cuBLAS handle", 64, 64, true},
    {"cuBLASLt", 64, 64, false},
    {"first reduction kernel", 506, 506, false},
    {"cuDNN handle", 8, 2, true},
    {"cuDNN attention fp16 kernels", 2, 2, false},
    {"cuBLAS fp16 gemm kernels", 2, 2, false},
    {"first scan kernel", 4, 2, false},
    {"NCCL communicator init", 0, 2, false},  // ranges, not pieces: VaLayout::nccl_init
    {"NCCL's range moved lower", 0, 2, false},
};
}  // namespace

const DriverTake& driver_take(DriverUse u) { return kTakes[int(u)]; }

void apply_driver_use(Device& d, DriverUse u, int thread) {
  if (auto* sim = dynamic_cast<SimDevice*>(&d)) {
    sim->driver_use(u, thread);
    return;
  }
  (void)cuda_driver_use(d, u, thread);
}

}  // namespace vramlab
