// The shared address layout both devices place segments by (va_layout.h): the order a
// fresh process's cudaMallocs get from the driver, which decides the allocator's ties.
#include <gtest/gtest.h>

#include "device/sim_device.h"
#include "device/va_layout.h"

using namespace vramlab;

namespace {
constexpr size_t MiB = size_t(1) << 20;
constexpr uintptr_t kBase = 0x100000000000ull;
constexpr uint64_t kSpan = uint64_t(64) << 30;
constexpr uintptr_t kTop = kBase + kSpan;
}  // namespace

TEST(VaLayout, FirstRegionFillsUpwardThenWhole32MiBChunksGoBelowTheLowest) {
  VaLayout v(kBase, kSpan);
  const uintptr_t region = kTop - VaLayout::kFirstRegion;
  EXPECT_EQ(v.take(20 * MiB), region);
  EXPECT_EQ(v.take(2 * MiB), region + 20 * MiB);
  EXPECT_EQ(v.take(1), region + 22 * MiB);  // aligned up to 2 MiB
  EXPECT_EQ(v.take(376 * MiB), region + 24 * MiB);
  // the region is full: a 32 MiB chunk directly below it, used from its start
  EXPECT_EQ(v.take(4 * MiB), region - 32 * MiB);
  EXPECT_EQ(v.take(4 * MiB), region - 28 * MiB);
  // larger than a chunk: whole chunks (128 MiB) below the lowest so far, used from the start
  EXPECT_EQ(v.take(100 * MiB), region - 32 * MiB - 128 * MiB);
  // lowest first: the big chunk's 28 MiB tail, then the rest of the first chunk
  EXPECT_EQ(v.take(24 * MiB), region - 60 * MiB);
  EXPECT_EQ(v.take(24 * MiB), region - 24 * MiB);
}

// What the driver did in a bare process on an H100 (test/refs/measured/h100_va_layout_probe.json,
// "sizes", once its first reservation was full): each cudaMalloc that fits no free range grows
// the reservation downward by its size rounded up to 32 MiB, the allocation at the bottom; a
// 2 MiB one then goes to the lowest tail left (126 -> 2 MiB tail, 150 -> 10, 594 -> 14, 1188 -> 28).
TEST(VaLayout, PlacesAsTheDriverDidInAProbedProcess) {
  VaLayout v(kBase, kSpan);
  const uintptr_t region = v.take(VaLayout::kFirstRegion);
  const std::pair<size_t, int64_t> probe[] = {// MiB, MiB from the first reservation's bottom
                                              {20, -32}, {2, -12},     {32, -64}, {2, -10},      {32, -96}, {32, -128},
                                              {2, -8},   {64, -192},   {2, -6},   {126, -320},   {2, -194}, {150, -480},
                                              {2, -330}, {594, -1088}, {2, -494}, {1188, -2304}, {2, -1116}};
  for (auto [mib, at] : probe) EXPECT_EQ(int64_t(v.take(mib * MiB) - region) / int64_t(MiB), at) << mib << " MiB";
}

TEST(VaLayout, FreedRangesAreReusedLowestFirstAndMerge) {
  VaLayout v(kBase, kSpan);
  const uintptr_t region = kTop - VaLayout::kFirstRegion;
  uintptr_t a = v.take(100 * MiB), b = v.take(100 * MiB), c = v.take(100 * MiB);
  v.give(c, 100 * MiB);
  v.give(a, 100 * MiB);
  EXPECT_EQ(v.take(50 * MiB), a);  // lowest first
  v.give(b, 100 * MiB);            // merges with a's rest and c (and the region's tail)
  EXPECT_EQ(v.take(340 * MiB), region + 50 * MiB);
  v.carve(region + 394 * MiB, 2 * MiB);           // a scripted address takes its range out
  EXPECT_EQ(v.take(6 * MiB), region - 32 * MiB);  // 4 MiB left on either side: a new chunk
  EXPECT_EQ(v.take(4 * MiB), region - 26 * MiB);  // the new chunk is lower: first fit takes its rest
}

TEST(VaLayout, ExhaustedSpanGivesZero) {
  VaLayout v(kBase, VaLayout::kFirstRegion + 64 * MiB);
  EXPECT_NE(v.take(400 * MiB), 0u);
  EXPECT_NE(v.take(64 * MiB), 0u);
  EXPECT_EQ(v.take(2 * MiB), 0u);
}

// The simulated device's addresses are the layout's (its span's top is the first region's end).
TEST(VaLayout, TheSimulatedDevicePlacesSegmentsByIt) {
  SimDevice d("sim:test", "test", uint64_t(80) << 30);
  const size_t sizes[] = {2 * MiB, 20 * MiB, 2 * MiB, 300 * MiB, 64 * MiB, 2 * MiB, 40 * MiB, 6 * MiB};
  std::vector<uintptr_t> got;
  for (size_t s : sizes) got.push_back(d.malloc(s));
  d.free(got[1], 20 * MiB);
  got.push_back(d.malloc(10 * MiB));
  const uintptr_t top = got[0] + VaLayout::kFirstRegion;
  VaLayout v(top - (uint64_t(1) << 44), uint64_t(1) << 44);
  std::vector<uintptr_t> want;
  for (size_t s : sizes) want.push_back(v.take(s));
  v.give(want[1], 20 * MiB);
  want.push_back(v.take(10 * MiB));
  EXPECT_EQ(got, want);
}
