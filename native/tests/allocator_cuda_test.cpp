// The allocator on a real GPU (cudaMalloc and CUDA virtual memory). Every test skips
// cleanly when no CUDA device is usable (no driver, no GPU, or a CPU-only build).
#include <gtest/gtest.h>

#include "allocator/caching_allocator.h"
#include "device/cuda_device.h"

namespace vramlab::alloc {
namespace {

constexpr uint64_t MiB = 1ull << 20;

std::shared_ptr<Device> gpu_or_skip() {
  if (cuda_list_devices().empty()) return nullptr;
  return std::shared_ptr<Device>(cuda_open_device(0).release());
}

#define REQUIRE_GPU(dev)    \
  auto dev = gpu_or_skip(); \
  if (!dev) GTEST_SKIP() << "no CUDA device on this machine"

int64_t stat(const CachingAllocator& a, const std::string& key) {
  for (const auto& [k, v] : a.memory_stats())
    if (k == key) return v;
  return -999;
}

TEST(AllocatorCuda, SizeRulesOnRealCudaMalloc) {
  REQUIRE_GPU(dev);
  struct Case {
    size_t request, allocated, reserved;
  } cases[] = {{1, 512, 2 * MiB},
               {1048577, 1049088, 20 * MiB},
               {10485759, 10 * MiB, 10 * MiB},
               {10485761, 10486272, 12 * MiB},
               {104857601, 104858112, 102 * MiB}};
  for (const Case& c : cases) {
    CachingAllocator a(dev);
    Allocation x = a.malloc(c.request);
    EXPECT_EQ(a.memory_allocated(), c.allocated);
    EXPECT_EQ(a.memory_reserved(), c.reserved);
    EXPECT_NE(x.ptr, 0u);
    a.free(x);
    a.empty_cache();
    EXPECT_EQ(a.memory_reserved(), 0u);
  }
}

TEST(AllocatorCuda, CachingReusesBlocksAndSplits) {
  REQUIRE_GPU(dev);
  CachingAllocator a(dev);
  Allocation x = a.malloc(3 * MiB);
  Allocation y = a.malloc(3 * MiB);
  EXPECT_EQ(y.ptr, x.ptr + 3 * MiB);
  a.free(x);
  EXPECT_EQ(a.malloc(2 * MiB).ptr, x.ptr);
  EXPECT_EQ(stat(a, "num_device_alloc"), 1);
}

TEST(AllocatorCuda, ExpandableSegmentsOnRealVirtualMemory) {
  REQUIRE_GPU(dev);
  CachingAllocator a(dev, AllocatorSettings::parse("expandable_segments:True"));
  Allocation p[3];
  for (auto& x : p) x = a.malloc(40 * MiB);
  EXPECT_EQ(p[1].ptr, p[0].ptr + 40 * MiB);
  EXPECT_EQ(a.memory_reserved(), 120 * MiB);
  a.free(p[1]);
  a.empty_cache();
  EXPECT_EQ(a.memory_reserved(), 80 * MiB);
  Allocation q = a.malloc(40 * MiB);
  EXPECT_EQ(q.ptr, p[1].ptr);
  a.free(p[0]), a.free(p[2]), a.free(q);
  a.empty_cache();
  EXPECT_EQ(a.memory_reserved(), 0u);
}

TEST(AllocatorCuda, FragmentationScenarioUnderACap) {
  REQUIRE_GPU(dev);
  for (const char* conf : {"", "max_split_size_mb:128", "expandable_segments:True"}) {
    CachingAllocator a(dev, AllocatorSettings::parse(conf));
    a.set_capacity_limit(1100 * MiB);
    a.free(a.malloc(1000 * MiB));
    std::vector<Allocation> parts;
    for (int i = 0; i < 5; ++i) parts.push_back(a.malloc(200 * MiB));
    for (int i : {0, 2, 4}) a.free(parts[i]);
    bool oom = false;
    try {
      a.malloc(400 * MiB);
    } catch (const OutOfMemoryError& e) {
      oom = true;
      EXPECT_NE(std::string(e.what()).find("600.00 MiB is reserved by PyTorch but unallocated"), std::string::npos);
    }
    EXPECT_EQ(oom, std::string(conf).empty()) << conf;
    if (std::string(conf) == "expandable_segments:True") {
      EXPECT_EQ(a.memory_reserved(), 800 * MiB);
    }
  }
}

uint64_t calls(const CudaCallStats& before, CudaCall c) {
  return cuda_call_stats().count[static_cast<int>(c)] - before.count[static_cast<int>(c)];
}

// An expandable segment grows with PyTorch's driver calls: a handle per page, each mapped,
// access set once for the run; every page its own physical allocation, held while mapped
// and given back to the driver when unmapped.
TEST(AllocatorCuda, ExpandableGrowthMapsEachPageAndSetsAccessOnce) {
  REQUIRE_GPU(dev);
  CachingAllocator a(dev, AllocatorSettings::parse("expandable_segments:True"));
  const uint64_t free0 = dev->free_memory();
  const CudaCallStats before = cuda_call_stats();
  Allocation x = a.malloc(100 * MiB);  // five 20 MiB pages of the large pool
  EXPECT_EQ(calls(before, CudaCall::kCreate), 5u);
  EXPECT_EQ(calls(before, CudaCall::kMap), 5u);
  EXPECT_EQ(calls(before, CudaCall::kSetAccess), 1u);
  EXPECT_EQ(a.memory_reserved(), 100 * MiB);
  EXPECT_GE(free0 - dev->free_memory(), 100 * MiB);  // the driver really gave the memory
  a.free(x);
  a.empty_cache();
  EXPECT_EQ(calls(before, CudaCall::kUnmap), 5u);
  EXPECT_EQ(calls(before, CudaCall::kRelease), 5u);
  EXPECT_EQ(a.memory_reserved(), 0u);
  EXPECT_GE(dev->free_memory() + 4 * MiB, free0);  // and has it back
}

// A closed device's address range is taken by the next device on the card instead of a new
// reservation; what was mapped in it went back to the driver when the device closed.
TEST(AllocatorCuda, AClosedDevicesRangeServesTheNextDeviceWithItsMemoryReturned) {
  REQUIRE_GPU(dev);
  const uint64_t free0 = dev->free_memory();
  uintptr_t first = 0;
  {
    std::shared_ptr<Device> d(cuda_open_device(0).release());
    CachingAllocator a(d);
    first = a.malloc(30 * MiB).ptr;  // still allocated when the allocator and device close
  }
  EXPECT_GE(dev->free_memory() + 4 * MiB, free0);
  const CudaCallStats before = cuda_call_stats();
  {
    std::shared_ptr<Device> d(cuda_open_device(0).release());
    CachingAllocator a(d);
    EXPECT_EQ(a.malloc(30 * MiB).ptr, first);  // a fresh layout in the same range
  }
  EXPECT_EQ(calls(before, CudaCall::kAddressReserve), 0u);
  EXPECT_EQ(calls(before, CudaCall::kCreate), 1u);
  EXPECT_EQ(calls(before, CudaCall::kRelease), 1u);
}

}  // namespace
}  // namespace vramlab::alloc
