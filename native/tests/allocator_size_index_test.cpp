// The best-fit index of cached blocks (SizeIndex) against the ordered set it replaces
// (std::set ordered by BlockSizeLess, c10's BlockComparatorSize): random inserts, erasures
// and lookups over several streams, sizes that share a bucket and sizes that do not, few
// entries (one flat array) and many (buckets); every lookup, every erase's successor and
// the whole order both ways must be the set's.
#include <gtest/gtest.h>

#include <iterator>
#include <memory>
#include <random>
#include <set>
#include <vector>

#include "allocator/size_index.h"

namespace vramlab::alloc::testing {
namespace {

using Model = std::set<Block*, BlockSizeLess>;

Block* at(const Model& m, Model::const_iterator it) { return it == m.end() ? nullptr : *it; }
Block* at(const SizeIndex& s, SizeIndex::iterator it) { return it == s.end() ? nullptr : *it; }

std::string order_mismatch(const SizeIndex& s, const Model& m) {
  std::vector<Block*> fwd(s.begin(), s.end()), want(m.begin(), m.end());
  if (fwd != want) return "forward order differs";
  std::vector<Block*> back;
  for (auto it = s.end(); it != s.begin();) back.push_back(*--it);
  if (!std::equal(back.begin(), back.end(), want.rbegin(), want.rend())) return "backward order differs";
  if (s.size() != m.size()) return "size differs";
  return "";
}

size_t random_size(std::mt19937_64& rng) {
  switch (rng() % 4) {
    case 0:
      return 512 * (1 + rng() % 8);  // a few small sizes: buckets of many equal sizes
    case 1:
      return 512 * (1 + rng() % 4096);  // up to 2 MiB
    case 2:
      return (size_t(2) << 20) + 512 * (rng() % (1 << 17));  // 2..66 MiB
    default:
      return size_t(1) << (9 + rng() % 50);  // powers of two up to 2^58: class edges
  }
}

TEST(AllocatorSizeIndex, MatchesTheOrderedSetUnderRandomEdits) {
  const StreamId streams[] = {0, 3, 7, ~StreamId(0)};
  std::mt19937_64 rng(0xB10C5);
  for (int round = 0; round < 20; ++round) {
    // Odd rounds stay near the flat array's size, so it fills, spills into buckets and
    // collapses back again and again.
    const size_t cap = round % 2 ? 3 + round : ~size_t(0);
    SizeIndex idx;
    Model model;
    std::vector<std::unique_ptr<Block>> owned;
    uintptr_t next_ptr = 0x10000000;
    for (int step = 0; step < 3000; ++step) {
      const uint64_t r = rng() % 100;
      if ((r < 45 || model.empty()) && model.size() < cap) {
        // A new block (addresses unique and increasing, sizes random) or a re-insert.
        auto b = std::make_unique<Block>(streams[rng() % 4], random_size(rng), nullptr, next_ptr);
        next_ptr += 512 * (1 + rng() % 64);
        if (rng() % 2) b->ptr = 0x10000000 + 512 * (rng() % (1 << 20)) + (uintptr_t(1) << 40);  // out of order
        const bool fresh = model.insert(b.get()).second;
        ASSERT_EQ(idx.insert(b.get()), fresh) << "step " << step;
        ASSERT_FALSE(idx.insert(b.get())) << "a second insert of one block";
        owned.push_back(std::move(b));
      } else if (r < 65) {
        // Erase by block: one the index holds, or one it does not.
        Block* b = owned[rng() % owned.size()].get();
        ASSERT_EQ(idx.erase(b), model.erase(b)) << "step " << step;
      } else if (r < 80) {
        // Erase by iterator: the returned iterator is the set's successor.
        auto mit = std::next(model.begin(), static_cast<std::ptrdiff_t>(rng() % model.size()));
        auto sit = idx.lower_bound(*mit);
        ASSERT_EQ(at(idx, sit), *mit);
        sit = idx.erase(sit);
        mit = model.erase(mit);
        ASSERT_EQ(at(idx, sit), at(model, mit)) << "step " << step;
      } else {
        // Best fit for a random key, also a stream with no blocks, then a step each way.
        Block key(rng() % 5 == 0 ? 5 : streams[rng() % 4], random_size(rng), nullptr, rng() % 3 ? 0 : next_ptr / 2);
        auto sit = idx.lower_bound(&key);
        auto mit = model.lower_bound(&key);
        ASSERT_EQ(at(idx, sit), at(model, mit)) << "step " << step;
        if (mit != model.end()) {
          ASSERT_EQ(at(idx, std::next(sit)), at(model, std::next(mit)));
        }
        if (mit != model.begin()) {
          ASSERT_EQ(*std::prev(sit), *std::prev(mit));
        }
      }
      if (step % (cap < 100 ? 5 : 100) == 0) {
        ASSERT_EQ(order_mismatch(idx, model), "") << "round " << round << " step " << step;
      }
    }
    ASSERT_EQ(order_mismatch(idx, model), "") << "round " << round;
    // Emptied, every lookup is end() and begin() == end().
    while (!model.empty()) {
      ASSERT_EQ(idx.erase(*model.begin()), 1u);
      model.erase(model.begin());
    }
    EXPECT_TRUE(idx.empty());
    EXPECT_TRUE(idx.begin() == idx.end());
  }
}

TEST(AllocatorSizeIndex, SizeClassesAreOrderedLikeSizes) {
  // Classes in order must be sizes in order, or a best fit could skip a bucket.
  size_t prev = 0;
  for (size_t s = 1; s < (size_t(1) << 22); s += 1 + s / 1000) {
    const size_t c = SizeIndex::size_class(s);
    ASSERT_GE(c, prev) << s;
    ASSERT_LT(c, SizeIndex::kClasses);
    prev = c;
  }
  for (unsigned e = 4; e < 64; ++e) {
    const size_t lo = size_t(1) << e, hi = lo + (lo - 1);
    ASSERT_LT(SizeIndex::size_class(lo - 1), SizeIndex::size_class(lo)) << e;
    ASSERT_LE(SizeIndex::size_class(lo), SizeIndex::size_class(hi)) << e;
    ASSERT_LT(SizeIndex::size_class(hi), SizeIndex::kClasses) << e;
  }
}

}  // namespace
}  // namespace vramlab::alloc::testing
