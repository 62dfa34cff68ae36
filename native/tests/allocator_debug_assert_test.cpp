// The allocator's debug-only internal asserts (VRAMLAB_DEBUG_ASSERT): on without NDEBUG.
// A double free through the public API is already refused with std::invalid_argument
// (AllocatorRules.FreeOfUnknownAddressIsAnError), so no state can be corrupted from
// outside; these tests drive the internal structures directly.
#include <gtest/gtest.h>

#include "allocator/block_pool.h"
#include "allocator/debug_assert.h"

namespace vramlab::alloc::testing {
namespace {

#ifdef NDEBUG
constexpr bool kAssertsOn = false;
#else
constexpr bool kAssertsOn = true;
#endif

TEST(AllocatorDebugAssert, ReportsFileLineAndMessage) {
  if (!kAssertsOn) GTEST_SKIP() << "debug asserts are compiled out under NDEBUG";
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(VRAMLAB_DEBUG_ASSERT(1 + 1 == 3, "arithmetic broke"),
               "allocator_debug_assert_test.cpp:[0-9]+: internal assert failed: arithmetic broke \\(1 \\+ 1 == 3\\)");
}

TEST(AllocatorDebugAssert, AnAddressIsHandedOutOnce) {
  if (!kAssertsOn) GTEST_SKIP() << "debug asserts are compiled out under NDEBUG";
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  // The allocated-block map is what free() looks blocks up in: a second entry for one
  // address would let one block be freed twice. Release builds do not check.
  PtrMap map;
  Block a(0, 512, nullptr, 0x200000), b(0, 512, nullptr, 0x200000);
  map.insert(a.ptr, &a);
  EXPECT_DEATH(map.insert(b.ptr, &b), "already in the allocated map");
  EXPECT_DEATH(map.insert(0, &b), "address 0");
  EXPECT_EQ(map.find(a.ptr), &a);
}

}  // namespace
}  // namespace vramlab::alloc::testing
