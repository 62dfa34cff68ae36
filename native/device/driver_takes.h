#pragma once
// Address space the CUDA driver takes from the process's device heap outside PyTorch's
// allocator, at the first use of a library or kernel family: handles, lazily loaded
// kernel code (CUDA_MODULE_LOADING=LAZY), library reservations. They land in the same
// heap as cudaMalloc's segments (va_layout.h), lowest first, so they decide which holes
// later segments find. Measured on an H100 (driver 580.159.04, PyTorch 2.11.0+cu130):
// test/refs/measured/h100_driver_takes.json (README: "Where the driver's own memory goes").
#include <cstddef>

namespace vramlab {

enum class DriverUse {
  FirstKernel,     // the process's first kernel launch (PyTorch's first op on the GPU)
  CublasCode,      // cuBLAS's kernels, first gemm of the process
  CublasHandle,    // a cuBLAS handle: one per thread (getCurrentCUDABlasHandle)
  CublasLt,        // cuBLASLt's first matmul (address space only), after the handle's workspace
  FirstReduction,  // the first reduction kernel; the driver's startup region joins the heap
  CudnnHandle,     // a cuDNN handle with its SDPA graph: one per thread
  CudnnSdpaHalf,   // cuDNN attention's fp16 kernels, first use in the process
  CublasHalfGemm,  // cuBLAS's fp16 gemm kernels (non-Lt path), first use in the process
  FirstScan,       // the first scan kernel (cumsum)
  // NCCL at world > 1 (h100x2_nccl_layout.json): its communicator's init at the first
  // collective (channels, kernels, proxy buffers) fills every hole, hands the first
  // reduction's range back less its top page and leaves the heap 2718 MiB below the origin;
  // the next kernel family loaded after it moves a ~700 MiB range lower (NcclReload).
  NcclInit,
  NcclReload,
};
constexpr int kDriverUses = int(DriverUse::NcclReload) + 1;

struct DriverTake {
  const char* name;
  size_t mib;        // address space taken
  size_t piece_mib;  // taken as pieces of this size, each first fit at the lowest address
  bool per_thread;   // once per thread (handles) or once per process (kernel code)
};

const DriverTake& driver_take(DriverUse u);

class Device;
// Takes u's address space (once per process, or per thread for handles) on a device that places segments by the
// driver's layout (the simulated device; a CUDA device reserving its own range); nothing on others.
void apply_driver_use(Device& d, DriverUse u, int thread);

}  // namespace vramlab
