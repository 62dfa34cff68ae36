// CUDA device: segments are physical memory mapped at the addresses the shared layout
// (va_layout.h) gives a fresh process's cudaMallocs, inside one range reserved at first
// use, so the caching allocator breaks address ties on cuda:0 exactly as on the simulated
// device (and as PyTorch did when measured), whatever else this process has allocated.
// The driver's virtual memory API (cuMem*) is reached through cudaGetDriverEntryPoint so
// nothing links libcuda; without it, plain cudaMalloc/cudaFree.
#include "device/cuda_device.h"

#ifdef VRAMLAB_HAVE_CUDA

#include <cuda.h>
#include <cuda_runtime.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <iterator>
#include <map>
#include <memory>
#include <cstdio>
#include <mutex>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "device/va_layout.h"

namespace vramlab {

namespace {

using PFN_Reserve = CUresult(CUDAAPI*)(CUdeviceptr*, size_t, size_t, CUdeviceptr, unsigned long long);
using PFN_AddrFree = CUresult(CUDAAPI*)(CUdeviceptr, size_t);
using PFN_Create = CUresult(CUDAAPI*)(CUmemGenericAllocationHandle*, size_t, const CUmemAllocationProp*,
                                      unsigned long long);
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
  if (r != CUDA_SUCCESS)
    throw std::runtime_error(std::string(what) + " failed with CUresult " + std::to_string(static_cast<int>(r)));
}

const DriverApi& vmm() {
  const DriverApi& a = DriverApi::get();
  if (!a.ok) throw std::runtime_error("CUDA virtual memory management entry points are unavailable (driver too old?)");
  return a;
}

constexpr int kCalls = static_cast<int>(CudaCall::kCount);
std::atomic<uint64_t> g_call_count[kCalls];
std::atomic<uint64_t> g_call_ns[kCalls];

// Counts one driver call and its wall time (cuda_call_stats).
class Call {
 public:
  explicit Call(CudaCall c) : i_(static_cast<int>(c)), t0_(std::chrono::steady_clock::now()) {}
  ~Call() {
    auto dt = std::chrono::steady_clock::now() - t0_;
    g_call_count[i_].fetch_add(1, std::memory_order_relaxed);
    g_call_ns[i_].fetch_add(static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(dt).count()),
                            std::memory_order_relaxed);
  }

 private:
  int i_;
  std::chrono::steady_clock::time_point t0_;
};

// Address ranges of closed devices, by ordinal and span. Address space only: every page in
// them was unmapped and released, so they hold no memory; the next device on the card takes
// one instead of reserving its own (a reservation and its release cost ~15 us a device).
class RangePool {
 public:
  static RangePool& get() {
    static RangePool* pool = new RangePool;  // never destroyed: ranges live until exit
    return *pool;
  }
  uintptr_t take(int ordinal, uint64_t span) {
    std::lock_guard<std::mutex> g(mu_);
    auto [lo, hi] = free_.equal_range({ordinal, span});
    if (lo == hi) return 0;
    auto it = std::prev(hi);  // the one given back last (emplace puts equal keys last)
    uintptr_t va = it->second;
    free_.erase(it);
    return va;
  }
  void give(int ordinal, uint64_t span, uintptr_t va) {
    std::lock_guard<std::mutex> g(mu_);
    free_.emplace(std::make_pair(ordinal, span), va);
  }

 private:
  std::mutex mu_;
  std::multimap<std::pair<int, uint64_t>, uintptr_t> free_;
};

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
    // Memory in use that is not this device's segments: the context and library handles this
    // process created, and any other process's memory (unavailable to the allocator all the same).
    uint64_t mapped = 0;
    {
      std::lock_guard<std::mutex> g(mu_);
      for (const auto& [va, seg] : handles_) mapped += seg.bytes;
    }
    d.context = d.total - d.free > mapped ? d.total - d.free - mapped : 0;
    d.context_source = "measured";
    d.context_note = "total - free on this card now, less this process's segments (other processes included)";
    d.mem_bandwidth_gbs = bandwidth_gbs_;
    return d;
  }
  uint64_t total_memory() const override { return total_; }
  uint64_t free_memory() const override {
    uint64_t f = 0, t = 0;
    mem_info(&f, &t);
    return f;
  }

  ~CudaDevice() override {
    if (!range_) return;
    try {
      synchronize();
      const DriverApi& a = vmm();
      bool clean = true;
      for (auto& [va, seg] : handles_) {  // segments never freed (a leak upstream): unmap them
        clean = a.unmap(static_cast<CUdeviceptr>(va), seg.bytes) == CUDA_SUCCESS && clean;
        a.release(seg.handle);
      }
      if (clean) RangePool::get().give(ordinal_, layout_->span(), range_);
    } catch (const std::exception&) {
      // the context is going away; nothing to report to
    }
  }

  uintptr_t malloc(size_t bytes) override {
    Timer t(busy_ns_);
    set_device();
    if (bytes == 0) return 0;
    if (placed()) {
      uintptr_t va = 0;
      {
        std::lock_guard<std::mutex> g(mu_);
        va = layout_->take(bytes);
      }
      if (va == 0) throw std::runtime_error("cudaMalloc: the reserved address range is exhausted");
      if (map_at(va, VaLayout::align_up(bytes), 1)) return va;
      std::lock_guard<std::mutex> g(mu_);
      layout_->give(va, bytes);
      return 0;  // out of memory, like cudaErrorMemoryAllocation
    }
    void* p = nullptr;
    cudaError_t e;
    {
      Call c(CudaCall::kCudaMalloc);
      e = cudaMalloc(&p, bytes);
    }
    if (e == cudaErrorMemoryAllocation) {
      (void)cudaGetLastError();  // forgive, like PyTorch's alloc_block
      return 0;
    }
    check(e, "cudaMalloc");
    return reinterpret_cast<uintptr_t>(p);
  }
  // The libraries' real takes happen outside the range; the layout takes the same
  // address space at the same moment, so segments land at the simulated device's offsets.
  void driver_use(DriverUse u, int thread) {
    if (!placed()) return;
    std::lock_guard<std::mutex> g(mu_);
    layout_->driver_use(u, thread);
  }
  void free(uintptr_t ptr, size_t bytes) override {
    Timer t(busy_ns_);
    set_device();
    if (placed()) {
      synchronize();  // cudaFree waits for queued work; cuMemUnmap does not
      unmap_at(ptr, VaLayout::align_up(bytes));
      std::lock_guard<std::mutex> g(mu_);
      layout_->give(ptr, bytes);
      return;
    }
    Call c(CudaCall::kCudaFree);
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
    if (placed()) {  // expandable segments' ranges come from the same layout
      std::lock_guard<std::mutex> g(mu_);
      uintptr_t va = layout_->take(bytes);
      if (va == 0) throw std::runtime_error("cuMemAddressReserve: the reserved address range is exhausted");
      return va;
    }
    CUdeviceptr va = 0;
    Call c(CudaCall::kAddressReserve);
    check_drv(vmm().reserve(&va, bytes, 0, 0, 0), "cuMemAddressReserve");
    return static_cast<uintptr_t>(va);
  }
  bool map_pages(uintptr_t va, size_t bytes) override {
    Timer t(busy_ns_);
    return map_at(va, bytes, 1);
  }
  bool map_page_run(uintptr_t va, size_t page, size_t count) override {
    Timer t(busy_ns_);
    return map_at(va, page, count);
  }
  void unmap_pages(uintptr_t va, size_t bytes) override {
    Timer t(busy_ns_);
    unmap_at(va, bytes);  // the caller waited for queued work (device.h)
  }
  void release_address(uintptr_t va, size_t bytes) override {
    Timer t(busy_ns_);
    if (placed()) {
      std::lock_guard<std::mutex> g(mu_);
      layout_->give(va, bytes);
      return;
    }
    Call c(CudaCall::kAddressFree);
    check_drv(vmm().addr_free(static_cast<CUdeviceptr>(va), bytes), "cuMemAddressFree");
  }
  void synchronize() override {
    set_device();
    Call c(CudaCall::kSynchronize);
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

  // Whether segments go at the layout's addresses: the VMM API is there and its page
  // size divides the layout's alignment. Reserves the range on first use: 16 x the
  // card's memory of address space (expandable segments reserve about a card each).
  bool placed() {
    std::call_once(range_once_, [this] {
      const DriverApi& a = DriverApi::get();
      if (!a.ok || std::getenv("VRAMLAB_CUDA_DRIVER_ADDRESSES")) return;
      CUmemAllocationProp prop = page_prop();
      size_t g = 0;
      if (a.granularity(&g, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM) != CUDA_SUCCESS || g == 0 ||
          VaLayout::kAlign % g != 0)
        return;
      const uint64_t span = VaLayout::align_up(size_t(total_) * 16);
      range_ = RangePool::get().take(ordinal_, span);
      if (!range_) {
        CUdeviceptr base = 0;
        Call c(CudaCall::kAddressReserve);
        if (a.reserve(&base, span, VaLayout::kAlign, 0, 0) != CUDA_SUCCESS) return;
        range_ = static_cast<uintptr_t>(base);
      }
      layout_ = std::make_unique<VaLayout>(range_, span);
    });
    return range_ != 0;
  }
  // count physical allocations of page bytes mapped from va, then access set once for the
  // run: PyTorch's ExpandableSegment::map call for call. (Not a speed-up: on an H100 one
  // cuMemSetAccess over n mappings takes as long as n calls, ~25 us a mapping, most of a
  // segment's device time; docs/gpu-runs/2026-11-26-h100-replay.txt.) All or nothing;
  // false when out of memory.
  bool map_at(uintptr_t va, size_t page, size_t count) {
    const DriverApi& a = vmm();
    CUmemAllocationProp prop = page_prop();
    std::vector<CUmemGenericAllocationHandle> hs;
    hs.reserve(count);
    size_t mapped = 0;
    auto undo = [&] {
      for (size_t i = 0; i < mapped; ++i) a.unmap(static_cast<CUdeviceptr>(va + i * page), page);
      for (CUmemGenericAllocationHandle h : hs) a.release(h);
    };
    for (size_t i = 0; i < count; ++i) {
      CUmemGenericAllocationHandle h = 0;
      CUresult r;
      {
        Call c(CudaCall::kCreate);
        r = a.create(&h, page, &prop, 0);
      }
      if (r == CUDA_ERROR_OUT_OF_MEMORY) {
        undo();
        return false;
      }
      if (r != CUDA_SUCCESS) {
        undo();
        check_drv(r, "cuMemCreate");
      }
      hs.push_back(h);
    }
    for (; mapped < count; ++mapped) {
      CUresult r;
      {
        Call c(CudaCall::kMap);
        r = a.map(static_cast<CUdeviceptr>(va + mapped * page), page, 0, hs[mapped], 0);
      }
      if (r != CUDA_SUCCESS) {
        undo();
        check_drv(r, "cuMemMap");
      }
    }
    CUmemAccessDesc desc{};
    desc.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    desc.location.id = ordinal_;
    desc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    CUresult r;
    {
      Call c(CudaCall::kSetAccess);
      r = a.set_access(static_cast<CUdeviceptr>(va), page * count, &desc, 1);
    }
    if (r != CUDA_SUCCESS) {
      undo();
      check_drv(r, "cuMemSetAccess");
    }
    std::lock_guard<std::mutex> g(mu_);
    for (size_t i = 0; i < count; ++i) handles_[va + i * page] = {hs[i], page};
    return true;
  }
  void unmap_at(uintptr_t va, size_t bytes) {
    CUmemGenericAllocationHandle h = 0;
    {
      std::lock_guard<std::mutex> g(mu_);
      auto it = handles_.find(va);
      if (it == handles_.end()) throw std::runtime_error("unmap of a range that is not mapped");
      h = it->second.handle;
      handles_.erase(it);
    }
    const DriverApi& a = vmm();
    {
      Call c(CudaCall::kUnmap);
      check_drv(a.unmap(static_cast<CUdeviceptr>(va), bytes), "cuMemUnmap");
    }
    Call c(CudaCall::kRelease);
    check_drv(a.release(h), "cuMemRelease");
  }

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
  mutable std::mutex mu_;
  struct Mapped {
    CUmemGenericAllocationHandle handle;
    size_t bytes;
  };
  std::unordered_map<uintptr_t, Mapped> handles_;
  std::once_flag range_once_;
  uintptr_t range_ = 0;  // the reserved range the layout places segments in; 0: cudaMalloc
  std::unique_ptr<VaLayout> layout_;
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

const char* cuda_call_name(CudaCall call) {
  static const char* const names[kCalls] = {
      "cuMemAddressReserve",   "cuMemAddressFree", "cuMemCreate",  "cuMemMap",   "cuMemSetAccess",
      "cudaDeviceSynchronize", "cuMemUnmap",       "cuMemRelease", "cudaMalloc", "cudaFree"};
  int i = static_cast<int>(call);
  return i >= 0 && i < kCalls ? names[i] : "?";
}

CudaCallStats cuda_call_stats() {
  CudaCallStats s;
  for (int i = 0; i < kCalls; ++i) {
    s.count[i] = g_call_count[i].load(std::memory_order_relaxed);
    s.ns[i] = g_call_ns[i].load(std::memory_order_relaxed);
  }
  return s;
}

std::unique_ptr<Device> cuda_open_device(int ordinal) {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    (void)cudaGetLastError();
    count = 0;
  }
  if (ordinal < 0 || ordinal >= count)
    throw std::invalid_argument("no CUDA device cuda:" + std::to_string(ordinal) + " (" + std::to_string(count) +
                                " found)");
  return std::make_unique<CudaDevice>(ordinal);
}

bool cuda_driver_use(Device& d, DriverUse u, int thread) {
  auto* c = dynamic_cast<CudaDevice*>(&d);
  if (c) c->driver_use(u, thread);
  return c != nullptr;
}

}  // namespace vramlab

#else  // !VRAMLAB_HAVE_CUDA

#include <stdexcept>
#include <string>

namespace vramlab {
std::vector<DeviceInfo> cuda_list_devices() { return {}; }
const char* cuda_call_name(CudaCall) { return "?"; }
CudaCallStats cuda_call_stats() { return {}; }
std::unique_ptr<Device> cuda_open_device(int ordinal) {
  throw std::invalid_argument("no CUDA device cuda:" + std::to_string(ordinal) + " (built without CUDA)");
}
bool cuda_driver_use(Device&, DriverUse, int) { return false; }
}  // namespace vramlab

#endif
