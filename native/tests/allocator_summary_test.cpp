// memory_summary() layout, history ring buffer and snapshot structure.
#include <gtest/gtest.h>

#include "allocator_test_util.h"

namespace vramlab::alloc::testing {
namespace {

std::vector<std::string> lines_of(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

TEST(MemorySummary, LayoutMatchesPyTorchReference) {
  // Numbers from a real sequence; every line's layout (width, separators, labels,
  // column positions) must match test/refs/pytorch_memory_summary_example.txt.
  auto dev = sim();
  CachingAllocator a(dev);
  std::vector<Allocation> live;
  for (int i = 0; i < 40; ++i) live.push_back(a.malloc(static_cast<size_t>(i) * 123457 + 100));
  for (int i = 0; i < 40; i += 3) a.free(live[i]);
  const auto got = lines_of(a.memory_summary());
  const auto ref = lines_of(read_source_file("test/refs/pytorch_memory_summary_example.txt"));
  ASSERT_EQ(got.size(), ref.size());
  for (size_t i = 0; i < ref.size(); ++i) {
    ASSERT_EQ(got[i].size(), ref[i].size()) << "line " << i << "\n" << got[i] << "\n" << ref[i];
    for (size_t c = 0; c < ref[i].size(); ++c) {
      // Digits (and the unit after a number) may differ; everything else is layout.
      bool ref_var = std::isdigit(static_cast<unsigned char>(ref[i][c])) || ref[i][c] == ' ';
      bool got_var = std::isdigit(static_cast<unsigned char>(got[i][c])) || got[i][c] == ' ';
      if (ref_var && got_var) continue;
      if (ref[i][c] == got[i][c]) continue;
      // unit letters: "KiB"/"MiB"/"B  " may legitimately differ
      bool unit = std::string("KMGBi ").find(ref[i][c]) != std::string::npos &&
                  std::string("KMGBi ").find(got[i][c]) != std::string::npos;
      EXPECT_TRUE(unit) << "line " << i << " col " << c << "\n" << got[i] << "\n" << ref[i];
    }
    if (i < 6 || got[i].find("Metric") != std::string::npos) {
      EXPECT_EQ(got[i], ref[i]);  // header rows are fixed text
    }
  }
}

TEST(MemorySummary, UnitsFollowPythonFormatSize) {
  DeviceStats s;
  s.allocated_bytes[kAggregate].current = 512;
  s.allocated_bytes[kSmallPool].current = 512;
  s.reserved_bytes[kAggregate].current = 800 * 1024;  // >= 768 KiB -> KiB
  s.reserved_bytes[kLargePool].current = 100;         // follows the 'all' unit
  s.num_ooms = 3;
  std::string t = memory_summary(s, 0);
  EXPECT_NE(t.find("| Allocated memory      |    512 B   |"), std::string::npos) << t;
  EXPECT_NE(t.find("| GPU reserved memory   |    800 KiB |"), std::string::npos) << t;
  EXPECT_NE(t.find("|       from large pool |      0 KiB |"), std::string::npos) << t;
  EXPECT_NE(t.find("CUDA OOMs: 3 "), std::string::npos);
  std::string abbreviated = memory_summary(s, 0, true);
  EXPECT_EQ(abbreviated.find("from large pool"), std::string::npos);
  EXPECT_EQ(format_size(1024), "1024 bytes");
  EXPECT_EQ(format_size(1536), "1.50 KiB");
  EXPECT_EQ(format_size(400ull << 20), "400.00 MiB");
  EXPECT_EQ(format_size(1153433600ull), "1.07 GiB");
}

TEST(History, RingBufferKeepsTheNewestEvents) {
  auto dev = sim();
  CachingAllocator a(dev);
  EXPECT_TRUE(a.history().empty());
  a.set_history(true, 5);
  ContextId ctx = a.contexts().intern("linear|forward|model.fc1");
  for (int i = 0; i < 10; ++i) a.free(a.malloc(1000 + static_cast<size_t>(i), 0, ctx));
  auto h = a.history();
  ASSERT_EQ(h.size(), 5u);
  // 1 segment_alloc + 20 alloc/free events: the last five are free, alloc, free, alloc, free.
  EXPECT_EQ(h.back().action, TraceAction::kFree);
  EXPECT_EQ(h.back().size, 1009u);
  EXPECT_EQ(h.back().block_size, 1024u);
  EXPECT_EQ(h.back().context, ctx);
  EXPECT_EQ(a.contexts().name(ctx), "linear|forward|model.fc1");
  EXPECT_EQ(a.contexts().intern("linear|forward|model.fc1"), ctx);
  for (size_t i = 1; i < h.size(); ++i) EXPECT_GE(h[i].time_ns, h[i - 1].time_ns);
  a.set_history(false);
  EXPECT_TRUE(a.history().empty());
  a.malloc(10);
  EXPECT_TRUE(a.history().empty());
}

TEST(History, RecordsSegmentOomAndEmptyCacheEvents) {
  auto dev = sim();
  CachingAllocator a(dev);
  a.set_history(true, 1000);
  a.set_capacity_limit(64 * MiB);
  Allocation x = a.malloc(40 * MiB, 3);
  EXPECT_THROW(a.malloc(30 * MiB), OutOfMemoryError);
  a.free(x);
  a.empty_cache();
  std::vector<std::string> names;
  for (const auto& e : a.history()) names.push_back(trace_action_name(e.action));
  std::vector<std::string> want = {"segment_alloc", "alloc", "oom", "free", "segment_free", "empty_cache"};
  EXPECT_EQ(names, want);
  auto h = a.history();
  EXPECT_EQ(h[0].stream, 3u);
  EXPECT_EQ(h[2].size, 30 * MiB);
  EXPECT_EQ(h[5].size, 40 * MiB);  // bytes empty_cache returned
}

TEST(History, ExpandableSegmentsRecordMapAndUnmap) {
  auto dev = sim();
  CachingAllocator a(dev, AllocatorSettings::parse("expandable_segments:True"));
  a.set_history(true, 1000);
  a.free(a.malloc(30 * MiB));
  a.empty_cache();
  std::vector<std::string> names;
  for (const auto& e : a.history()) names.push_back(trace_action_name(e.action));
  std::vector<std::string> want = {"segment_map", "alloc", "free", "segment_unmap", "empty_cache"};
  EXPECT_EQ(names, want);
  EXPECT_EQ(a.history()[0].size, 40 * MiB);  // two 20 MiB pages
}

TEST(Snapshot, SegmentsWithBlocks) {
  auto dev = sim();
  CachingAllocator a(dev);
  ContextId ctx = a.contexts().intern("matmul|backward|layer2");
  Allocation x = a.malloc(3 * MiB + 100, 0, ctx);
  Allocation y = a.malloc(700);
  MemorySnapshot s = a.snapshot();
  ASSERT_EQ(s.segments.size(), 2u);
  const SegmentSnapshot& large = s.segments[0].is_large ? s.segments[0] : s.segments[1];
  const SegmentSnapshot& small = s.segments[0].is_large ? s.segments[1] : s.segments[0];
  EXPECT_EQ(large.total_size, 20 * MiB);
  EXPECT_EQ(large.allocated_size, x.size);
  EXPECT_EQ(large.requested_size, 3 * MiB + 100);
  EXPECT_FALSE(large.is_expandable);
  EXPECT_EQ(large.context, ctx);
  ASSERT_EQ(large.blocks.size(), 2u);
  EXPECT_EQ(large.blocks[0].address, x.ptr);
  EXPECT_STREQ(large.blocks[0].state(), "active_allocated");
  EXPECT_EQ(large.blocks[0].context, ctx);
  EXPECT_STREQ(large.blocks[1].state(), "inactive");
  EXPECT_EQ(small.total_size, 2 * MiB);
  EXPECT_EQ(small.blocks[0].requested_size, 700u);
  EXPECT_EQ(small.blocks[0].address, y.ptr);
  EXPECT_LT(s.segments[0].address, s.segments[1].address);
}

TEST(Snapshot, ExpandableSegmentReportsMappedRanges) {
  auto dev = sim();
  CachingAllocator a(dev, AllocatorSettings::parse("expandable_segments:True"));
  Allocation x = a.malloc(30 * MiB);
  Allocation y = a.malloc(30 * MiB);
  MemorySnapshot s = a.snapshot();
  ASSERT_EQ(s.segments.size(), 1u);
  EXPECT_TRUE(s.segments[0].is_expandable);
  EXPECT_EQ(s.segments[0].total_size, 60 * MiB);  // 3 pages of 20 MiB mapped
  EXPECT_EQ(y.ptr, x.ptr + 30 * MiB);             // packed back to back
  EXPECT_EQ(stat(a, "segment.all.current"), 0);   // c10 counts no segments for expandable maps
  EXPECT_EQ(stat(a, "num_device_alloc"), 2);
  EXPECT_EQ(check_invariants(a, *dev), "");
}

TEST(ExpandableSegments, UnmapFreePagesOnEmptyCacheAndReuseTheGap) {
  auto dev = sim();
  CachingAllocator a(dev, AllocatorSettings::parse("expandable_segments:True"));
  Allocation p[3];
  for (auto& x : p) x = a.malloc(40 * MiB);
  a.free(p[1]);
  a.empty_cache();
  EXPECT_EQ(a.memory_reserved(), 80 * MiB);  // the middle 40 MiB went back to the device
  EXPECT_EQ(a.snapshot().segments.size(), 2u);
  Allocation q = a.malloc(40 * MiB);  // lowest address with room: the gap
  EXPECT_EQ(q.ptr, p[1].ptr);
  EXPECT_EQ(check_invariants(a, *dev), "");
  a.free(p[0]), a.free(p[2]), a.free(q);
  a.empty_cache();
  EXPECT_EQ(dev->used_bytes(), 0u);
  EXPECT_TRUE(dev->live_mappings().empty());
  EXPECT_EQ(check_invariants(a, *dev), "");
}

TEST(ExpandableSegments, SmallPoolUses2MiBPagesAndSplitsFinely) {
  auto dev = sim();
  CachingAllocator a(dev, AllocatorSettings::parse("expandable_segments:True"));
  Allocation x = a.malloc(1000);
  EXPECT_EQ(a.memory_reserved(), 2 * MiB);
  Allocation y = a.malloc(12 * MiB + 512 * 1024);  // large: 20 MiB pages, remainder split (>= 512 B)
  EXPECT_EQ(y.size, 12 * MiB + 512 * 1024);
  EXPECT_EQ(a.memory_reserved(), 22 * MiB);
  a.free(x), a.free(y);
  EXPECT_EQ(check_invariants(a, *dev), "");
}

}  // namespace
}  // namespace vramlab::alloc::testing
