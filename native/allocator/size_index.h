#pragma once
// The cached blocks of a pool in best-fit order (stream, size, address), as c10's
// std::set<Block*, BlockComparatorSize>, held as a segregated-fit index: per stream, one
// small sorted bucket per size class (16 classes per power of two) and a two-level bitmap
// of the non-empty classes. A best-fit lookup is a class computation, a scan of one short
// bucket and at most two bit scans, instead of a red-black descent whose every step is a
// hard-to-predict branch; buckets keep their capacity, so steady-state malloc/free make no
// heap allocations. Up to eight entries live in one flat sorted array instead. lower_bound,
// begin and iteration order are exactly std::set's; unlike std::set, an insert or erase
// invalidates every iterator except the one erase(iterator) returns.
#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <memory>
#include <vector>

#include "allocator/block.h"
#include "allocator/debug_assert.h"

namespace vramlab::alloc {

class SizeIndex {
 public:
  static constexpr unsigned kSubBits = 4;  // 16 classes per power of two
  static constexpr size_t kClasses = (64 - kSubBits + 1) << kSubBits;
  static constexpr size_t kWords = (kClasses + 63) / 64;
  static_assert(kWords <= 64, "the summary word has one bit per bitmap word");
  static constexpr size_t kFlatMax = 8;  // up to this many entries: one flat sorted array
  static constexpr size_t kFlatLane = ~size_t(0);

  // Size class: monotonic in size, so classes in order are sizes in order.
  static size_t size_class(size_t s) {
    if (s < (size_t(1) << kSubBits)) return s;
    const unsigned e = static_cast<unsigned>(std::bit_width(s)) - 1;  // floor(log2 s) >= kSubBits
    return ((e - kSubBits + 1) << kSubBits) | ((s >> (e - kSubBits)) & ((size_t(1) << kSubBits) - 1));
  }

 private:
  struct Entry {
    size_t size;
    uintptr_t ptr;
    Block* block;
  };
  static bool less(const Entry& a, size_t size, uintptr_t ptr) { return a.size != size ? a.size < size : a.ptr < ptr; }
  // A sorted run of entries; the first kInline live inside the bucket, so the short
  // buckets of a fresh allocator (a replay makes one each time) never touch the heap.
  class Bucket {
   public:
    static constexpr uint32_t kInline = 4;
    Bucket() {}  // inline_ is left unset: only [0, n_) is ever read
    Bucket(const Bucket&) = delete;
    Bucket& operator=(const Bucket&) = delete;
    ~Bucket() { delete[] heap_; }
    size_t size() const { return n_; }
    bool empty() const { return n_ == 0; }
    const Entry* begin() const { return heap_ ? heap_ : inline_; }
    const Entry* end() const { return begin() + n_; }
    Entry* begin() { return heap_ ? heap_ : inline_; }
    Entry* end() { return begin() + n_; }
    const Entry& operator[](size_t i) const { return begin()[i]; }
    void insert(Entry* at, const Entry& e) {
      size_t i = static_cast<size_t>(at - begin());
      if (n_ == cap_) grow();
      Entry* d = begin();
      // Most pushes land at the back (the lowest address of a size): no call for nothing.
      if (i < n_) std::memmove(d + i + 1, d + i, sizeof(Entry) * (n_ - i));
      d[i] = e;
      ++n_;
    }
    void erase(Entry* at) {
      const size_t after = static_cast<size_t>(end() - at - 1);
      if (after) std::memmove(at, at + 1, sizeof(Entry) * after);
      --n_;
    }

   private:
    void grow() {
      Entry* bigger = new Entry[size_t(cap_) * 2];
      std::memcpy(bigger, begin(), sizeof(Entry) * n_);
      delete[] heap_;
      heap_ = bigger;
      cap_ *= 2;
    }
    uint32_t n_ = 0, cap_ = kInline;
    Entry* heap_ = nullptr;  // the entries once more than kInline
    Entry inline_[kInline];
  };
  inline static const Bucket kNoEntries{};
  // One stream's blocks.
  struct Lane {
    explicit Lane(StreamId s) : stream(s) {}
    StreamId stream;
    uint64_t summary = 0;         // bit w: words[w] != 0
    uint64_t words[kWords] = {};  // bit c: bucket c non-empty
    // Buckets in groups of 64, one per bitmap word, made on a group's first insert: a lane
    // costs a few hundred bytes to start, not one bucket per class.
    std::unique_ptr<Bucket[]> groups[kWords];

    const Bucket& bucket(size_t c) const {
      const auto& g = groups[c >> 6];
      return g ? g[c & 63] : kNoEntries;
    }
    Bucket& bucket_for_insert(size_t c) {
      auto& g = groups[c >> 6];
      if (!g) g.reset(new Bucket[64]);
      return g[c & 63];
    }
    Bucket& bucket_of_entry(size_t c) { return groups[c >> 6][c & 63]; }

    // The first non-empty class >= c, or kClasses.
    size_t next_class(size_t c) const {
      if (c >= kClasses) return kClasses;
      size_t w = c >> 6;
      const uint64_t m = words[w] & (~uint64_t(0) << (c & 63));
      if (m) return (w << 6) | static_cast<size_t>(std::countr_zero(m));
      const uint64_t s = w + 1 < 64 ? summary & (~uint64_t(0) << (w + 1)) : 0;
      if (!s) return kClasses;
      w = static_cast<size_t>(std::countr_zero(s));
      return (w << 6) | static_cast<size_t>(std::countr_zero(words[w]));
    }
    // The last non-empty class <= c, or kClasses when none.
    size_t prev_class(size_t c) const {
      size_t w = c >> 6;
      const unsigned bit = static_cast<unsigned>(c & 63);
      const uint64_t m = words[w] & (bit == 63 ? ~uint64_t(0) : (uint64_t(2) << bit) - 1);
      if (m) return (w << 6) | static_cast<size_t>(63 - std::countl_zero(m));
      const uint64_t s = summary & ((uint64_t(1) << w) - 1);
      if (!s) return kClasses;
      w = static_cast<size_t>(63 - std::countl_zero(s));
      return (w << 6) | static_cast<size_t>(63 - std::countl_zero(words[w]));
    }
    void mark(size_t c) {
      words[c >> 6] |= uint64_t(1) << (c & 63);
      summary |= uint64_t(1) << (c >> 6);
    }
    void unmark(size_t c) {
      words[c >> 6] &= ~(uint64_t(1) << (c & 63));
      if (!words[c >> 6]) summary &= ~(uint64_t(1) << (c >> 6));
    }
  };

  // A bucket is stored in descending order, so its smallest entry is at the back: best
  // fit among many equal sizes takes the lowest address, and the pop and the push back of
  // a block at that address move nothing. Positions in iterators count in ascending order;
  // slot() maps one to the vector.
  static const Entry& slot(const Bucket& b, size_t pos) { return b[b.size() - 1 - pos]; }
  // Ascending position of the first entry of bucket b not less than (size, ptr).
  static size_t bucket_lower(const Bucket& b, size_t size, uintptr_t ptr) {
    size_t i = b.size();  // entries less than the key sit at vector indices [i, size)
    if (i <= 8) {
      while (i > 0 && less(b[i - 1], size, ptr)) --i;
    } else {
      i = static_cast<size_t>(
          std::partition_point(b.begin(), b.end(), [&](const Entry& e) { return !less(e, size, ptr); }) - b.begin());
    }
    return b.size() - i;
  }

 public:
  class iterator {
   public:
    using iterator_category = std::bidirectional_iterator_tag;
    using value_type = Block*;
    using difference_type = std::ptrdiff_t;
    using pointer = Block**;
    using reference = Block*;
    iterator() = default;
    Block* operator*() const { return block_; }
    iterator& operator++() {
      if (li_ == kFlatLane) {
        ++pos_;
        block_ = pos_ < idx_->flat_n_ ? idx_->flat_[pos_].block : nullptr;
      } else {
        *this = idx_->settle(li_, c_, pos_ + 1);
      }
      return *this;
    }
    iterator operator++(int) {
      iterator t = *this;
      ++*this;
      return t;
    }
    iterator& operator--() {
      if (li_ == kFlatLane) {
        block_ = idx_->flat_[--pos_].block;
        return *this;
      }
      if (pos_ > 0) {
        --pos_;
        block_ = slot(idx_->lanes_[li_]->bucket(c_), pos_).block;
        return *this;
      }
      // Back to the last entry before this one: earlier classes of this lane, then
      // earlier lanes (from end(), the last lane).
      size_t li = li_, c = c_;
      if (li == idx_->lanes_.size()) {
        --li;
        c = kClasses;
      }
      for (;;) {
        const Lane& lane = *idx_->lanes_[li];
        const size_t pc = c == 0 ? kClasses : lane.prev_class(c - 1);
        if (pc != kClasses) {
          const Bucket& b = lane.bucket(pc);
          *this = iterator(idx_, li, pc, b.size() - 1, slot(b, b.size() - 1).block);
          return *this;
        }
        --li;  // decrementing begin() is undefined, as for std::set
        c = kClasses;
      }
    }
    bool operator==(const iterator& o) const { return li_ == o.li_ && c_ == o.c_ && pos_ == o.pos_; }
    bool operator!=(const iterator& o) const { return !(*this == o); }

   private:
    friend class SizeIndex;
    iterator(const SizeIndex* idx, size_t li, size_t c, size_t pos, Block* block)
        : idx_(idx), li_(li), c_(c), pos_(pos), block_(block) {}
    const SizeIndex* idx_ = nullptr;
    size_t li_ = 0;           // lane (kFlatLane: flat_); lanes_.size() (class and position 0) is end()
    size_t c_ = 0;            // size class
    size_t pos_ = 0;          // within the class's bucket
    Block* block_ = nullptr;  // the entry's block, read once (null at end())
  };
  using const_iterator = iterator;

  SizeIndex() = default;
  SizeIndex(const SizeIndex&) = delete;
  SizeIndex& operator=(const SizeIndex&) = delete;

  bool insert(Block* b) {
    if (is_flat_) {
      const size_t pos = flat_lower(b->stream, b->size, b->ptr);
      if (pos < flat_n_ && flat_[pos].block == b) return false;
      if (flat_n_ < kFlatMax) {
        for (size_t i = flat_n_; i > pos; --i) flat_[i] = flat_[i - 1];
        flat_[pos] = FlatEntry{b->stream, b->size, b->ptr, b};
        ++flat_n_;
        ++count_;
        return true;
      }
      // Full: every entry moves to the buckets, which keep their capacity from before.
      is_flat_ = false;
      count_ = 0;
      for (size_t i = 0; i < flat_n_; ++i) insert(flat_[i].block);
      flat_n_ = 0;
    }
    Lane& lane = lane_for_insert(b->stream);
    const size_t c = size_class(b->size);
    Bucket& bucket = lane.bucket_for_insert(c);
    const size_t pos = bucket_lower(bucket, b->size, b->ptr);
    if (pos < bucket.size() && slot(bucket, pos).block == b) return false;
    VRAMLAB_DEBUG_ASSERT(pos == bucket.size() || slot(bucket, pos).size != b->size || slot(bucket, pos).ptr != b->ptr,
                         "two cached blocks share a key");
    bucket.insert(bucket.end() - static_cast<std::ptrdiff_t>(pos), Entry{b->size, b->ptr, b});
    lane.mark(c);
    ++count_;
    return true;
  }

  size_t erase(const Block* b) {
    iterator it = find(b);
    if (it == end()) return 0;
    remove(it);
    return 1;
  }

  // Erases *it; returns the iterator to the entry after it.
  iterator erase(iterator it) {
    const Block* b = *it;
    const Block key(b->stream, b->size, nullptr, b->ptr);  // b's key, read before it goes
    remove(it);
    return lower_bound(&key);
  }
  // Erases *it when the caller needs no successor (best fit taking its block).
  void remove(iterator it) {
    --count_;
    if (is_flat_) {
      for (size_t i = it.pos_; i + 1 < flat_n_; ++i) flat_[i] = flat_[i + 1];
      --flat_n_;
      return;
    }
    remove_from_bucket(it);
    if (count_ <= kFlatMax / 4) {
      // Few left: back to the flat array, in order; the buckets keep their capacity.
      size_t n = 0;
      for (iterator i = settle(0, 0, 0); i != end(); ++i)
        flat_[n++] = FlatEntry{(*i)->stream, (*i)->size, (*i)->ptr, *i};
      for (size_t i = 0; i < n; ++i) remove_from_bucket(find(flat_[i].block));
      is_flat_ = true;
      flat_n_ = n;
    }
  }

  // The first entry not less than k's (stream, size, address), as std::set::lower_bound.
  iterator lower_bound(const Block* k) const {
    if (is_flat_) {
      const size_t pos = flat_lower(k->stream, k->size, k->ptr);
      return iterator(this, kFlatLane, 0, pos, pos < flat_n_ ? flat_[pos].block : nullptr);
    }
    size_t li = 0;
    while (li < lanes_.size() && lanes_[li]->stream < k->stream) ++li;
    if (li == lanes_.size()) return end();
    if (lanes_[li]->stream != k->stream) return settle(li, 0, 0);
    const size_t c = size_class(k->size);
    return settle(li, c, bucket_lower(lanes_[li]->bucket(c), k->size, k->ptr));
  }
  iterator find(const Block* b) const {
    if (is_flat_) {
      iterator it = lower_bound(b);
      return it.block_ == b ? it : end();
    }
    for (size_t li = 0; li < lanes_.size(); ++li) {
      if (lanes_[li]->stream != b->stream) continue;
      const size_t c = size_class(b->size);
      const Bucket& bucket = lanes_[li]->bucket(c);
      const size_t pos = bucket_lower(bucket, b->size, b->ptr);
      if (pos < bucket.size() && slot(bucket, pos).block == b) return iterator(this, li, c, pos, const_cast<Block*>(b));
      return end();
    }
    return end();
  }
  iterator begin() const {
    return is_flat_ ? iterator(this, kFlatLane, 0, 0, flat_n_ ? flat_[0].block : nullptr) : settle(0, 0, 0);
  }
  iterator end() const {
    return is_flat_ ? iterator(this, kFlatLane, 0, flat_n_, nullptr) : iterator(this, lanes_.size(), 0, 0, nullptr);
  }
  size_t size() const { return count_; }
  bool empty() const { return count_ == 0; }

 private:
  // The iterator at (li, c, pos) if that holds an entry, else at the next entry after it.
  iterator settle(size_t li, size_t c, size_t pos) const {
    while (li < lanes_.size()) {
      const Lane& lane = *lanes_[li];
      const Bucket& b = lane.bucket(c);
      if (pos < b.size()) return iterator(this, li, c, pos, slot(b, pos).block);
      const size_t nc = lane.next_class(c + 1);
      if (nc != kClasses) return iterator(this, li, nc, 0, slot(lane.bucket(nc), 0).block);
      ++li;
      if (li < lanes_.size()) {
        c = lanes_[li]->next_class(0);
        if (c == kClasses) c = 0;  // an empty lane: its bucket 0 is empty, so the loop moves on
      }
      pos = 0;
    }
    return end();
  }
  Lane& lane_for_insert(StreamId s) {
    size_t li = 0;
    while (li < lanes_.size() && lanes_[li]->stream < s) ++li;
    if (li < lanes_.size() && lanes_[li]->stream == s) return *lanes_[li];
    // Lanes stay once made (a stream that cached a block will again), sorted by stream.
    return **lanes_.insert(lanes_.begin() + static_cast<std::ptrdiff_t>(li), std::make_unique<Lane>(s));
  }

  void remove_from_bucket(iterator it) {
    Lane& lane = *lanes_[it.li_];
    Bucket& bucket = lane.bucket_of_entry(it.c_);
    bucket.erase(bucket.end() - 1 - static_cast<std::ptrdiff_t>(it.pos_));
    if (bucket.empty()) lane.unmark(it.c_);
  }
  // Up to kFlatMax entries of any stream: one sorted array, no classes (a pool that holds a
  // segment or two, as a malloc+free pair keeps it, costs what a one-node tree did).
  size_t flat_lower(StreamId stream, size_t size, uintptr_t ptr) const {
    size_t i = 0;
    while (i < flat_n_ && (flat_[i].stream != stream ? flat_[i].stream < stream
                           : flat_[i].size != size   ? flat_[i].size < size
                                                     : flat_[i].ptr < ptr))
      ++i;
    return i;
  }
  struct FlatEntry {
    StreamId stream;
    size_t size;
    uintptr_t ptr;
    Block* block;
  };
  bool is_flat_ = true;
  size_t flat_n_ = 0;
  FlatEntry flat_[kFlatMax];

  std::vector<std::unique_ptr<Lane>> lanes_;  // sorted by stream
  size_t count_ = 0;
};

}  // namespace vramlab::alloc
