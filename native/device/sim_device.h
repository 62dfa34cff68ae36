#pragma once
// Simulated GPU: capacity accounting, GPU-looking virtual addresses placed by the
// driver's layout (va_layout.h; no host memory behind them) and a latency model for
// device memory calls on a virtual clock.
#include <algorithm>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "device/device.h"
#include "device/va_layout.h"

namespace vramlab {

// Rough costs of CUDA memory calls (ns). Caching matters because these are
// microseconds to milliseconds while a cached hit is a few hundred ns of host work.
struct SimLatencyModel {
  uint64_t malloc_base_ns = 40'000;  // cudaMalloc
  uint64_t malloc_per_gib_ns = 800'000;
  uint64_t free_base_ns = 30'000;  // cudaFree (synchronizes the device)
  uint64_t free_per_gib_ns = 200'000;
  uint64_t map_base_ns = 25'000;  // cuMemCreate + cuMemMap + cuMemSetAccess
  uint64_t map_per_gib_ns = 600'000;
  uint64_t unmap_base_ns = 20'000;  // cuMemUnmap + cuMemRelease
  uint64_t reserve_ns = 5'000;      // cuMemAddressReserve / Free
};

class SimDevice : public Device {
 public:
  // `context`: bytes the card holds outside the allocator from the start (CUDA context and
  // library handles), so cudaMalloc fails once used + context would pass total, as on a real card.
  SimDevice(std::string id, std::string name, uint64_t total, double bandwidth_gbs = 0, double fp32_tflops = 0,
            double bf16_tflops = 0, uint64_t context = 0);

  DeviceInfo info() const override;
  uint64_t total_memory() const override { return total_; }
  uint64_t free_memory() const override;
  uintptr_t malloc(size_t bytes) override;
  void free(uintptr_t ptr, size_t bytes) override;
  uintptr_t reserve_address(size_t bytes) override;
  bool map_pages(uintptr_t va, size_t bytes) override;
  void unmap_pages(uintptr_t va, size_t bytes) override;
  void release_address(uintptr_t va, size_t bytes) override;
  uint64_t busy_ns() const override;
  bool adopt(uintptr_t ptr, size_t bytes) override;
  std::string process_memory_report() const override;
  // The driver's take at a library's first use (driver_takes.h), placed by the layout.
  void driver_use(DriverUse u, int thread);

  void set_latency_model(const SimLatencyModel& m);
  // Addresses for the next cudaMallocs, in order (e.g. the ones a recorded PyTorch run
  // got), so best-fit ties between equal-sized blocks break as they did there. An
  // address whose range is not free is skipped in favour of the usual placement.
  void set_address_script(std::vector<uintptr_t> addresses);
  uint64_t used_bytes() const;  // the allocator's segments and mapped pages, not the context
  uint64_t context_bytes() const { return context_; }
  // More bytes held outside the allocator from now on (NCCL's communicator buffers once the
  // process group runs its first collective): cudaMalloc sees that much less.
  void hold_outside(uint64_t bytes);
  uint64_t outside_bytes() const { return outside_; }
  // Live cudaMalloc ranges and mapped page ranges (address -> bytes), for checks.
  std::map<uintptr_t, size_t> live_allocations() const;
  std::map<uintptr_t, size_t> live_mappings() const;

 private:
  uint64_t available_locked() const {  // mu_ held
    return total_ - context_ - outside_ - std::min(used_, total_ - context_ - outside_);
  }
  uintptr_t take_va(size_t bytes);      // first fit, 2 MiB aligned; a new chunk when none fits
  VaLayout::Occupied occupied() const;  // the ranges the caller placed, for new chunks to step below
  bool take_va_at(uintptr_t va, size_t bytes);
  bool claim_va(uintptr_t va, size_t len);  // no live allocation or reservation may overlap
  void give_va(uintptr_t va, size_t bytes);

  std::string id_, name_;
  uint64_t total_;
  uint64_t context_;
  uint64_t outside_ = 0;
  double bandwidth_gbs_, fp32_tflops_, bf16_tflops_;
  mutable std::mutex mu_;
  SimLatencyModel model_;
  uint64_t used_ = 0;
  uint64_t busy_ns_ = 0;
  static constexpr uintptr_t kVaBase = 0x7f0000000000ull;  // user-space-looking GPU VA, like CUDA's
  static constexpr uint64_t kVaSpan = uint64_t(1) << 44;   // 16 TiB of address space
  VaLayout layout_{kVaBase, kVaSpan};                      // where cudaMalloc's addresses land
  std::map<uintptr_t, size_t> allocations_;                // cudaMalloc'd
  std::map<uintptr_t, size_t> reservations_;               // cuMemAddressReserve'd
  std::map<uintptr_t, size_t> mappings_;                   // mapped inside reservations
  std::vector<uintptr_t> script_;
  size_t script_next_ = 0;
};

// Parses "24GiB", "1.5 GiB", "80GB", "25769803776" into bytes. Throws std::invalid_argument.
uint64_t parse_byte_size(const std::string& text);

}  // namespace vramlab
