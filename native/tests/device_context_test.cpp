// The whole card: a simulated preset holds its CUDA context and library handles outside the
// allocator, so cudaMalloc fails once reserved + context would pass the card's total, and the
// OOM message counts the context in "this process has", as PyTorch's (from NVML) does.
#include <gtest/gtest.h>

#include "allocator/stats.h"
#include "allocator_test_util.h"
#include "device/presets.h"

namespace vramlab::alloc::testing {
namespace {

TEST(DeviceContext, PresetOomsWhenReservedWouldPassTotalMinusContext) {
  const auto preset = find_sim_preset("rtx4090-24gb");
  ASSERT_TRUE(preset.has_value());
  ASSERT_GT(preset->context, 0u);
  auto dev = sim("sim:rtx4090-24gb");
  EXPECT_EQ(dev->total_memory(), preset->total);
  EXPECT_EQ(dev->free_memory(), preset->total - preset->context);

  CachingAllocator a(dev);
  const uint64_t usable = preset->total - preset->context;
  const uint64_t first = (usable - 64 * MiB) / (2 * MiB) * (2 * MiB);  // leaves 64 MiB or a bit more
  Allocation keep = a.malloc(first);
  ASSERT_EQ(a.memory_reserved(), first);
  // 100 MiB more stays under the card's total but not beside the context.
  ASSERT_LT(first + 100 * MiB, preset->total);
  try {
    a.malloc(100 * MiB);
    FAIL() << "expected an OOM: reserved + context would pass the total";
  } catch (const OutOfMemoryError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("GPU 0 has a total capacity of " + format_size(preset->total) + " of which " +
                       format_size(usable - first) + " is free. "),
              std::string::npos)
        << msg;
    EXPECT_NE(msg.find("this process has " + format_size(first + preset->context) + " memory in use. "),
              std::string::npos)
        << msg;
  }
  a.free(keep);
}

TEST(DeviceContext, CustomSizeIsAllForTheAllocator) {
  const auto preset = find_sim_preset("rtx4090-24gb");
  ASSERT_TRUE(preset.has_value());
  // The same total as a custom device: no context, so the same two blocks fit.
  auto dev = sim("sim:custom:" + std::to_string(preset->total));
  EXPECT_EQ(dev->info().context, 0u);
  EXPECT_EQ(dev->free_memory(), preset->total);
  CachingAllocator a(dev);
  const uint64_t first = (preset->total - preset->context - 64 * MiB) / (2 * MiB) * (2 * MiB);
  Allocation x = a.malloc(first);
  Allocation y = a.malloc(100 * MiB);
  EXPECT_EQ(a.memory_reserved(), first + 100 * MiB);
  a.free(y);
  a.free(x);
}

TEST(DeviceContext, ListedWithEveryPreset) {
  for (const DeviceInfo& d : list_devices()) {
    if (d.kind != "sim") continue;
    const auto p = find_sim_preset(d.id.substr(4));
    ASSERT_TRUE(p.has_value()) << d.id;
    EXPECT_EQ(d.context, p->context) << d.id;
    EXPECT_GT(d.context, 0u) << d.id;
    EXPECT_EQ(d.free, d.total - d.context) << d.id;
    EXPECT_EQ(open_device(d.id)->info().context, d.context) << d.id;
  }
}

}  // namespace
}  // namespace vramlab::alloc::testing
