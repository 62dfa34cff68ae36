#pragma once
// Shared helpers for the allocator tests: reading reference files and a checker that
// recounts every statistic from the block layout.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <memory>
#include <regex>
#include <sstream>
#include <string>

#include "allocator/caching_allocator.h"
#include "device/sim_device.h"

namespace vramlab::alloc::testing {

constexpr uint64_t MiB = 1ull << 20;
constexpr uint64_t GiB = 1ull << 30;

inline std::string read_source_file(const std::string& rel) {
  std::ifstream f(std::string(VRAMLAB_SOURCE_DIR) + "/" + rel, std::ios::binary);
  if (!f) throw std::runtime_error("cannot open " + rel);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// The text of the JSON object that follows "key": in text (balanced braces).
inline std::string json_object(const std::string& text, const std::string& key) {
  size_t k = text.find("\"" + key + "\"");
  if (k == std::string::npos) throw std::runtime_error("key not found: " + key);
  size_t open = text.find('{', k);
  int depth = 0;
  for (size_t i = open; i < text.size(); ++i) {
    if (text[i] == '{') ++depth;
    if (text[i] == '}' && --depth == 0) return text.substr(open, i - open + 1);
  }
  throw std::runtime_error("unbalanced JSON at " + key);
}

inline int64_t json_int(const std::string& obj, const std::string& key) {
  std::smatch m;
  if (!std::regex_search(obj, m, std::regex("\"" + key + "\"\\s*:\\s*(-?[0-9]+)")))
    throw std::runtime_error("int not found: " + key);
  return std::stoll(m[1]);
}

inline std::string json_string(const std::string& obj, const std::string& key) {
  std::smatch m;
  if (!std::regex_search(obj, m, std::regex("\"" + key + "\"\\s*:\\s*\"((?:[^\"\\\\]|\\\\.)*)\"")))
    throw std::runtime_error("string not found: " + key);
  return m[1];
}

inline std::shared_ptr<SimDevice> sim(const std::string& id = "sim:h200-141gb") {
  return std::shared_ptr<SimDevice>(static_cast<SimDevice*>(open_device(id).release()));
}

inline int64_t stat(const CachingAllocator& a, const std::string& key) {
  for (const auto& [k, v] : a.memory_stats())
    if (k == key) return v;
  throw std::runtime_error("no stat " + key);
}

// Checks the allocator's structure against the device and recounts its statistics.
// Returns an empty string when everything holds, else the first violation.
inline std::string check_invariants(const CachingAllocator& a, const SimDevice& dev) {
  std::ostringstream err;
  MemorySnapshot snap = a.snapshot(false);
  DeviceStats st = a.stats();
  AllocatorSettings settings = a.settings();
  auto allocations = dev.live_allocations();
  auto mappings = dev.live_mappings();

  int64_t alloc_bytes[3] = {}, alloc_count[3] = {}, req_bytes[3] = {}, seg_count[3] = {}, reserved[3] = {},
          split_count[3] = {}, split_bytes[3] = {};
  int64_t oversize_alloc = 0, oversize_seg = 0;
  uintptr_t last_end = 0;
  size_t plain_segments = 0;
  for (const SegmentSnapshot& s : snap.segments) {
    const int pool = s.is_large ? kLargePool : kSmallPool;
    if (s.address < last_end) return "segments overlap at " + std::to_string(s.address);
    last_end = s.address + s.total_size;
    if (s.blocks.empty()) return "segment without blocks";
    uintptr_t at = s.address;
    bool prev_free = false;
    for (const BlockSnapshot& b : s.blocks) {
      if (b.address != at) return "blocks do not tile their segment";
      if (b.size == 0 || b.size % kMinBlockSize != 0) return "block size not a multiple of 512";
      if (!b.allocated && prev_free) return "two free neighbours left unmerged";
      prev_free = !b.allocated;
      at += b.size;
      if (b.allocated) {
        alloc_bytes[pool] += static_cast<int64_t>(b.size);
        alloc_count[pool] += 1;
        req_bytes[pool] += static_cast<int64_t>(b.requested_size);
        if (b.requested_size > b.size) return "requested size above block size";
        if (b.size >= settings.max_split_size) ++oversize_alloc;
      } else if (!s.is_expandable && s.blocks.size() > 1) {
        split_count[pool] += 1;
        split_bytes[pool] += static_cast<int64_t>(b.size);
      }
    }
    if (at != s.address + s.total_size) return "segment size mismatch";
    reserved[pool] += static_cast<int64_t>(s.total_size);
    if (s.is_expandable) {
      // Each mapped range must consist of whole device mappings.
      uintptr_t p = s.address;
      while (p < s.address + s.total_size) {
        auto m = mappings.find(p);
        if (m == mappings.end()) return "expandable range not backed by device pages";
        p += m->second;
        mappings.erase(m);
      }
      if (p != s.address + s.total_size) return "expandable range ends inside a page";
    } else {
      seg_count[pool] += 1;
      ++plain_segments;
      if (s.total_size >= settings.max_split_size) ++oversize_seg;
      auto d = allocations.find(s.address);
      if (d == allocations.end() || d->second != s.total_size) return "segment does not match a device allocation";
    }
  }
  if (plain_segments != allocations.size()) return "device holds allocations the allocator does not know";
  if (!mappings.empty()) return "device holds mapped pages outside every segment";

  auto cmp = [&](const char* name, const StatArray& arr, const int64_t* want) -> std::string {
    int64_t all = want[kSmallPool] + want[kLargePool];
    if (arr[kAggregate].current != all || arr[kSmallPool].current != want[kSmallPool] ||
        arr[kLargePool].current != want[kLargePool])
      return std::string(name) + " current " + std::to_string(arr[kAggregate].current) + " != recount " +
             std::to_string(all);
    for (const Stat& x : arr)
      if (x.current != x.allocated - x.freed || x.peak < x.current) return std::string(name) + " counters inconsistent";
    return "";
  };
  for (auto r :
       {cmp("allocated_bytes", st.allocated_bytes, alloc_bytes), cmp("active_bytes", st.active_bytes, alloc_bytes),
        cmp("allocation", st.allocation, alloc_count), cmp("active", st.active, alloc_count),
        cmp("requested_bytes", st.requested_bytes, req_bytes), cmp("segment", st.segment, seg_count),
        cmp("reserved_bytes", st.reserved_bytes, reserved), cmp("inactive_split", st.inactive_split, split_count),
        cmp("inactive_split_bytes", st.inactive_split_bytes, split_bytes)})
    if (!r.empty()) return r;
  if (st.oversize_allocations.current != oversize_alloc) return "oversize_allocations mismatch";
  if (st.oversize_segments.current != oversize_seg) return "oversize_segments mismatch";
  if (a.memory_allocated() != static_cast<uint64_t>(alloc_bytes[1] + alloc_bytes[2])) return "memory_allocated() stale";
  if (a.memory_reserved() != static_cast<uint64_t>(reserved[1] + reserved[2])) return "memory_reserved() stale";
  if (dev.used_bytes() != static_cast<uint64_t>(reserved[1] + reserved[2])) return "device usage != reserved";
  return err.str();
}

}  // namespace vramlab::alloc::testing
