// Replaying real PyTorch traces (test/fixtures/torch/*.pickle, converted by
// scripts/pickle_to_trace.py) must give PyTorch's own device statistics.
#include <gtest/gtest.h>

#include "allocator/replay.h"
#include "allocator_test_util.h"

namespace vramlab::alloc::testing {
namespace {

class FixtureReplay : public ::testing::TestWithParam<const char*> {};

TEST_P(FixtureReplay, MatchesPyTorchDeviceStats) {
  const std::string name = GetParam();
  const std::string expected = read_source_file("test/fixtures/torch/" + name + ".stats.json");
  ReplayTrace trace = parse_replay_text(read_source_file("test/fixtures/torch/" + name + ".trace.txt"));
  ASSERT_GT(trace.ops.size(), 100u);

  ASSERT_FALSE(trace.segment_addresses.empty());
  // With the recorded cudaMalloc addresses, and (mlp_adam) with the simulated driver's
  // own layout: the allocator breaks ties between equal free blocks by address, so
  // without them a trace whose process laid out memory differently (resnet18_sgd, not
  // a fresh process) may pick other blocks.
  for (bool hints : {true, false}) {
    if (!hints && name != "mlp_adam") continue;
    ReplayTrace t = trace;
    if (!hints) t.segment_addresses.clear();
    auto dev = sim("sim:h200-141gb");
    CachingAllocator a(dev, AllocatorSettings::parse(json_string(expected, "conf")));
    ReplayResult r = replay(a, t.view(), true);
    SCOPED_TRACE(hints ? "with address hints" : "sim addresses");

    EXPECT_EQ(r.first_oom_index, -1);
    EXPECT_EQ(static_cast<int64_t>(r.peak_reserved), json_int(expected, "peak_reserved"));
    EXPECT_EQ(r.num_device_alloc, json_int(expected, "num_device_alloc"));
    EXPECT_EQ(r.num_device_free, json_int(expected, "num_device_free"));
    EXPECT_EQ(static_cast<int64_t>(r.peak_allocated), json_int(expected, "peak_allocated"));
    EXPECT_EQ(check_invariants(a, *dev), "");
    ASSERT_TRUE(r.snapshot.has_value());
    EXPECT_FALSE(r.snapshot->segments.empty());
  }
}

INSTANTIATE_TEST_SUITE_P(Torch, FixtureReplay, ::testing::Values("mlp_adam", "resnet18_sgd"));

TEST(FixtureReplay, SummaryTableMatchesPyTorchAtTheEnd) {
  // The fixture's summary.txt was printed at the end of the recorded run, so the
  // replayed allocator must print the same table, byte for byte. (Replayed with the
  // recorded segment addresses, so equal-size best-fit ties resolve identically.)
  for (const char* name : {"mlp_adam", "resnet18_sgd"}) {
    ReplayTrace trace = parse_replay_text(read_source_file(std::string("test/fixtures/torch/") + name + ".trace.txt"));
    CachingAllocator a(sim("sim:h200-141gb"));
    replay(a, trace.view());
    EXPECT_EQ(a.memory_summary(), read_source_file(std::string("test/fixtures/torch/") + name + ".summary.txt"))
        << name;
  }
}

TEST(ReplayText, RejectsMalformedLinesWithTheLineNumber) {
  EXPECT_NO_THROW(parse_replay_text("# c\na 1 512 0\nf 1\ne\n"));
  try {
    parse_replay_text("a 1 512\nx 2\n");
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("line 2"), std::string::npos) << e.what();
  }
  EXPECT_THROW(parse_replay_text("f\n"), std::invalid_argument);
}

TEST(Replay, DoubleAllocOfALiveIdIsAnError) {
  ReplayTrace t;
  t.alloc(1, 512);
  t.alloc(1, 512);
  CachingAllocator a(sim());
  EXPECT_THROW(replay(a, t.view()), std::invalid_argument);
}

}  // namespace
}  // namespace vramlab::alloc::testing
