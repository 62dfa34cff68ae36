#include <gtest/gtest.h>

#include "device/device.h"
#include "device/presets.h"

using namespace vramlab;

TEST(Registry, ListsEverySimPresetFirst) {
  auto list = list_devices();
  ASSERT_GE(list.size(), sim_presets().size());
  for (size_t i = 0; i < sim_presets().size(); ++i) {
    EXPECT_EQ(list[i].kind, "sim");
    EXPECT_EQ(list[i].id, std::string("sim:") + sim_presets()[i].key);
    EXPECT_EQ(list[i].total, sim_presets()[i].total);
    EXPECT_GT(list[i].mem_bandwidth_gbs, 0);
  }
  for (size_t i = sim_presets().size(); i < list.size(); ++i) {
    EXPECT_EQ(list[i].kind, "cuda");
    EXPECT_EQ(list[i].id, "cuda:" + std::to_string(list[i].ordinal));
    EXPECT_LE(list[i].free, list[i].total);
  }
}

TEST(Registry, FindsPresetsByKey) {
  EXPECT_TRUE(find_sim_preset("h100-80gb").has_value());
  EXPECT_TRUE(find_sim_preset("t4-16gb").has_value());
  EXPECT_FALSE(find_sim_preset("h100-80GB-typo").has_value());
}
