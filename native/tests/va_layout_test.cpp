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

// MiB from the layout's origin (where a fresh process's first cudaMalloc lands).
int64_t rel(const VaLayout& v, uintptr_t va) { return (int64_t(va) - int64_t(v.origin())) / int64_t(MiB); }
}  // namespace

// A bare process on an H100 (test/refs/measured/h100_va_layout_probe.json, "sizes"): the
// first cudaMalloc at the origin, the next small ones above it up to +98 MiB, then each one
// that fits no free range grows the heap below the driver's startup range by its size
// rounded up to 32 MiB, the allocation at the bottom; a 2 MiB one goes to the lowest tail
// left (126 -> 2 MiB tail, 150 -> 10, 594 -> 14, 1188 -> 28).
TEST(VaLayout, PlacesAsTheDriverDidInABareProcess) {
  VaLayout v(kBase, kSpan);
  const std::pair<size_t, int64_t> probe[] = {
      // MiB, MiB from the origin
      {2, 0},      {2, 74},    {2, 76},      {4, 78},   {2, 82},       {20, -446}, {2, -426},   {32, -478},
      {2, -424},   {32, -510}, {32, -542},   {2, -422}, {64, -606},    {2, -420},  {126, -734}, {2, -608},
      {150, -894}, {2, -744},  {594, -1502}, {2, -908}, {1188, -2718}, {2, -1530}};
  // (the probe's 512 B and 1 MiB cudaMallocs shared the page at +74: one 2 MiB take here)
  for (auto [mib, at] : probe) EXPECT_EQ(rel(v, v.take(mib * MiB)), at) << mib << " MiB";
}

// The protocols' warm-up (nn.Linear forward + backward) in a PyTorch process on an H100,
// free ranges read right after it by filling them with 2 MiB cudaMallocs
// (h100_driver_takes.json, "stages" after aten op 15): 6 MiB at -580, 308 MiB from -308 to
// the origin, 20 MiB at +78; the cuBLAS workspaces at -510 and -340.
TEST(VaLayout, TheWarmUpsDriverTakesLeaveTheHolesPyTorchFound) {
  VaLayout v(kBase, kSpan);
  EXPECT_EQ(rel(v, v.take(2 * MiB)), 0);  // nn.Linear(8, 8).cuda()
  v.driver_use(DriverUse::CublasCode);    // addmm: first kernel, cuBLAS, the main thread's handle
  v.driver_use(DriverUse::CublasHandle, 0);
  EXPECT_EQ(rel(v, v.take(32 * MiB)), -510);  // its workspace
  v.driver_use(DriverUse::CublasLt);
  v.driver_use(DriverUse::FirstReduction);    // sum
  v.driver_use(DriverUse::CublasHandle, 1);   // backward: the autograd thread's handle
  EXPECT_EQ(rel(v, v.take(32 * MiB)), -340);  // and workspace
  v.driver_use(DriverUse::CublasHandle, 1);   // once per thread
  v.driver_use(DriverUse::FirstReduction);    // once per process
  EXPECT_EQ(rel(v, v.take(2 * MiB)), -580);
  EXPECT_EQ(rel(v, v.take(4 * MiB)), -578);
  EXPECT_EQ(rel(v, v.take(300 * MiB)), -308);
  EXPECT_EQ(rel(v, v.take(8 * MiB)), -8);
  EXPECT_EQ(rel(v, v.take(20 * MiB)), 78);
  EXPECT_EQ(rel(v, v.take(2 * MiB)), -1118);  // nothing left: a chunk below the lowest
}

// Qwen2 (hf_reference run 3) after the warm-up: the first scan's 4 MiB and the cuDNN
// handle's 8 MiB land in the 150 MiB segment's tail and the big hole as in PyTorch's trace
// (traces/h100_qwen2_ref3.json.gz: its 2 MiB segments at -2404 above the 150 MiB one at
// -2558, then at -134 and -132 after a 4 MiB gap).
TEST(VaLayout, DriverTakesSplitOverHolesInTwoMiBPages) {
  VaLayout v(kBase, kSpan);
  (void)v.take(2 * MiB);
  v.driver_use(DriverUse::CublasHandle, 0);
  (void)v.take(32 * MiB);
  v.driver_use(DriverUse::CublasLt);
  v.driver_use(DriverUse::FirstReduction);
  v.driver_use(DriverUse::CublasHandle, 1);
  (void)v.take(32 * MiB);
  EXPECT_EQ(rel(v, v.take(150 * MiB)), -308);
  for (int64_t at : {-580, -578, -576}) EXPECT_EQ(rel(v, v.take(2 * MiB)), at);
  EXPECT_EQ(rel(v, v.take(20 * MiB)), -158);
  const int64_t big = rel(v, v.take(150 * MiB));  // 138 MiB left above: a 160 MiB chunk below
  v.driver_use(DriverUse::FirstScan);
  EXPECT_EQ(rel(v, v.take(2 * MiB)), big + 154);  // after the scan's 4 MiB in the 10 MiB tail
  v.driver_use(DriverUse::CudnnHandle, 0);        // 4 MiB of tail left, then 4 from -138
  EXPECT_EQ(rel(v, v.take(2 * MiB)), -134);
  EXPECT_EQ(rel(v, v.take(2 * MiB)), -132);
}

TEST(VaLayout, FreedRangesAreReusedLowestFirstAndMerge) {
  VaLayout v(kBase, kSpan);
  EXPECT_EQ(rel(v, v.take(2 * MiB)), 0);
  const uintptr_t a = v.take(100 * MiB), b = v.take(100 * MiB);
  EXPECT_EQ(rel(v, a), -542);                 // a 128 MiB chunk below the startup range, 28 MiB tail
  EXPECT_EQ(rel(v, b), -670);                 // the tail is too small: the next chunk below
  v.give(a, 100 * MiB);                       // merges with its tail and b's, which touches it
  EXPECT_EQ(rel(v, v.take(50 * MiB)), -570);  // lowest first: from b's tail up
  EXPECT_EQ(rel(v, v.take(20 * MiB)), -520);
  v.give(b, 100 * MiB);
  EXPECT_EQ(v.take(100 * MiB), b);
  v.carve(v.origin() + 90 * MiB, 2 * MiB);  // a scripted address takes its range out
  EXPECT_EQ(rel(v, v.take(78 * MiB)), -500);
  EXPECT_EQ(rel(v, v.take(16 * MiB)), 74);    // fits below the carved page
  EXPECT_EQ(rel(v, v.take(20 * MiB)), -702);  // 8 and 6 MiB left: a new chunk
}

TEST(VaLayout, ExhaustedSpanGivesZero) {
  VaLayout v(kBase, VaLayout::kAbove + VaLayout::kStartup + 64 * MiB);
  EXPECT_NE(v.take(64 * MiB), 0u);
  EXPECT_EQ(v.take(2 * MiB), v.origin());
  EXPECT_EQ(v.take(32 * MiB), 0u);
}

// The simulated device's addresses are the layout's, and so are its driver takes.
TEST(VaLayout, TheSimulatedDevicePlacesSegmentsByIt) {
  SimDevice d("sim:test", "test", uint64_t(80) << 30);
  const size_t sizes[] = {2 * MiB, 20 * MiB, 2 * MiB, 300 * MiB, 64 * MiB, 2 * MiB, 40 * MiB, 6 * MiB};
  std::vector<uintptr_t> got;
  for (size_t s : sizes) got.push_back(d.malloc(s));
  d.driver_use(DriverUse::CudnnHandle, 0);
  d.free(got[1], 20 * MiB);
  got.push_back(d.malloc(10 * MiB));
  got.push_back(d.malloc(30 * MiB));
  const uintptr_t top = got[0] + VaLayout::kAbove;
  VaLayout v(top - (uint64_t(1) << 44), uint64_t(1) << 44);
  std::vector<uintptr_t> want;
  for (size_t s : sizes) want.push_back(v.take(s));
  v.driver_use(DriverUse::CudnnHandle, 0);
  v.give(want[1], 20 * MiB);
  want.push_back(v.take(10 * MiB));
  want.push_back(v.take(30 * MiB));
  EXPECT_EQ(got, want);
}

// NCCL at world 2 on rank 0 (h100x2_nccl_layout.json, h100x2_dist_addresses.json run 6):
// after the first all_reduce the model's segments go to the first reduction's range handed
// back (-1086) and the 2 MiB ones to the 14 MiB hole at -1868; DDP's constructor moves
// NCCL's range lower, and its 90 MiB broadcast buffer lands at -2558, the next 2 MiB at -2728.
TEST(VaLayout, NcclsCommunicatorAndItsMoveLeaveTheHolesRankZeroFound) {
  VaLayout v(kBase, kSpan);
  (void)v.take(2 * MiB);
  v.driver_use(DriverUse::CublasHandle, 0);
  (void)v.take(32 * MiB);
  v.driver_use(DriverUse::CublasLt);
  v.driver_use(DriverUse::FirstReduction);
  v.driver_use(DriverUse::CublasHandle, 1);
  (void)v.take(32 * MiB);
  v.driver_use(DriverUse::NcclReload);  // nothing to move before the communicator exists
  v.driver_use(DriverUse::NcclInit);
  EXPECT_EQ(rel(v, v.take(16 * MiB)), -1086);
  EXPECT_EQ(rel(v, v.take(20 * MiB)), -1070);
  EXPECT_EQ(rel(v, v.take(2 * MiB)), -1868);
  EXPECT_EQ(rel(v, v.take(2 * MiB)), -1866);
  v.driver_use(DriverUse::NcclReload);
  EXPECT_EQ(rel(v, v.take(90 * MiB)), -2558);
  EXPECT_EQ(rel(v, v.take(2 * MiB)), -2728);
  EXPECT_EQ(rel(v, v.take(1000 * MiB)), -3422 - 1024);  // nothing that large free: below the moved end
}
