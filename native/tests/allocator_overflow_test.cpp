// A request whose rounding would wrap around 2^64 is an OOM, never a block. Before, malloc(2^64-1)
// returned a block (round_size wrapped to 0) and malloc(2^64-512) reported "Tried to
// allocate 0 bytes". Every such request is now an OOM and changes no statistic but the
// OOM count; ordinary requests keep working afterwards.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>

#include "allocator/constants.h"
#include "allocator_test_util.h"
#include "device/sim_device.h"

using namespace vramlab;
using namespace vramlab::alloc;
using namespace vramlab::alloc::testing;

TEST(AllocatorOverflow, HugeRequestsAreOomNotWrapped) {
  auto dev = sim();
  CachingAllocator a(dev);
  const uint64_t max = std::numeric_limits<uint64_t>::max();
  for (uint64_t bytes : {max, max - 511, max - kRoundLarge + 1, (max >> 1) + 1, uint64_t(kMaxRequestSize) + 1}) {
    try {
      auto got = a.malloc(bytes);
      ADD_FAILURE() << bytes << " bytes: got a block of " << got.size << " at " << got.ptr;
    } catch (const OutOfMemoryError& e) {
      EXPECT_EQ(e.requested, bytes);
      EXPECT_NE(std::string(e.what()).find("Tried to allocate"), std::string::npos);
      EXPECT_EQ(std::string(e.what()).find("Tried to allocate 0 bytes"), std::string::npos);
    }
  }
  EXPECT_EQ(stat(a, "allocated_bytes.all.current"), 0);
  EXPECT_EQ(stat(a, "reserved_bytes.all.current"), 0);
  EXPECT_EQ(stat(a, "num_ooms"), 5);
  EXPECT_EQ(a.malloc(1000).size, 1024u);  // still a working allocator
  EXPECT_EQ(check_invariants(a, *dev), "");
}

TEST(AllocatorOverflow, LargestCheckedRequestRoundsWithoutWrapping) {
  auto dev = sim();
  CachingAllocator a(dev, AllocatorSettings::parse("roundup_power2_divisions:4"));
  EXPECT_THROW(a.malloc(kMaxRequestSize), OutOfMemoryError);  // > device, rounded sanely
  EXPECT_THROW(a.malloc(kMaxRequestSize - 1), OutOfMemoryError);
  EXPECT_EQ(stat(a, "reserved_bytes.all.current"), 0);
}

TEST(AllocatorOverflow, DeviceSizeStringsOutOfRangeAreRefused) {
  EXPECT_THROW(parse_byte_size("99999999TiB"), std::invalid_argument);
  EXPECT_THROW(parse_byte_size("0"), std::invalid_argument);
  EXPECT_THROW(parse_byte_size("18446744073709551616"), std::invalid_argument);
  EXPECT_EQ(parse_byte_size("24GiB"), 24ull << 30);
}
