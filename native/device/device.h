#pragma once
// Raw device memory: the one small interface every device implements (RMM's
// device_memory_resource in spirit). The caching allocator sits on top of it.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace vramlab {

struct DeviceInfo {
  std::string id;      // "sim:h100-80gb", "cuda:0"
  std::string kind;    // "sim" | "cuda"
  std::string name;    // "NVIDIA H100 80GB HBM3 (simulated)"
  uint64_t total = 0;  // bytes
  uint64_t free = 0;   // bytes
  // Bytes held outside the caching allocator: the CUDA context and library handles (a sim
  // preset's measured or estimated figure; on cuda:N, total - free - this device's segments,
  // which counts other processes too). The allocator can use at most total - context.
  uint64_t context = 0;
  // Where `context` comes from: "measured" (on that card) or "estimated", and a line saying how.
  std::string context_source;
  std::string context_note;
  int ordinal = 0;               // CUDA ordinal; 0 for sim
  double mem_bandwidth_gbs = 0;  // for the sim time model
  double fp32_tflops = 0;
  double bf16_tflops = 0;
};

class Device {
 public:
  virtual ~Device() = default;
  virtual DeviceInfo info() const = 0;

  // cudaMemGetInfo.
  virtual uint64_t total_memory() const = 0;
  virtual uint64_t free_memory() const = 0;

  // cudaMalloc/cudaFree. malloc returns 0 when the device is out of memory
  // (cudaErrorMemoryAllocation); any other failure throws std::runtime_error.
  virtual uintptr_t malloc(size_t bytes) = 0;
  virtual void free(uintptr_t ptr, size_t bytes) = 0;

  // Virtual memory management (cuMemAddressReserve / cuMemCreate+cuMemMap /
  // cuMemUnmap+cuMemRelease), used by expandable segments. map_pages maps
  // [va, va+bytes) as one physical allocation; unmap_pages takes exactly such a range
  // and does not wait for queued work (cuMemUnmap does not): callers synchronize first.
  virtual size_t granularity() const { return size_t(2) << 20; }
  virtual uintptr_t reserve_address(size_t bytes) = 0;
  virtual bool map_pages(uintptr_t va, size_t bytes) = 0;  // false on OOM
  virtual void unmap_pages(uintptr_t va, size_t bytes) = 0;
  virtual void release_address(uintptr_t va, size_t bytes) = 0;
  // Maps count pages of page bytes from va, each its own physical allocation, all or none
  // (false on OOM, nothing left mapped): PyTorch's ExpandableSegment::map, which creates
  // every handle, maps them and sets access once for the run (a real GPU overrides this).
  virtual bool map_page_run(uintptr_t va, size_t page, size_t count) {
    for (size_t i = 0; i < count; ++i) {
      if (map_pages(va + i * page, page)) continue;
      while (i--) unmap_pages(va + i * page, page);
      return false;
    }
    return true;
  }

  virtual void synchronize() {}

  // Takes over [ptr, ptr+bytes) as if cudaMalloc had returned it earlier: a replay that
  // starts from a recorded allocator state places its segments where they were. Only a
  // simulated device can do this; false when the range is taken or does not fit.
  virtual bool adopt(uintptr_t /*ptr*/, size_t /*bytes*/) { return false; }

  // Time spent in device memory calls so far, in ns: modelled on the sim device,
  // measured wall time on a real GPU. The allocator's virtual clock builds on it.
  virtual uint64_t busy_ns() const { return 0; }

  // The "Including non-PyTorch memory, this process has X memory in use. " part of
  // PyTorch's OOM message (from NVML on a real GPU); empty when unknown.
  virtual std::string process_memory_report() const { return ""; }
};

// All devices this machine offers: every simulated preset, then each CUDA GPU found.
std::vector<DeviceInfo> list_devices();

// "sim:h100-80gb", "sim:custom:24GiB", "sim:custom:1TiB@h100-80gb" (a preset's GPU at another size,
// no context), "sim:custom:1TiB@cuda:0" (that card's GPU), "cuda:0". Throws std::invalid_argument on an unknown id.
std::unique_ptr<Device> open_device(const std::string& id);

// "cuda:0" when a GPU is usable, else the default simulated preset.
std::string default_device_id();

}  // namespace vramlab
