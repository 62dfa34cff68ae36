#include "device/sim_device.h"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <stdexcept>

namespace vramlab {

namespace {
constexpr size_t kVaAlign = VaLayout::kAlign;
constexpr double kGiB = 1073741824.0;

size_t align_up(size_t v, size_t a) { return (v + a - 1) / a * a; }
uint64_t cost(uint64_t base, uint64_t per_gib, size_t bytes) {
  return base + static_cast<uint64_t>(static_cast<double>(per_gib) * static_cast<double>(bytes) / kGiB);
}
std::string fmt_size(uint64_t size) {  // c10 format_size, for the OOM report
  char buf[48];
  if (size <= 1024)
    std::snprintf(buf, sizeof buf, "%llu bytes", static_cast<unsigned long long>(size));
  else if (size <= 1048576)
    std::snprintf(buf, sizeof buf, "%.2f KiB", size / 1024.0);
  else if (size <= 1073741824ULL)
    std::snprintf(buf, sizeof buf, "%.2f MiB", size / 1048576.0);
  else
    std::snprintf(buf, sizeof buf, "%.2f GiB", size / kGiB);
  return buf;
}
}  // namespace

SimDevice::SimDevice(std::string id, std::string name, uint64_t total, double bandwidth_gbs, double fp32_tflops,
                     double bf16_tflops, uint64_t context)
    : id_(std::move(id)),
      name_(std::move(name)),
      total_(total),
      context_(context),
      bandwidth_gbs_(bandwidth_gbs),
      fp32_tflops_(fp32_tflops),
      bf16_tflops_(bf16_tflops) {
  if (total_ == 0) throw std::invalid_argument("simulated device capacity must be > 0");
  if (context_ >= total_) throw std::invalid_argument("simulated device context must be less than its total");
}

DeviceInfo SimDevice::info() const {
  DeviceInfo d;
  d.id = id_;
  d.kind = "sim";
  d.name = name_;
  d.total = total_;
  d.context = context_;
  d.free = free_memory();
  d.mem_bandwidth_gbs = bandwidth_gbs_;
  d.fp32_tflops = fp32_tflops_;
  d.bf16_tflops = bf16_tflops_;
  return d;
}

uint64_t SimDevice::free_memory() const {
  std::lock_guard<std::mutex> g(mu_);
  return available_locked();
}

uint64_t SimDevice::used_bytes() const {
  std::lock_guard<std::mutex> g(mu_);
  return used_;
}

uint64_t SimDevice::busy_ns() const {
  std::lock_guard<std::mutex> g(mu_);
  return busy_ns_;
}

void SimDevice::set_latency_model(const SimLatencyModel& m) {
  std::lock_guard<std::mutex> g(mu_);
  model_ = m;
}

// As NVML reports it: the allocator's memory plus the context and library handles.
std::string SimDevice::process_memory_report() const {
  return "Including non-PyTorch memory, this process has " + fmt_size(used_bytes() + context_ + outside_) +
         " memory in use. ";
}

VaLayout::Occupied SimDevice::occupied() const {
  // New chunks step below segments placed by the caller (scripted or adopted).
  return [this](uintptr_t lo, uintptr_t hi) {
    uintptr_t below = hi;
    for (const auto* m : {&allocations_, &reservations_}) {
      auto it = m->lower_bound(hi);
      while (it != m->begin()) {
        --it;
        if (it->first + align_up(it->second, kVaAlign) <= lo) break;
        below = std::min(below, it->first);
      }
    }
    return below;
  };
}

uintptr_t SimDevice::take_va(size_t bytes) {
  uintptr_t va = layout_.take(bytes, occupied());
  if (va == 0) throw std::runtime_error("simulated device ran out of virtual address space");
  return va;
}

void SimDevice::driver_use(DriverUse u, int thread) {
  std::lock_guard<std::mutex> g(mu_);
  layout_.driver_use(u, thread, occupied());
}

// A scripted address (a replayed snapshot's): anywhere in the span that no live
// allocation or reservation covers; free range parts under it are taken out.
bool SimDevice::take_va_at(uintptr_t va, size_t bytes) {
  if (va % kVaAlign != 0 || va < kVaBase || va + align_up(bytes, kVaAlign) > kVaBase + kVaSpan) return false;
  return claim_va(va, align_up(bytes, kVaAlign));
}

// [va, va+need) for a segment placed by the caller: free unless a live allocation or
// reservation covers part of it; free range parts under it are taken out.
bool SimDevice::claim_va(uintptr_t va, size_t need) {
  auto overlaps = [&](const std::map<uintptr_t, size_t>& m) {
    auto it = m.lower_bound(va + need);
    if (it == m.begin()) return false;
    --it;
    return it->first + align_up(it->second, kVaAlign) > va;
  };
  if (overlaps(allocations_) || overlaps(reservations_)) return false;
  layout_.carve(va, need);
  return true;
}

void SimDevice::set_address_script(std::vector<uintptr_t> addresses) {
  std::lock_guard<std::mutex> g(mu_);
  script_ = std::move(addresses);
  script_next_ = 0;
}

void SimDevice::give_va(uintptr_t va, size_t bytes) { layout_.give(va, bytes); }

uintptr_t SimDevice::malloc(size_t bytes) {
  std::lock_guard<std::mutex> g(mu_);
  busy_ns_ += cost(model_.malloc_base_ns, model_.malloc_per_gib_ns, bytes);
  if (bytes == 0) return 0;
  if (bytes > available_locked()) return 0;  // cudaErrorMemoryAllocation
  uintptr_t va = 0;
  if (script_next_ < script_.size() && take_va_at(script_[script_next_], bytes)) va = script_[script_next_];
  if (script_next_ < script_.size()) ++script_next_;
  if (va == 0) va = take_va(bytes);
  used_ += bytes;
  allocations_.emplace(va, bytes);
  return va;
}

bool SimDevice::adopt(uintptr_t ptr, size_t bytes) {
  std::lock_guard<std::mutex> g(mu_);
  if (bytes == 0 || bytes > available_locked()) return false;
  const bool inside = ptr < kVaBase + kVaSpan && ptr + bytes > kVaBase;
  if (inside) {
    // The range must lie wholly in free address space; ranges outside the simulated span
    // cannot collide with anything this device hands out.
    if (ptr < kVaBase || ptr + bytes > kVaBase + kVaSpan) return false;
    if (!claim_va(ptr, align_up(bytes, kVaAlign))) return false;
  } else {
    auto next = allocations_.lower_bound(ptr);
    if (next != allocations_.end() && next->first < ptr + bytes) return false;
    if (next != allocations_.begin() && std::prev(next)->first + std::prev(next)->second > ptr) return false;
  }
  used_ += bytes;
  allocations_.emplace(ptr, bytes);
  return true;
}

void SimDevice::free(uintptr_t ptr, size_t bytes) {
  std::lock_guard<std::mutex> g(mu_);
  auto it = allocations_.find(ptr);
  if (it == allocations_.end())
    throw std::runtime_error("cudaFree of an address the simulated device did not allocate");
  if (it->second != bytes) throw std::runtime_error("cudaFree size does not match the allocation");
  busy_ns_ += cost(model_.free_base_ns, model_.free_per_gib_ns, bytes);
  used_ -= bytes;
  allocations_.erase(it);
  if (ptr >= kVaBase && ptr < kVaBase + kVaSpan) give_va(ptr, bytes);  // adopted ranges may lie outside
}

uintptr_t SimDevice::reserve_address(size_t bytes) {
  std::lock_guard<std::mutex> g(mu_);
  busy_ns_ += model_.reserve_ns;
  uintptr_t va = take_va(bytes);
  reservations_.emplace(va, bytes);
  return va;
}

bool SimDevice::map_pages(uintptr_t va, size_t bytes) {
  std::lock_guard<std::mutex> g(mu_);
  if (bytes == 0 || bytes % granularity() != 0)
    throw std::runtime_error("map_pages: size is not a multiple of the granularity");
  auto r = reservations_.upper_bound(va);
  if (r == reservations_.begin() || std::prev(r)->first + std::prev(r)->second < va + bytes)
    throw std::runtime_error("map_pages: range is outside any reserved address range");
  auto next = mappings_.lower_bound(va);
  if ((next != mappings_.end() && next->first < va + bytes) ||
      (next != mappings_.begin() && std::prev(next)->first + std::prev(next)->second > va))
    throw std::runtime_error("map_pages: range is already mapped");
  busy_ns_ += cost(model_.map_base_ns, model_.map_per_gib_ns, bytes);
  if (bytes > available_locked()) return false;  // CUDA_ERROR_OUT_OF_MEMORY from cuMemCreate
  used_ += bytes;
  mappings_.emplace(va, bytes);
  return true;
}

void SimDevice::unmap_pages(uintptr_t va, size_t bytes) {
  std::lock_guard<std::mutex> g(mu_);
  auto it = mappings_.find(va);
  if (it == mappings_.end() || it->second != bytes)
    throw std::runtime_error("unmap_pages of a range that was not mapped as one");
  busy_ns_ += model_.unmap_base_ns;
  used_ -= bytes;
  mappings_.erase(it);
}

void SimDevice::release_address(uintptr_t va, size_t bytes) {
  std::lock_guard<std::mutex> g(mu_);
  auto it = reservations_.find(va);
  if (it == reservations_.end() || it->second != bytes)
    throw std::runtime_error("release_address of an unknown reservation");
  auto m = mappings_.lower_bound(va);
  if (m != mappings_.end() && m->first < va + bytes)
    throw std::runtime_error("release_address with pages still mapped");
  busy_ns_ += model_.reserve_ns;
  reservations_.erase(it);
  give_va(va, bytes);
}

std::map<uintptr_t, size_t> SimDevice::live_allocations() const {
  std::lock_guard<std::mutex> g(mu_);
  return allocations_;
}

std::map<uintptr_t, size_t> SimDevice::live_mappings() const {
  std::lock_guard<std::mutex> g(mu_);
  return mappings_;
}

uint64_t parse_byte_size(const std::string& text) {
  size_t i = 0;
  while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.')) ++i;
  if (i == 0) throw std::invalid_argument("bad byte size '" + text + "': expected a number like 24GiB");
  double value = std::stod(text.substr(0, i));
  std::string unit;
  for (size_t k = i; k < text.size(); ++k)
    if (!std::isspace(static_cast<unsigned char>(text[k])))
      unit += static_cast<char>(std::tolower(static_cast<unsigned char>(text[k])));
  double mult = 0;
  if (unit.empty() || unit == "b")
    mult = 1;
  else if (unit == "kib" || unit == "k")
    mult = 1024.0;
  else if (unit == "mib" || unit == "m")
    mult = 1048576.0;
  else if (unit == "gib" || unit == "g")
    mult = kGiB;
  else if (unit == "tib" || unit == "t")
    mult = kGiB * 1024.0;
  else if (unit == "kb")
    mult = 1e3;
  else if (unit == "mb")
    mult = 1e6;
  else if (unit == "gb")
    mult = 1e9;
  else if (unit == "tb")
    mult = 1e12;
  else
    throw std::invalid_argument("bad byte size '" + text + "': unknown unit '" + unit + "'");
  double bytes = value * mult;
  // Above 2^62 llround (int64) would overflow and the allocator's size checks stop there.
  if (!(bytes >= 1) || bytes > 4.6e18) throw std::invalid_argument("bad byte size '" + text + "': out of range");
  return static_cast<uint64_t>(std::llround(bytes));
}

void SimDevice::hold_outside(uint64_t bytes) {
  std::lock_guard<std::mutex> lk(mu_);
  if (context_ + outside_ + used_ + bytes > total_)
    throw std::runtime_error("simulated device: no room for " + std::to_string(bytes) + " bytes outside the allocator");
  outside_ += bytes;
}

}  // namespace vramlab
