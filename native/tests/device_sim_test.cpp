// Simulated device and the device registry.
#include <gtest/gtest.h>

#include "device/device.h"
#include "device/presets.h"
#include "device/sim_device.h"

namespace vramlab {
namespace {

TEST(DeviceRegistry, ListsEverySimPresetThenCuda) {
  auto devs = list_devices();
  ASSERT_GE(devs.size(), sim_presets().size());
  for (size_t i = 0; i < sim_presets().size(); ++i) {
    EXPECT_EQ(devs[i].id, std::string("sim:") + sim_presets()[i].key);
    EXPECT_EQ(devs[i].kind, "sim");
    EXPECT_EQ(devs[i].total, sim_presets()[i].total);
  }
  for (size_t i = sim_presets().size(); i < devs.size(); ++i) EXPECT_EQ(devs[i].kind, "cuda");
}

TEST(DeviceRegistry, OpensPresetsCustomAndRejectsUnknown) {
  auto h100 = open_device("sim:h100-80gb");
  EXPECT_EQ(h100->total_memory(), 81079ull << 20);
  EXPECT_EQ(h100->info().name, "NVIDIA H100 80GB (simulated)");
  EXPECT_EQ(open_device("sim:custom:24GiB")->total_memory(), 24ull << 30);
  EXPECT_EQ(open_device("sim:custom:1.5 GiB")->total_memory(), 3ull << 29);
  EXPECT_EQ(open_device("sim:custom:80GB")->total_memory(), 80000000000ull);
  EXPECT_EQ(open_device("sim:custom:1048576")->total_memory(), 1048576ull);
  EXPECT_THROW(open_device("sim:nope"), std::invalid_argument);
  EXPECT_THROW(open_device("sim:custom:lots"), std::invalid_argument);
  EXPECT_THROW(open_device("sim:custom:12XB"), std::invalid_argument);
  EXPECT_THROW(open_device("tpu:0"), std::invalid_argument);
  EXPECT_THROW(open_device("cuda:x"), std::invalid_argument);
  EXPECT_FALSE(default_device_id().empty());
}

TEST(SimDevice, CapacityAddressesAndClock) {
  SimDevice d("sim:test", "test", 100ull << 20);
  uint64_t t0 = d.busy_ns();
  uintptr_t a = d.malloc(60ull << 20);
  EXPECT_NE(a, 0u);
  EXPECT_EQ(a % (2u << 20), 0u);
  EXPECT_GT(d.busy_ns(), t0);
  EXPECT_EQ(d.malloc(50ull << 20), 0u);  // out of memory, not an exception
  EXPECT_EQ(d.free_memory(), 40ull << 20);
  uintptr_t b = d.malloc(1000);
  EXPECT_EQ(b % (2u << 20), 0u);
  EXPECT_THROW(d.free(a + 4096, 60ull << 20), std::runtime_error);
  d.free(a, 60ull << 20);
  d.free(b, 1000);
  EXPECT_EQ(d.used_bytes(), 0u);
  EXPECT_TRUE(d.live_allocations().empty());
  // The address is handed out again once free.
  EXPECT_EQ(d.malloc(60ull << 20), a);
}

TEST(SimDevice, VirtualMemoryMapping) {
  SimDevice d("sim:test", "test", 100ull << 20);
  const size_t page = 20ull << 20;
  uintptr_t va = d.reserve_address(10 * page);
  EXPECT_EQ(d.used_bytes(), 0u);  // reserving address space costs no memory
  EXPECT_TRUE(d.map_pages(va, page));
  EXPECT_TRUE(d.map_pages(va + page, page));
  EXPECT_THROW(d.map_pages(va, page), std::runtime_error);  // already mapped
  EXPECT_TRUE(d.map_pages(va + 2 * page, page));
  EXPECT_TRUE(d.map_pages(va + 3 * page, page));
  EXPECT_TRUE(d.map_pages(va + 4 * page, page));
  EXPECT_FALSE(d.map_pages(va + 5 * page, page));                      // 100 MiB used: OOM
  EXPECT_THROW(d.release_address(va, 10 * page), std::runtime_error);  // pages still mapped
  for (int i = 0; i < 5; ++i) d.unmap_pages(va + i * page, page);
  EXPECT_EQ(d.used_bytes(), 0u);
  d.release_address(va, 10 * page);
  EXPECT_THROW(d.map_pages(va, page), std::runtime_error);  // no longer reserved
}

TEST(SimDevice, PageRunMapsEveryPageOrNone) {
  SimDevice d("sim:test", "test", 100ull << 20);
  const size_t page = 20ull << 20;
  uintptr_t va = d.reserve_address(10 * page);
  EXPECT_TRUE(d.map_page_run(va, page, 3));
  EXPECT_EQ(d.used_bytes(), 3 * page);
  // 3 more pages do not fit beside the 3 mapped: none of them stays mapped.
  EXPECT_FALSE(d.map_page_run(va + 3 * page, page, 3));
  EXPECT_EQ(d.used_bytes(), 3 * page);
  EXPECT_TRUE(d.map_page_run(va + 3 * page, page, 2));
  for (int i = 0; i < 5; ++i) d.unmap_pages(va + i * page, page);  // one physical allocation a page
  EXPECT_EQ(d.used_bytes(), 0u);
  d.release_address(va, 10 * page);
}

TEST(SimDevice, AddressScriptReplaysRecordedAddresses) {
  SimDevice d("sim:test", "test", 1ull << 30);
  const uintptr_t want = 0x7fbae0800000ull;
  d.set_address_script({want, want});  // the second cannot be honoured while the first lives
  EXPECT_EQ(d.malloc(20ull << 20), want);
  uintptr_t b = d.malloc(20ull << 20);
  EXPECT_NE(b, want);
  EXPECT_NE(b, 0u);
}

// Segments a seeded replay adopts at their recorded addresses (CachingAllocator::seed)
// live beside the driver-like layout: they are never handed out again while live, new
// segments fill the free ranges around them and new chunks go below the lowest of them,
// and a freed adopted range inside the span is reused like any other.
TEST(SimDevice, AdoptedSegmentsKeepTheirAddressesBesideTheDriverLayout) {
  const size_t MiB = size_t(1) << 20;
  const uintptr_t first = SimDevice("sim:test", "test", 80ull << 30).malloc(2 * MiB);  // the layout's origin
  SimDevice d("sim:test", "test", 80ull << 30);
  const uintptr_t inside = first + 80 * MiB, below = first - 600 * MiB, outside = 0x600000000000ull;
  EXPECT_TRUE(d.adopt(inside, 4 * MiB));             // in the free room above the origin
  EXPECT_TRUE(d.adopt(below, 30 * MiB));             // below the driver's startup range
  EXPECT_TRUE(d.adopt(outside, 10 * MiB));           // outside the simulated span: cannot collide
  EXPECT_FALSE(d.adopt(inside + 2 * MiB, 2 * MiB));  // taken
  EXPECT_FALSE(d.adopt(below - 2 * MiB, 4 * MiB));   // overlaps the one below
  EXPECT_EQ(d.used_bytes(), 44 * MiB);
  // The free ranges above the origin fill around the adopted segment.
  EXPECT_EQ(d.malloc(2 * MiB), first);
  EXPECT_EQ(d.malloc(4 * MiB), first + 74 * MiB);
  EXPECT_EQ(d.malloc(2 * MiB), first + 78 * MiB);
  EXPECT_EQ(d.malloc(4 * MiB), first + 84 * MiB);
  // No room left for 400 MiB: a chunk (whole 32 MiB units: 416 MiB) below the lowest
  // placed segment, used from its start.
  EXPECT_EQ(d.malloc(400 * MiB), below - 416 * MiB);
  // A freed adopted range is free address space like any other (lowest first: after the
  // chunk's 16 MiB tail).
  d.free(inside, 4 * MiB);
  EXPECT_EQ(d.malloc(16 * MiB), below - 16 * MiB);
  EXPECT_EQ(d.malloc(4 * MiB), inside);
  d.free(outside, 10 * MiB);
  EXPECT_EQ(d.used_bytes(), 462 * MiB);
  for (const auto& [va, bytes] : d.live_allocations())
    for (const auto& [vb, bb] : d.live_allocations())
      if (va < vb) {
        EXPECT_LE(va + bytes, vb) << "overlapping ranges";  // braces: EXPECT_* hides an if/else
      }
}

TEST(SimDevice, OomReportNamesThisProcess) {
  SimDevice d("sim:test", "test", 1ull << 30);
  d.malloc(100ull << 20);
  EXPECT_EQ(d.process_memory_report(), "Including non-PyTorch memory, this process has 100.00 MiB memory in use. ");
}

}  // namespace
}  // namespace vramlab
