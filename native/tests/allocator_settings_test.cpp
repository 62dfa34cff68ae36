// PYTORCH_CUDA_ALLOC_CONF parsing: values, defaults and errors that name the bad key.
#include <gtest/gtest.h>

#include "allocator/settings.h"

namespace vramlab::alloc {
namespace {

TEST(AllocatorSettings, DefaultsMatchPyTorch) {
  AllocatorSettings s = AllocatorSettings::parse("");
  EXPECT_TRUE(s.max_split_unlimited());
  EXPECT_EQ(s.max_non_split_rounding_size, kLargeBuffer);
  EXPECT_EQ(s.large_segment_size, kLargeBuffer);
  EXPECT_EQ(s.garbage_collection_threshold, 0.0);
  EXPECT_FALSE(s.expandable_segments);
  for (size_t d : s.roundup_power2_divisions) EXPECT_EQ(d, 0u);
}

TEST(AllocatorSettings, ParsesEveryKey) {
  AllocatorSettings s = AllocatorSettings::parse(
      " max_split_size_mb:128, garbage_collection_threshold:0.6,expandable_segments:True,"
      "roundup_power2_divisions:[256:1,512:2,>:4], max_non_split_rounding_mb:40,backend:native,"
      "release_lock_on_cudamalloc:False,per_process_memory_fraction:0.5");
  EXPECT_EQ(s.max_split_size, 128 * kMB);
  EXPECT_DOUBLE_EQ(s.garbage_collection_threshold, 0.6);
  EXPECT_TRUE(s.expandable_segments);
  EXPECT_EQ(s.max_non_split_rounding_size, 40 * kMB);
  EXPECT_DOUBLE_EQ(s.per_process_memory_fraction.value(), 0.5);
  // [256:1,512:2,>:4]: slots below 256 MiB take the first value, 256 -> 1, 512 -> 2, above -> 4.
  EXPECT_EQ(s.roundup_power2_divisions[0], 1u);
  EXPECT_EQ(s.roundup_power2_divisions[7], 1u);
  EXPECT_EQ(s.roundup_power2_divisions[8], 1u);
  EXPECT_EQ(s.roundup_power2_divisions[9], 2u);
  EXPECT_EQ(s.roundup_power2_divisions[10], 4u);
  EXPECT_EQ(s.roundup_power2_divisions[15], 4u);
  EXPECT_EQ(s.roundup_divisions_for(600 * kMB), 2u);
  EXPECT_EQ(s.roundup_divisions_for(100), 1u);
  EXPECT_EQ(s.roundup_divisions_for(size_t(1) << 40), 4u);

  AllocatorSettings single = AllocatorSettings::parse("roundup_power2_divisions:8");
  for (size_t d : single.roundup_power2_divisions) EXPECT_EQ(d, 8u);
  EXPECT_FALSE(AllocatorSettings::parse("expandable_segments:False").expandable_segments);
}

void expect_error(const std::string& conf, const std::string& key) {
  try {
    AllocatorSettings::parse(conf);
    ADD_FAILURE() << "no error for " << conf;
  } catch (const SettingsError& e) {
    EXPECT_NE(std::string(e.what()).find("'" + key + "'"), std::string::npos) << e.what();
  }
}

TEST(AllocatorSettings, BadStringsNameTheKey) {
  expect_error("max_split_mb:128", "max_split_mb");           // unknown key
  expect_error("max_split_size_mb:10", "max_split_size_mb");  // below 20 MiB
  expect_error("max_split_size_mb:lots", "max_split_size_mb");
  expect_error("max_split_size_mb", "max_split_size_mb");  // missing ':'
  expect_error("garbage_collection_threshold:1.5", "garbage_collection_threshold");
  expect_error("expandable_segments:yes", "expandable_segments");
  expect_error("roundup_power2_divisions:3", "roundup_power2_divisions");
  expect_error("roundup_power2_divisions:[100:2]", "roundup_power2_divisions");
  expect_error("roundup_power2_divisions:[256:2", "roundup_power2_divisions");
  expect_error("backend:cudaMallocAsync", "backend");
  expect_error("per_process_memory_fraction:2", "per_process_memory_fraction");
  expect_error("expandable_segments:True max_split_size_mb:200", "expandable_segments");  // missing ','
  expect_error("large_segment_size_mb:8", "large_segment_size_mb");
}

}  // namespace
// A huge settings string (a 100 MB alloc_conf) must not be echoed whole in its error.
TEST(AllocatorSettings, ErrorsQuoteAHugeStringShortly) {
  const std::string huge_key(4 << 20, 'k');
  const std::string huge_value = "expandable_segments:" + std::string(4 << 20, 'y');
  for (const std::string& conf :
       {huge_key, huge_key + ":1", huge_value, "max_split_size_mb:" + std::string(4 << 20, '9')}) {
    try {
      AllocatorSettings::parse(conf);
      ADD_FAILURE() << "no error";
    } catch (const SettingsError& e) {
      EXPECT_LT(std::string(e.what()).size(), 512u);
      EXPECT_NE(std::string(e.what()).find("characters)"), std::string::npos) << e.what();
    }
  }
}

}  // namespace vramlab::alloc
