// Property test: random alloc/free/empty_cache sequences under random settings; after
// every step the block layout and every statistic must agree with a recount, and every
// block must sit in exactly one of the allocator's lists.
#include <gtest/gtest.h>

#include <random>

#include "allocator_test_util.h"

namespace vramlab::alloc::testing {
namespace {

std::string random_settings(std::mt19937_64& rng) {
  std::vector<std::string> parts;
  if (rng() % 3 == 0) parts.push_back("expandable_segments:True");
  if (rng() % 3 == 0) parts.push_back("max_split_size_mb:" + std::to_string(20 + rng() % 80));
  if (rng() % 4 == 0) parts.push_back("roundup_power2_divisions:" + std::to_string(1u << (1 + rng() % 3)));
  if (rng() % 5 == 0) parts.push_back("roundup_power2_divisions:[1:2,8:4,>:8]");
  if (rng() % 4 == 0) parts.push_back("garbage_collection_threshold:0." + std::to_string(3 + rng() % 6));
  std::string s;
  for (const auto& p : parts) s += (s.empty() ? "" : ",") + p;
  return s;
}

size_t random_size(std::mt19937_64& rng) {
  switch (rng() % 5) {
    case 0:
      return 1 + rng() % 4096;  // tiny
    case 1:
      return 1 + rng() % (1 << 20);  // small pool
    case 2:
      return (1 << 20) + rng() % (9 << 20);  // 1..10 MiB
    case 3:
      return (10 << 20) + rng() % (60 << 20);  // 10..70 MiB
    default:
      return (64ull << 20) * (1 + rng() % 3) + (rng() % 3) * 512;  // repeated large sizes
  }
}

TEST(AllocatorProperty, RandomSequencesKeepInvariants) {
  const int kSequences = 2000;
  const int kSteps = 80;
  std::mt19937_64 rng(0x5EED);
  int ooms = 0, expandable_runs = 0;
  for (int seq = 0; seq < kSequences; ++seq) {
    const std::string conf = random_settings(rng);
    expandable_runs += conf.find("expandable") != std::string::npos;
    auto dev = sim("sim:custom:" + std::to_string(256 + rng() % 768) + "MiB");
    CachingAllocator a(dev, AllocatorSettings::parse(conf));
    if (rng() % 3 == 0) a.set_capacity_limit((128 + rng() % 512) * MiB);
    std::vector<Allocation> live;
    for (int step = 0; step < kSteps; ++step) {
      const uint64_t r = rng() % 100;
      if (r < 55 || live.empty()) {
        try {
          live.push_back(a.malloc(random_size(rng), rng() % 4 == 0 ? 7 : 0));
        } catch (const OutOfMemoryError&) {
          ++ooms;
        }
      } else if (r < 97) {
        size_t i = rng() % live.size();
        a.free(live[i]);
        live[i] = live.back();
        live.pop_back();
      } else {
        a.empty_cache();
      }
      std::string err = check_invariants(a, *dev);
      ASSERT_EQ(err, "") << "sequence " << seq << " step " << step << " settings '" << conf << "'";
      ASSERT_EQ(a.check_block_placement(), "")
          << "sequence " << seq << " step " << step << " settings '" << conf << "'";
      // Live allocations never overlap and keep their addresses.
      std::vector<std::pair<uintptr_t, size_t>> spans;
      for (const auto& x : live) spans.emplace_back(x.ptr, x.size);
      std::sort(spans.begin(), spans.end());
      for (size_t i = 1; i < spans.size(); ++i)
        ASSERT_LE(spans[i - 1].first + spans[i - 1].second, spans[i].first) << "overlap in sequence " << seq;
    }
    for (const auto& x : live) a.free(x);
    a.empty_cache();
    ASSERT_EQ(a.memory_reserved(), 0u) << conf;
    ASSERT_EQ(dev->used_bytes(), 0u) << conf;
  }
  EXPECT_GT(ooms, 0);  // the caps and small devices were exercised
  EXPECT_GT(expandable_runs, 100);
}

// One long run instead of many short ones: hundreds of live blocks on three streams
// build pools with hundreds of cached blocks, several in one size class, so the best-fit
// index is searched, split and merged at depth; a device of 6 GiB makes the cache run
// full, free cached segments and retry. Invariants and every block's place every 50
// steps, and at the end all memory goes back.
TEST(AllocatorProperty, LongRandomSequenceKeepsInvariants) {
  for (const char* conf : {"", "max_split_size_mb:64", "expandable_segments:True"}) {
    std::mt19937_64 rng(0x10C5EED);
    auto dev = sim("sim:custom:6GiB");
    CachingAllocator a(dev, AllocatorSettings::parse(conf));
    std::vector<Allocation> live;
    int ooms = 0;
    for (int step = 0; step < 30000; ++step) {
      const uint64_t r = rng() % 1000;
      if (r < 520 || live.empty()) {
        try {
          const StreamId stream = (rng() % 4 == 0) ? 3 + rng() % 2 : 0;
          live.push_back(a.malloc(rng() % 2 ? random_size(rng) : 512 * (1 + rng() % 4), stream));
        } catch (const OutOfMemoryError&) {
          ++ooms;
        }
      } else if (r < 998) {
        size_t i = rng() % live.size();
        a.free(live[i]);
        live[i] = live.back();
        live.pop_back();
      } else {
        a.empty_cache();
      }
      if (step % 50 == 0) {
        ASSERT_EQ(check_invariants(a, *dev), "") << "step " << step << " settings '" << conf << "'";
        ASSERT_EQ(a.check_block_placement(), "") << "step " << step << " settings '" << conf << "'";
      }
    }
    ASSERT_EQ(check_invariants(a, *dev), "") << conf;
    EXPECT_GT(a.stats().num_alloc_retries + ooms, 0) << "the device never ran full under '" << conf << "'";
    for (const auto& x : live) a.free(x);
    a.empty_cache();
    ASSERT_EQ(a.memory_reserved(), 0u) << conf;
    ASSERT_EQ(dev->used_bytes(), 0u) << conf;
  }
}

}  // namespace
}  // namespace vramlab::alloc::testing
