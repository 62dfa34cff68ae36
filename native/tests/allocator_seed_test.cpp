// Seeding an allocator from a recorded state: the seeded allocator must be the same, block
// for block and counter for counter, as the one whose state was recorded, and continue
// making the same decisions.
#include <gtest/gtest.h>

#include "allocator/replay.h"
#include "allocator_test_util.h"

namespace vramlab::alloc::testing {
namespace {

std::vector<SeedSegment> to_seed(const MemorySnapshot& snap) {
  std::vector<SeedSegment> out;
  for (const SegmentSnapshot& s : snap.segments) {
    SeedSegment g{s.address, s.stream, !s.is_large, {}};
    for (const BlockSnapshot& b : s.blocks) g.blocks.push_back({b.size, b.requested_size, b.allocated});
    out.push_back(std::move(g));
  }
  return out;
}

TEST(Seed, ASeededAllocatorMatchesTheOriginalAndGoesOnAlike) {
  auto dev_a = sim();
  CachingAllocator a(dev_a);
  std::vector<Allocation> live;
  for (size_t sz : {3 * MiB, 700 * 1024ul, 25 * MiB, 4096ul, 6 * MiB, 1500ul}) live.push_back(a.malloc(sz));
  a.free(live[1]);  // leaves split free blocks in both pools
  a.free(live[3]);
  a.free(live[0]);

  auto dev_b = sim();
  CachingAllocator b(dev_b);
  b.seed(to_seed(a.snapshot(false)));
  ASSERT_EQ(check_invariants(b, *dev_b), "");
  for (const char* k :
       {"allocated_bytes.all.current", "reserved_bytes.all.current", "segment.all.current",
        "inactive_split.all.current", "inactive_split_bytes.all.current", "requested_bytes.all.current"})
    EXPECT_EQ(stat(b, k), stat(a, k)) << k;
  EXPECT_EQ(stat(b, "num_device_alloc"), 0);  // the state is not counted as device calls

  // Same next decisions: best fit over the seeded free blocks, then frees merging with them.
  for (size_t sz : {2 * MiB, 512ul, 30 * MiB}) EXPECT_EQ(b.malloc(sz).ptr, a.malloc(sz).ptr) << sz;
  b.free(live[2].ptr);
  a.free(live[2].ptr);
  EXPECT_EQ(stat(b, "inactive_split_bytes.all.current"), stat(a, "inactive_split_bytes.all.current"));
  ASSERT_EQ(check_invariants(b, *dev_b), "");
  b.empty_cache();
  ASSERT_EQ(check_invariants(b, *dev_b), "");
}

TEST(Seed, RejectsBadLayouts) {
  auto dev = sim();
  CachingAllocator a(dev);
  SeedSegment two_free{0x7f0000000000ull, 0, false, {{MiB * 2, 0, false}, {MiB * 2, 0, false}}};
  EXPECT_THROW(a.seed({two_free}), std::invalid_argument);
  SeedSegment odd{0x7f0000000000ull, 0, false, {{1000, 10, true}}};
  EXPECT_THROW(a.seed({odd}), std::invalid_argument);
  SeedSegment ok{0x7f0000000000ull, 0, false, {{20 * MiB, 5, true}}};
  EXPECT_THROW(a.seed({ok, ok}), std::invalid_argument);  // the second overlaps the first
  // Sizes from a hostile file: no sum or address may wrap.
  SeedSegment huge{0x7f0000000000ull, 0, false, {{(size_t(1) << 62) + 512, 0, false}}};
  EXPECT_THROW(a.seed({huge}), std::invalid_argument);
  SeedSegment many{0x7f0000000000ull,
                   0,
                   false,
                   {{size_t(1) << 61, 1, true}, {size_t(1) << 61, 1, true}, {size_t(1) << 61, 1, true}}};
  EXPECT_THROW(a.seed({many}), std::invalid_argument);
  SeedSegment top{~uintptr_t(0) - 4095, 0, false, {{8192, 8192, true}}};
  EXPECT_THROW(a.seed({top}), std::invalid_argument);
  EXPECT_EQ(check_invariants(a, *dev), "");
  CachingAllocator capped(sim());
  capped.set_capacity_limit(10 * MiB);
  EXPECT_THROW(capped.seed({ok}), std::invalid_argument);
}

TEST(Seed, ReplayFreesSeededAllocationsByIdAndRetriesRecordedOoms) {
  ReplayTrace t;
  t.free(7);             // a seeded allocation
  t.alloc(1, 30 * MiB);  // fits in the seeded segment's freed room
  t.ops.push_back(static_cast<uint8_t>(ReplayOpKind::kOomAttempt));
  t.sizes.push_back(60 * MiB);
  t.ids.push_back(0);
  t.streams.push_back(0);
  std::vector<SeedSegment> seed{{0x7f0000000000ull, 0, false, {{40 * MiB, 40 * MiB, true}}}};
  std::vector<uint32_t> ids{7};
  ReplayInput in = t.view();
  in.seed = &seed;
  in.seed_ids = &ids;
  ReplayOptions capped;
  capped.capacity = 64 * MiB;
  ReplayResult r = replay(in, capped);
  EXPECT_EQ(r.num_device_alloc, 0);
  EXPECT_EQ(r.peak_reserved, 40 * MiB);
  ASSERT_EQ(r.oom_attempts.size(), 1u);
  EXPECT_TRUE(r.oom_attempts[0].failed);
  EXPECT_EQ(r.num_ooms, 1);
  EXPECT_EQ(r.num_alloc_retries, 1);
  EXPECT_EQ(r.first_oom_index, 2);
  ReplayResult roomy = replay(in, ReplayOptions{});
  ASSERT_EQ(roomy.oom_attempts.size(), 1u);
  EXPECT_FALSE(roomy.oom_attempts[0].failed);
  EXPECT_EQ(roomy.num_ooms, 0);
}

}  // namespace
}  // namespace vramlab::alloc::testing
