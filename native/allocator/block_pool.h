#pragma once
// The small and large pools of cached blocks (best fit through SizeIndex), plus the two
// hot-path helpers that keep malloc/free free of heap traffic: a node arena for the
// unmapped-range sets and Block objects, and an open-addressing map from address to
// allocated Block.
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <memory>
#include <new>
#include <set>
#include <vector>

#include "allocator/block.h"
#include "allocator/debug_assert.h"
#include "allocator/size_index.h"

namespace vramlab::alloc {

// Fixed-size free list carved from slabs. Slots are recycled, never returned to the
// heap until the arena dies (the allocator owns it and outlives every pool).
class NodeArena {
 public:
  static constexpr size_t kSlot = 128;
  NodeArena() = default;
  NodeArena(const NodeArena&) = delete;
  NodeArena& operator=(const NodeArena&) = delete;

  void* take() {
    if (!free_) grow();
    Slot* s = free_;
    free_ = s->next;
    return s;
  }
  void give(void* p) {
    Slot* s = static_cast<Slot*>(p);
    s->next = free_;
    free_ = s;
  }

 private:
  union Slot {
    Slot* next;
    alignas(std::max_align_t) unsigned char bytes[kSlot];
  };
  void grow() {
    constexpr size_t n = 256;
    slabs_.push_back(std::make_unique<Slot[]>(n));
    Slot* slab = slabs_.back().get();
    for (size_t i = 0; i < n; ++i) {
      slab[i].next = free_;
      free_ = &slab[i];
    }
  }
  Slot* free_ = nullptr;
  std::vector<std::unique_ptr<Slot[]>> slabs_;
};

// std::allocator replacement that serves single nodes from a NodeArena.
template <typename T>
struct ArenaAllocator {
  using value_type = T;
  NodeArena* arena;
  explicit ArenaAllocator(NodeArena* a) noexcept : arena(a) {}
  template <typename U>
  ArenaAllocator(const ArenaAllocator<U>& o) noexcept : arena(o.arena) {}
  T* allocate(size_t n) {
    if (n == 1 && sizeof(T) <= NodeArena::kSlot && alignof(T) <= alignof(std::max_align_t))
      return static_cast<T*>(arena->take());
    return static_cast<T*>(::operator new(n * sizeof(T)));
  }
  void deallocate(T* p, size_t n) noexcept {
    if (n == 1 && sizeof(T) <= NodeArena::kSlot && alignof(T) <= alignof(std::max_align_t))
      arena->give(p);
    else
      ::operator delete(p);
  }
  template <typename U>
  bool operator==(const ArenaAllocator<U>& o) const noexcept {
    return arena == o.arena;
  }
};

// The unmapped ranges of expandable segments, ordered by (stream, address) as c10's
// std::set<Block*> with its address comparator; each block's key is kept inside the tree
// node, so a search compares node-local data instead of chasing every Block pointer. A
// block's key fields must not change while it is a member. (Cached blocks are in SizeIndex.)
class AddrSet {
  struct Entry {
    StreamId stream;
    uintptr_t ptr;
    Block* block;
  };
  struct Less {
    bool operator()(const Entry& a, const Entry& b) const {
      if (a.stream != b.stream) return a.stream < b.stream;
      return a.ptr < b.ptr;
    }
  };
  using Set = std::set<Entry, Less, ArenaAllocator<Entry>>;
  static Entry key(const Block* b) { return Entry{b->stream, b->ptr, const_cast<Block*>(b)}; }

 public:
  class iterator {
   public:
    using iterator_category = std::bidirectional_iterator_tag;
    using value_type = Block*;
    using difference_type = std::ptrdiff_t;
    using pointer = Block**;
    using reference = Block*;
    iterator() = default;
    explicit iterator(typename Set::const_iterator it) : it_(it) {}
    Block* operator*() const { return it_->block; }
    iterator& operator++() {
      ++it_;
      return *this;
    }
    iterator operator++(int) {
      iterator t = *this;
      ++it_;
      return t;
    }
    iterator& operator--() {
      --it_;
      return *this;
    }
    bool operator==(const iterator& o) const { return it_ == o.it_; }
    bool operator!=(const iterator& o) const { return it_ != o.it_; }
    typename Set::const_iterator raw() const { return it_; }

   private:
    typename Set::const_iterator it_;
  };
  using const_iterator = iterator;

  explicit AddrSet(NodeArena* arena) : set_(Less{}, ArenaAllocator<Entry>(arena)) {}
  bool insert(Block* b) { return set_.insert(key(b)).second; }
  size_t erase(const Block* b) { return set_.erase(key(b)); }
  iterator erase(iterator it) { return iterator(set_.erase(it.raw())); }
  iterator lower_bound(const Block* k) const { return iterator(set_.lower_bound(key(k))); }
  iterator begin() const { return iterator(set_.begin()); }
  iterator end() const { return iterator(set_.end()); }
  size_t size() const { return set_.size(); }
  bool empty() const { return set_.empty(); }

 private:
  Set set_;
};

struct BlockPool {
  BlockPool(bool small, NodeArena* arena) : unmapped(arena), is_small(small) {}

  SizeIndex blocks;  // cached (free, mapped) blocks, best fit first
  AddrSet unmapped;  // unmapped ranges of expandable segments
  const bool is_small;
  int64_t get_free_blocks_call_count = 0;  // garbage-collection age clock

  void insert_into_blocks(Block* b) {
    VRAMLAB_DEBUG_ASSERT(!b->allocated && b->mapped && b->pool == this, "caching a block that is not free here");
    b->gc_count_base = get_free_blocks_call_count;
    [[maybe_unused]] const bool inserted = blocks.insert(b);
    VRAMLAB_DEBUG_ASSERT(inserted, "caching a block twice");
  }
};

// Address -> allocated Block. Linear probing with backward-shift deletion.
class PtrMap {
 public:
  PtrMap() { rehash(1024); }
  size_t size() const { return count_; }

  void insert(uintptr_t key, Block* b) {
    VRAMLAB_DEBUG_ASSERT(key != 0, "address 0 marks an empty slot");
    if ((count_ + 1) * 4 > slots_.size() * 3) rehash(slots_.size() * 2);
    size_t i = index(key);
    while (slots_[i].key != 0) {
      // The probe run holds every entry that could share this key, so the check is free.
      VRAMLAB_DEBUG_ASSERT(slots_[i].key != key, "address already in the allocated map (handed out twice)");
      i = (i + 1) & mask_;
    }
    slots_[i] = {key, b};
    ++count_;
  }
  Block* find(uintptr_t key) const {
    for (size_t i = index(key);; i = (i + 1) & mask_) {
      if (slots_[i].key == key) return slots_[i].block;
      if (slots_[i].key == 0) return nullptr;
    }
  }
  Block* erase(uintptr_t key) {
    size_t i = index(key);
    while (slots_[i].key != key) {
      if (slots_[i].key == 0) return nullptr;
      i = (i + 1) & mask_;
    }
    Block* found = slots_[i].block;
    // Shift later members of the probe run back so lookups never hit a hole early.
    size_t hole = i;
    for (size_t j = (i + 1) & mask_; slots_[j].key != 0; j = (j + 1) & mask_) {
      size_t home = index(slots_[j].key);
      if (((j - home) & mask_) >= ((j - hole) & mask_)) {
        slots_[hole] = slots_[j];
        hole = j;
      }
    }
    slots_[hole] = {0, nullptr};
    --count_;
    return found;
  }
  template <typename F>
  void for_each(F f) const {
    for (const Slot& s : slots_)
      if (s.key) f(s.block);
  }

 private:
  struct Slot {
    uintptr_t key;
    Block* block;
  };
  size_t index(uintptr_t key) const {
    return static_cast<size_t>((key >> 9) * 0x9E3779B97F4A7C15ull >> shift_) & mask_;
  }
  void rehash(size_t cap) {
    std::vector<Slot> old = std::move(slots_);
    slots_.assign(cap, Slot{0, nullptr});
    mask_ = cap - 1;
    shift_ = 64 - static_cast<unsigned>(__builtin_ctzll(cap));
    count_ = 0;
    for (const Slot& s : old)
      if (s.key) insert(s.key, s.block);
  }
  std::vector<Slot> slots_;
  size_t mask_ = 0;
  unsigned shift_ = 0;
  size_t count_ = 0;
};

}  // namespace vramlab::alloc
