// Unit tests of each placement rule of the caching allocator, against PyTorch 2.11.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "allocator_test_util.h"

namespace vramlab::alloc::testing {
namespace {

TEST(AllocatorRules, SingleTensorTableFromReference) {
  // test/refs/pytorch_reference.json allocator_rules_single_tensor: torch.empty(n bytes)
  // on an empty cache -> (allocated, reserved).
  const std::string table = json_object(
      json_object(read_source_file("test/refs/pytorch_reference.json"), "allocator_rules_single_tensor"), "results");
  std::regex row("\"([0-9]+)\"\\s*:\\s*\\{([^}]*)\\}");
  int rows = 0;
  for (std::sregex_iterator it(table.begin(), table.end(), row), end; it != end; ++it, ++rows) {
    const uint64_t n = std::stoull((*it)[1]);
    const std::string body = (*it)[2];
    auto dev = sim();
    CachingAllocator a(dev);
    Allocation x = a.malloc(n);
    EXPECT_EQ(static_cast<int64_t>(a.memory_allocated()), json_int(body, "allocated")) << n;
    EXPECT_EQ(static_cast<int64_t>(a.memory_reserved()), json_int(body, "reserved")) << n;
    EXPECT_EQ(x.size, a.memory_allocated());
    EXPECT_EQ(check_invariants(a, *dev), "");
  }
  EXPECT_GE(rows, 11);
}

TEST(AllocatorRules, RoundsTo512AndPicksPool) {
  auto dev = sim();
  CachingAllocator a(dev);
  EXPECT_EQ(a.malloc(1).size, 512u);
  EXPECT_EQ(a.malloc(1000).size, 1024u);
  EXPECT_EQ(a.malloc(kSmallSize).size, kSmallSize);
  EXPECT_EQ(stat(a, "allocated_bytes.small_pool.current"), 512 + 1024 + 1048576);
  EXPECT_EQ(stat(a, "segment.small_pool.current"), 1);  // all three share one 2 MiB segment
  EXPECT_EQ(a.malloc(kSmallSize + 1).size, kSmallSize + 512);
  EXPECT_EQ(stat(a, "segment.large_pool.current"), 1);
  EXPECT_EQ(stat(a, "reserved_bytes.large_pool.current"), 20 * MiB);
  EXPECT_EQ(a.malloc(0).ptr, 0u);  // zero bytes: no block, like c10
  EXPECT_EQ(check_invariants(a, *dev), "");
}

TEST(AllocatorRules, SegmentsAre2MiBAlignedGpuLookingAddresses) {
  CachingAllocator a(sim());
  Allocation x = a.malloc(100 * MiB);
  EXPECT_EQ(x.ptr % (2 * MiB), 0u);
  EXPECT_GE(x.ptr, 0x7f0000000000ull);
}

TEST(AllocatorRules, RoundupPower2Divisions) {
  // 1200 KiB-ish example from the c10 comment: 4 divisions between powers of two.
  CachingAllocator a(sim(), AllocatorSettings::parse("roundup_power2_divisions:4"));
  EXPECT_EQ(a.malloc(1200 * 1024).size, 1280u * 1024);  // 1 MiB..2 MiB in steps of 256 KiB
  EXPECT_EQ(a.malloc(5 * MiB + 1).size, 6 * MiB);       // 4..8 MiB in steps of 1 MiB
  EXPECT_EQ(a.malloc(8 * MiB).size, 8 * MiB);           // powers of two stay
  EXPECT_EQ(a.malloc(1500).size, 1536u);                // size <= 512 * divisions: plain 512 B rounding
  EXPECT_EQ(a.malloc(3000).size, 3072u);                // 2048..4096 in steps of 512

  // Per-range form: [256:1,512:2,>:4] means < 256 MiB unchanged (1 = off),
  // 512 MiB interval 2 divisions, above 4 divisions.
  CachingAllocator b(sim(), AllocatorSettings::parse("roundup_power2_divisions:[256:1,512:2,>:4]"));
  EXPECT_EQ(b.malloc(300 * MiB).size, 300 * MiB);        // 256..512 MiB slot: 1 division
  EXPECT_EQ(b.malloc(600 * MiB).size, 768 * MiB);        // 512 MiB..1 GiB: 2 divisions
  EXPECT_EQ(b.malloc(1100 * MiB).size, 1280 * MiB);      // >: 4 divisions of 1..2 GiB
  EXPECT_EQ(b.malloc(3 * MiB + 7).size, 3 * MiB + 512);  // below 256 MiB: off
}

TEST(AllocatorRules, LargeSegmentSizes) {
  struct Case {
    size_t request, segment;
  } cases[] = {{kSmallSize + 1, 20 * MiB},
               {5 * MiB, 20 * MiB},
               {10 * MiB - 1, 10 * MiB},
               {11 * MiB + 5, 12 * MiB},
               {101 * MiB, 102 * MiB}};
  for (const Case& c : cases) {
    auto dev = sim();
    CachingAllocator a(dev);
    a.malloc(c.request);
    EXPECT_EQ(a.memory_reserved(), c.segment) << c.request;
    EXPECT_EQ(dev->used_bytes(), c.segment);
  }
  // large_segment_size_mb changes the 20 MiB buffer for 1..10 MiB requests.
  CachingAllocator b(sim(), AllocatorSettings::parse("large_segment_size_mb:32"));
  b.malloc(5 * MiB);
  EXPECT_EQ(b.memory_reserved(), 32 * MiB);
}

TEST(AllocatorRules, BestFitPrefersSmallestThenLowestAddress) {
  auto dev = sim();
  CachingAllocator a(dev);
  Allocation big = a.malloc(40 * MiB), mid = a.malloc(30 * MiB), mid2 = a.malloc(30 * MiB);
  a.free(big);
  a.free(mid2);
  a.free(mid);
  Allocation x = a.malloc(25 * MiB);  // both 30 MiB blocks fit better than 40 MiB: lowest address wins
  EXPECT_EQ(x.ptr, std::min(mid.ptr, mid2.ptr));
  EXPECT_EQ(stat(a, "num_device_alloc"), 3);
  EXPECT_EQ(check_invariants(a, *dev), "");
}

TEST(AllocatorRules, SplitRules) {
  auto dev = sim();
  CachingAllocator a(dev);
  // Large pool: remainder kept only when > 1 MiB.
  Allocation seg = a.malloc(12 * MiB);
  a.free(seg);
  Allocation y = a.malloc(11 * MiB);  // remainder exactly 1 MiB: not split
  EXPECT_EQ(y.size, 12 * MiB);
  EXPECT_EQ(y.requested, 11 * MiB);
  a.free(y);
  Allocation z = a.malloc(10 * MiB + 512 * 1024);  // remainder 1.5 MiB: split
  EXPECT_EQ(z.size, 10 * MiB + 512 * 1024);
  EXPECT_EQ(stat(a, "inactive_split.large_pool.current"), 1);
  EXPECT_EQ(stat(a, "inactive_split_bytes.large_pool.current"), static_cast<int64_t>(1536 * 1024));
  // Small pool: remainder kept when >= 512 B.
  Allocation s1 = a.malloc(kSmallSize);
  Allocation s2 = a.malloc(kSmallSize - 512);  // leaves exactly 512 B of the 2 MiB segment
  EXPECT_EQ(s2.size, kSmallSize - 512);
  Allocation s3 = a.malloc(512);
  EXPECT_EQ(s3.ptr, s2.ptr + s2.size);
  EXPECT_EQ(stat(a, "segment.small_pool.current"), 1);
  EXPECT_EQ(check_invariants(a, *dev), "");
  a.free(s1), a.free(s2), a.free(s3), a.free(z);
  EXPECT_EQ(check_invariants(a, *dev), "");
  EXPECT_EQ(stat(a, "inactive_split.all.current"), 0);
}

TEST(AllocatorRules, FreeCoalescesWithFreeNeighbours) {
  auto dev = sim();
  CachingAllocator a(dev);
  Allocation p[4];
  for (auto& x : p) x = a.malloc(3 * MiB);  // four blocks carved from one 20 MiB segment
  EXPECT_EQ(stat(a, "segment.all.current"), 1);
  a.free(p[1]);
  a.free(p[3]);  // merges with the 8 MiB tail
  EXPECT_EQ(stat(a, "inactive_split.all.current"), 2);
  a.free(p[2]);  // merges both sides into one 17 MiB block
  EXPECT_EQ(stat(a, "inactive_split.all.current"), 1);
  EXPECT_EQ(stat(a, "inactive_split_bytes.all.current"), static_cast<int64_t>(17 * MiB));
  a.free(p[0]);
  EXPECT_EQ(stat(a, "inactive_split.all.current"), 0);
  MemorySnapshot s = a.snapshot();
  ASSERT_EQ(s.segments.size(), 1u);
  ASSERT_EQ(s.segments[0].blocks.size(), 1u);
  EXPECT_EQ(s.segments[0].blocks[0].size, 20 * MiB);
  EXPECT_EQ(check_invariants(a, *dev), "");
}

TEST(AllocatorRules, StreamsHaveSeparatePools) {
  auto dev = sim();
  CachingAllocator a(dev);
  a.free(a.malloc(4 * MiB, /*stream=*/1));
  a.malloc(4 * MiB, /*stream=*/2);  // cannot reuse stream 1's cached block
  EXPECT_EQ(stat(a, "num_device_alloc"), 2);
  a.malloc(4 * MiB, 1);
  EXPECT_EQ(stat(a, "num_device_alloc"), 2);
  MemorySnapshot s = a.snapshot();
  ASSERT_EQ(s.segments.size(), 2u);
  EXPECT_NE(s.segments[0].stream, s.segments[1].stream);
  EXPECT_EQ(check_invariants(a, *dev), "");
}

TEST(AllocatorRules, MaxSplitSizeOversizeRules) {
  auto dev = sim();
  CachingAllocator a(dev, AllocatorSettings::parse("max_split_size_mb:100"));
  Allocation big = a.malloc(200 * MiB);
  EXPECT_EQ(stat(a, "oversize_allocations.current"), 1);
  EXPECT_EQ(stat(a, "oversize_segments.current"), 1);
  a.free(big);
  // Small request never takes an oversize cached block.
  a.free(a.malloc(30 * MiB));
  EXPECT_EQ(stat(a, "num_device_alloc"), 2);
  // Oversize request takes a cached block only if it is < request + 20 MiB...
  Allocation c = a.malloc(181 * MiB);  // 200 < 181 + 20
  EXPECT_EQ(c.ptr, big.ptr);
  EXPECT_EQ(c.size, 200 * MiB);  // and it is not split
  a.free(c);
  Allocation d = a.malloc(180 * MiB);  // 200 >= 180 + 20: new segment
  EXPECT_NE(d.ptr, big.ptr);
  EXPECT_EQ(stat(a, "num_device_alloc"), 3);
  EXPECT_EQ(check_invariants(a, *dev), "");

  // max_non_split_rounding_mb widens that window.
  CachingAllocator b(sim(), AllocatorSettings::parse("max_split_size_mb:100,max_non_split_rounding_mb:64"));
  Allocation e = b.malloc(200 * MiB);
  b.free(e);
  EXPECT_EQ(b.malloc(150 * MiB).ptr, e.ptr);
}

TEST(AllocatorRules, ReleaseAvailableCachedBlocksBeforeFullRetry) {
  auto dev = sim();
  CachingAllocator a(dev, AllocatorSettings::parse("max_split_size_mb:64"));
  a.set_capacity_limit(300 * MiB);
  Allocation x = a.malloc(100 * MiB), y = a.malloc(100 * MiB), small = a.malloc(30 * MiB);
  a.free(x);
  a.free(y);
  // Needs 150 MiB: cached 100 MiB blocks are oversize and too small; two are freed
  // (largest first) without a full retry.
  Allocation z = a.malloc(150 * MiB);
  EXPECT_NE(z.ptr, 0u);
  EXPECT_EQ(stat(a, "num_alloc_retries"), 0);
  EXPECT_EQ(stat(a, "num_device_free"), 2);
  a.free(small);
  EXPECT_EQ(check_invariants(a, *dev), "");
}

TEST(AllocatorRules, OomRetryReleasesUnsplitCachedSegments) {
  auto dev = sim();
  CachingAllocator a(dev);
  a.set_capacity_limit(100 * MiB);
  a.free(a.malloc(60 * MiB));
  Allocation b = a.malloc(70 * MiB);  // 60 + 70 > 100: release cached 60 MiB, retry
  EXPECT_NE(b.ptr, 0u);
  EXPECT_EQ(stat(a, "num_alloc_retries"), 1);
  EXPECT_EQ(stat(a, "num_device_free"), 1);
  EXPECT_EQ(stat(a, "num_ooms"), 0);
  EXPECT_EQ(a.memory_reserved(), 70 * MiB);
  EXPECT_THROW(a.malloc(40 * MiB), OutOfMemoryError);
  EXPECT_EQ(stat(a, "num_ooms"), 1);
  EXPECT_EQ(stat(a, "num_alloc_retries"), 2);
  EXPECT_EQ(check_invariants(a, *dev), "");
}

TEST(AllocatorRules, DeviceCapacityBindsWithoutACap) {
  auto dev = sim("sim:custom:1GiB");
  CachingAllocator a(dev);
  Allocation x = a.malloc(800 * MiB);
  EXPECT_THROW(a.malloc(300 * MiB), OutOfMemoryError);
  a.free(x);
  EXPECT_NE(a.malloc(300 * MiB).ptr, 0u);  // retry path frees the cached 800 MiB
  EXPECT_EQ(check_invariants(a, *dev), "");
}

TEST(AllocatorRules, EmptyCacheReturnsOnlyUnsplitFreeSegments) {
  auto dev = sim();
  CachingAllocator a(dev);
  Allocation keep = a.malloc(3 * MiB);
  Allocation other = a.malloc(3 * MiB);
  a.free(a.malloc(50 * MiB));
  a.free(a.malloc(1000));
  a.free(other);
  EXPECT_EQ(a.memory_reserved(), 20 * MiB + 50 * MiB + 2 * MiB);
  a.empty_cache();
  EXPECT_EQ(a.memory_reserved(), 20 * MiB);  // the split 20 MiB segment stays
  EXPECT_EQ(stat(a, "num_device_free"), 2);
  EXPECT_EQ(stat(a, "num_sync_all_streams"), 1);
  a.free(keep);
  a.empty_cache();
  EXPECT_EQ(a.memory_reserved(), 0u);
  EXPECT_EQ(dev->used_bytes(), 0u);
  EXPECT_EQ(check_invariants(a, *dev), "");
}

TEST(AllocatorRules, MemoryFractionCap) {
  auto dev = sim("sim:custom:10GiB");
  CachingAllocator a(dev);
  EXPECT_DOUBLE_EQ(a.memory_fraction(), 1.0);
  a.set_memory_fraction(0.25);
  EXPECT_EQ(a.capacity_limit().value(), 10 * GiB / 4);
  EXPECT_NE(a.malloc(2 * GiB).ptr, 0u);
  EXPECT_THROW(a.malloc(1 * GiB), OutOfMemoryError);
  EXPECT_THROW(a.set_memory_fraction(1.5), std::invalid_argument);
  a.set_memory_fraction(1.0);
  EXPECT_FALSE(a.capacity_limit().has_value());
  EXPECT_NE(a.malloc(1 * GiB).ptr, 0u);
  // per_process_memory_fraction in the settings string applies the same cap.
  CachingAllocator b(dev, AllocatorSettings::parse("per_process_memory_fraction:0.5"));
  EXPECT_EQ(b.capacity_limit().value(), 5 * GiB);
}

TEST(AllocatorRules, GarbageCollectionThresholdFreesOldCachedBlocks) {
  auto dev = sim();
  CachingAllocator a(dev, AllocatorSettings::parse("garbage_collection_threshold:0.5"));
  a.set_capacity_limit(200 * MiB);
  a.free(a.malloc(50 * MiB));
  a.free(a.malloc(60 * MiB));         // two cached unsplit blocks, 110 MiB > 100 MiB threshold
  Allocation c = a.malloc(70 * MiB);  // miss: GC runs before asking the device
  EXPECT_NE(c.ptr, 0u);
  EXPECT_GE(stat(a, "num_device_free"), 1);
  EXPECT_EQ(stat(a, "num_alloc_retries"), 0);  // GC made room without the retry path
  EXPECT_EQ(check_invariants(a, *dev), "");
}

TEST(AllocatorRules, GarbageCollectionNeedsACap) {
  auto dev = sim();
  CachingAllocator a(dev, AllocatorSettings::parse("garbage_collection_threshold:0.5"));
  a.free(a.malloc(60 * MiB));
  a.malloc(70 * MiB);
  EXPECT_EQ(stat(a, "num_device_free"), 0);  // like PyTorch: only with a memory fraction set
}

TEST(AllocatorRules, StatCountersAndResetPeak) {
  auto dev = sim();
  CachingAllocator a(dev);
  Allocation x = a.malloc(3 * MiB);
  Allocation y = a.malloc(5 * MiB);
  a.free(x);
  EXPECT_EQ(stat(a, "allocated_bytes.all.allocated"), static_cast<int64_t>(8 * MiB));
  EXPECT_EQ(stat(a, "allocated_bytes.all.freed"), static_cast<int64_t>(3 * MiB));
  EXPECT_EQ(stat(a, "allocated_bytes.all.peak"), static_cast<int64_t>(8 * MiB));
  EXPECT_EQ(stat(a, "allocation.all.allocated"), 2);
  EXPECT_EQ(stat(a, "requested_bytes.all.current"), static_cast<int64_t>(5 * MiB));
  EXPECT_EQ(a.max_memory_allocated(), 8 * MiB);
  a.reset_peak();
  EXPECT_EQ(a.max_memory_allocated(), 5 * MiB);
  EXPECT_EQ(a.max_memory_reserved(), 20 * MiB);
  a.reset_accumulated();
  EXPECT_EQ(stat(a, "allocated_bytes.all.allocated"), 0);
  EXPECT_EQ(stat(a, "num_device_alloc"), 0);
  EXPECT_EQ(stat(a, "max_split_size"), -1);
  a.free(y);
}

TEST(AllocatorRules, FreeOfUnknownAddressIsAnError) {
  CachingAllocator a(sim());
  Allocation x = a.malloc(1000);
  EXPECT_THROW(a.free(x.ptr + 512), std::invalid_argument);
  a.free(x);
  EXPECT_THROW(a.free(x), std::invalid_argument);  // double free
  a.free(0);                                       // nullptr is a no-op
}

TEST(AllocatorRules, StatsReadableFromAnotherThread) {
  auto dev = sim();
  CachingAllocator a(dev);
  std::atomic<bool> stop{false};
  std::thread reader([&] {
    while (!stop.load()) {
      uint64_t al = a.memory_allocated(), re = a.memory_reserved();
      (void)al, (void)re;
      DeviceStats s = a.stats();
      EXPECT_LE(s.allocated_bytes[kAggregate].current, s.reserved_bytes[kAggregate].current);
    }
  });
  std::vector<Allocation> live;
  for (int i = 0; i < 20000; ++i) {
    if (live.size() > 50 || (i % 3 == 0 && !live.empty())) {
      a.free(live.back());
      live.pop_back();
    } else {
      live.push_back(a.malloc(static_cast<size_t>((i * 7919) % (8 * MiB)) + 1));
    }
  }
  stop = true;
  reader.join();
  EXPECT_EQ(check_invariants(a, *dev), "");
}

TEST(AllocatorRules, VirtualClockShowsWhyCachingMatters) {
  auto dev = sim();
  CachingAllocator a(dev);
  uint64_t t0 = a.virtual_time_ns();
  a.free(a.malloc(64 * MiB));  // miss: a cudaMalloc
  uint64_t miss = a.virtual_time_ns() - t0;
  t0 = a.virtual_time_ns();
  a.free(a.malloc(64 * MiB));  // hit: host work only
  uint64_t hit = a.virtual_time_ns() - t0;
  EXPECT_GT(miss, 20'000u);
  EXPECT_LT(hit, 1'000u);
  EXPECT_GT(miss, 50 * hit);
}

}  // namespace
}  // namespace vramlab::alloc::testing
