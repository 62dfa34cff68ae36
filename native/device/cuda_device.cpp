// CUDA device: cudaMalloc/cudaFree from the static runtime, and the driver's virtual
// memory API (cuMem*) reached through cudaGetDriverEntryPoint so nothing links libcuda.
#include "device/cuda_device.h"

#ifdef VRAMLAB_HAVE_CUDA

#include <cuda.h>
#include <cuda_runtime.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <mutex>
#include <stdexcept>
#include <string>
#include <unordered_map>

namespace vramlab {

namespace {

using PFN_Reserve = CUresult(CUDAAPI*)(CUdeviceptr*, size_t, size_t, CUdeviceptr, unsigned long long);
using PFN_AddrFree = CUresult(CUDAAPI*)(CUdeviceptr, size_t);
using PFN_Create = CUresult(CUDAAPI*)(CUmemGenericAllocationHandle*, size_t, const CUmemAllocationProp*, unsigned long long);
using PFN_Release = CUresult(CUDAAPI*)(CUmemGenericAllocationHandle);
using PFN_Map = CUresult(CUDAAPI*)(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle, unsigned long long);
using PFN_Unmap = CUresult(CUDAAPI*)(CUdeviceptr, size_t);
using PFN_SetAccess = CUresult(CUDAAPI*)(CUdeviceptr, size_t, const CUmemAccessDesc*, size_t);
using PFN_Granularity = CUresult(CUDAAPI*)(size_t*, const CUmemAllocationProp*, CUmemAllocationGranularity_flags);

struct DriverApi {
  PFN_Reserve reserve = nullptr;
  PFN_AddrFree addr_free = nullptr;
  PFN_Create create = nullptr;
  PFN_Release release = nullptr;
  PFN_Map map = nullptr;
  PFN_Unmap unmap = nullptr;
  PFN_SetAccess set_access = nullptr;
  PFN_Granularity granularity = nullptr;
  bool ok = false;

  static const DriverApi& get() {
    static const DriverApi api = load();
    return api;
  }

 private:
  template <typename F>
  static bool sym(const char* name, F& out) {
    void* fn = nullptr;
    cudaDriverEntryPointQueryResult q{};
#if CUDART_VERSION >= 12050
    cudaError_t e = cudaGetDriverEntryPointByVersion(name, &fn, 12000, cudaEnableDefault, &q);
#else
    cudaError_t e = cudaGetDriverEntryPoint(name, &fn, cudaEnableDefault, &q);
#endif
    if (e != cudaSuccess || q != cudaDriverEntryPointSuccess || !fn) {
      (void)cudaGetLastError();
      return false;
    }
    out = reinterpret_cast<F>(fn);
    return true;
  }
  static DriverApi load() {
    DriverApi a;
    a.ok = sym("cuMemAddressReserve", a.reserve) && sym("cuMemAddressFree", a.addr_free) &&
           sym("cuMemCreate", a.create) && sym("cuMemRelease", a.release) && sym("cuMemMap", a.map) &&
           sym("cuMemUnmap", a.unmap) && sym("cuMemSetAccess", a.set_access) &&
           sym("cuMemGetAllocationGranularity", a.granularity);
    return a;
  }
};

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    throw std::runtime_error(std::string(what) + " failed: " + cudaGetErrorString(e));
  }
}
void check_drv(CUresult r, const char* what) {
  if (r != CUDA_SUCCESS) throw std::runtime_error(std::string(what) + " failed with CUresult " + std::to_string(static_cast<int>(r)));
}

const DriverApi& vmm() {
  const DriverApi& a = DriverApi::get();
  if (!a.ok) throw std::runtime_error("CUDA virtual memory management entry points are unavailable (driver too old?)");
  return a;
}

class CudaDevice : public Device {
 public:
  explicit CudaDevice(int ordinal) : ordinal_(ordinal) {
    cudaDeviceProp prop{};
    check(cudaGetDeviceProperties(&prop, ordinal_), "cudaGetDeviceProperties");
    name_ = prop.name;
    total_ = prop.totalGlobalMem;
    int clock_khz = 0, bus_bits = 0;
    if (cudaDeviceGetAttribute(&clock_khz, cudaDevAttrMemoryClockRate, ordinal_) != cudaSuccess ||
        cudaDeviceGetAttribute(&bus_bits, cudaDevAttrGlobalMemoryBusWidth, ordinal_) != cudaSuccess)
      (void)cudaGetLastError();
    bandwidth_gbs_ = 2.0 * clock_khz * 1e3 * (bus_bits / 8.0) / 1e9;
  }

  DeviceInfo info() const override {
    DeviceInfo d;
    d.id = "cuda:" + std::to_string(ordinal_);
    d.kind = "cuda";
    d.name = name_;
    d.ordinal = ordinal_;
    mem_info(&d.free, &d.total);
    d.mem_bandwidth_gbs = bandwidth_gbs_;
    return d;
  }
  uint64_t total_memory() const override { return total_; }
  uint64_t free_memory() const override {
    uint64_t f = 0, t = 0;
    mem_info(&f, &t);
    return f;
  }

  uintptr_t malloc(size_t bytes) override {
    Timer t(busy_ns_);
    set_device();
    void* p = nullptr;
    cudaError_t e = cudaMalloc(&p, bytes);
    if (e == cudaErrorMemoryAllocation) {
      (void)cudaGetLastError();  // forgive, like PyTorch's alloc_block
      return 0;
    }
    check(e, "cudaMalloc");
    return reinterpret_cast<uintptr_t>(p);
  }
  void free(uintptr_t ptr, size_t) override {
    Timer t(busy_ns_);
    set_device();
    check(cudaFree(reinterpret_cast<void*>(ptr)), "cudaFree");
  }

  size_t granularity() const override {
    const DriverApi& a = vmm();
    CUmemAllocationProp prop = page_prop();
    size_t g = 0;
    check_drv(a.granularity(&g, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM), "cuMemGetAllocationGranularity");
    return g;
  }
  uintptr_t reserve_address(size_t bytes) override {
    Timer t(busy_ns_);
    CUdeviceptr va = 0;
    check_drv(vmm().reserve(&va, bytes, 0, 0, 0), "cuMemAddressReserve");
    return static_cast<uintptr_t>(va);
  }
  bool map_pages(uintptr_t va, size_t bytes) override {
    Timer t(busy_ns_);
    const DriverApi& a = vmm();
    CUmemAllocationProp prop = page_prop();
    CUmemGenericAllocationHandle h = 0;
    CUresult r = a.create(&h, bytes, &prop, 0);
    if (r == CUDA_ERROR_OUT_OF_MEMORY) return false;
    check_drv(r, "cuMemCreate");
    r = a.map(static_cast<CUdeviceptr>(va), bytes, 0, h, 0);
    if (r != CUDA_SUCCESS) {
      a.release(h);
      check_drv(r, "cuMemMap");
    }
    CUmemAccessDesc desc{};
    desc.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    desc.location.id = ordinal_;
    desc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    check_drv(a.set_access(static_cast<CUdeviceptr>(va), bytes, &desc, 1), "cuMemSetAccess");
    std::lock_guard<std::mutex> g(mu_);
    handles_[va] = h;
    return true;
  }
  void unmap_pages(uintptr_t va, size_t bytes) override {
    Timer t(busy_ns_);
    // cuMemUnmap does not wait for queued work the way cudaFree does.
    synchronize();
    CUmemGenericAllocationHandle h = 0;
    {
      std::lock_guard<std::mutex> g(mu_);
      auto it = handles_.find(va);
      if (it == handles_.end()) throw std::runtime_error("unmap_pages of a range that is not mapped");
      h = it->second;
      handles_.erase(it);
    }
    const DriverApi& a = vmm();
    check_drv(a.unmap(static_cast<CUdeviceptr>(va), bytes), "cuMemUnmap");
    check_drv(a.release(h), "cuMemRelease");
  }
  void release_address(uintptr_t va, size_t bytes) override {
    Timer t(busy_ns_);
    check_drv(vmm().addr_free(static_cast<CUdeviceptr>(va), bytes), "cuMemAddressFree");
  }
  void synchronize() override {
    set_device();
    check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  }
  uint64_t busy_ns() const override { return busy_ns_.load(std::memory_order_relaxed); }

 private:
  struct Timer {  // adds the wall time of a device call to the virtual clock
    explicit Timer(std::atomic<uint64_t>& acc) : acc_(acc), t0_(std::chrono::steady_clock::now()) {}
    ~Timer() {
      auto dt = std::chrono::steady_clock::now() - t0_;
      acc_.fetch_add(static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(dt).count()),
                     std::memory_order_relaxed);
    }
    std::atomic<uint64_t>& acc_;
    std::chrono::steady_clock::time_point t0_;
  };

  void set_device() const { check(cudaSetDevice(ordinal_), "cudaSetDevice"); }
  void mem_info(uint64_t* free, uint64_t* total) const {
    set_device();
    size_t f = 0, t = 0;
    check(cudaMemGetInfo(&f, &t), "cudaMemGetInfo");
    *free = f;
    *total = t;
  }
  CUmemAllocationProp page_prop() const {
    CUmemAllocationProp prop{};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = ordinal_;
    return prop;
  }

  int ordinal_;
  std::string name_;
  uint64_t total_ = 0;
  double bandwidth_gbs_ = 0;
  std::atomic<uint64_t> busy_ns_{0};
  std::mutex mu_;
  std::unordered_map<uintptr_t, CUmemGenericAllocationHandle> handles_;
};

}  // namespace

std::vector<DeviceInfo> cuda_list_devices() {
  std::vector<DeviceInfo> out;
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    (void)cudaGetLastError();
    return out;  // no driver / no GPU: silently nothing
  }
  for (int i = 0; i < count; ++i) {
    try {
      out.push_back(CudaDevice(i).info());
    } catch (const std::exception&) {
      // A GPU we cannot query is not offered.
    }
  }
  return out;
}

std::unique_ptr<Device> cuda_open_device(int ordinal) {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    (void)cudaGetLastError();
    count = 0;
  }
  if (ordinal < 0 || ordinal >= count)
    throw std::invalid_argument("no CUDA device cuda:" + std::to_string(ordinal) + " (" + std::to_string(count) + " found)");
  return std::make_unique<CudaDevice>(ordinal);
}

}  // namespace vramlab

#else  // !VRAMLAB_HAVE_CUDA

#include <stdexcept>
#include <string>

namespace vramlab {
std::vector<DeviceInfo> cuda_list_devices() { return {}; }
std::unique_ptr<Device> cuda_open_device(int ordinal) {
  throw std::invalid_argument("no CUDA device cuda:" + std::to_string(ordinal) + " (built without CUDA)");
}
}  // namespace vramlab

#endif
