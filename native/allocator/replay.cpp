#include "allocator/replay.h"

#include <sstream>

#include "device/sim_device.h"
#include <stdexcept>

namespace vramlab::alloc {

ReplayTrace parse_replay_text(const std::string& text) {
  ReplayTrace t;
  std::istringstream in(text);
  std::string line;
  size_t lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    auto hash = line.find('#');
    if (hash != std::string::npos) line.resize(hash);
    std::istringstream ls(line);
    std::string op;
    if (!(ls >> op)) continue;
    auto bad = [&](const char* why) {
      throw std::invalid_argument("replay trace line " + std::to_string(lineno) + ": " + why + ": '" + line + "'");
    };
    if (op == "a") {
      uint64_t id = 0, size = 0, stream = 0;
      if (!(ls >> id >> size)) bad("expected 'a <id> <size> [stream]'");
      if (!(ls >> stream)) stream = 0;
      if (id > 0xFFFFFFFFu || stream > 0xFFFFFFFFu) bad("id or stream out of range");
      t.alloc(static_cast<uint32_t>(id), size, static_cast<uint32_t>(stream));
    } else if (op == "f") {
      uint64_t id = 0;
      if (!(ls >> id) || id > 0xFFFFFFFFu) bad("expected 'f <id>'");
      t.free(static_cast<uint32_t>(id));
    } else if (op == "s") {
      uint64_t addr = 0, size = 0;
      if (!(ls >> addr >> size)) bad("expected 's <address> <size>'");
      t.segment_addresses.push_back(addr);
    } else if (op == "e") {
      t.empty_cache();
    } else {
      bad("unknown op");
    }
  }
  return t;
}

namespace {
// Marks the seeded allocations live under their replay ids.
template <typename Slot>
void seed_live(const CachingAllocator&, const ReplayInput& in, Slot&& slot) {
  size_t k = 0;
  for (const SeedSegment& seg : *in.seed) {
    uintptr_t at = seg.address;
    for (const SeedBlock& b : seg.blocks) {
      uint32_t id = in.seed_ids && k < in.seed_ids->size() ? (*in.seed_ids)[k] : 0;
      ++k;
      if (b.allocated && id != 0) {
        uintptr_t& s = slot(id);
        if (s != 0) throw std::invalid_argument("replay seed: id " + std::to_string(id) + " is given twice");
        s = at;
      }
      at += b.size;
    }
  }
}
}  // namespace

ReplayResult replay(CachingAllocator& allocator, const ReplayInput& in, bool take_snapshot) {
  if (in.count && (!in.ops || !in.ids)) throw std::invalid_argument("replay: ops and ids are required");
  ReplayResult r;
  if (in.segment_count) {
    auto* sim = dynamic_cast<SimDevice*>(&allocator.device());
    if (sim) sim->set_address_script({in.segment_addresses, in.segment_addresses + in.segment_count});
  }
  std::vector<uintptr_t> live;  // id -> address (0: not live)
  auto slot = [&](uint32_t id) -> uintptr_t& {
    if (id >= live.size()) live.resize(std::max<size_t>(id + 1, live.size() * 2), 0);
    return live[id];
  };
  std::vector<uint8_t> failed;  // ids whose alloc hit OOM
  if (in.seed) {
    allocator.seed(*in.seed);
    seed_live(allocator, in, slot);
  }
  // Fragmentation at the peak: the gap right after the op that drove reserved highest.
  uint64_t top = allocator.memory_reserved();
  r.unallocated_at_peak = top - allocator.memory_allocated();
  auto watch_peak = [&]() {
    const uint64_t reserved = allocator.memory_reserved();
    if (reserved > top) {
      top = reserved;
      r.unallocated_at_peak = reserved - allocator.memory_allocated();
    }
  };
  for (size_t i = 0; i < in.count; ++i, watch_peak()) {
    switch (static_cast<ReplayOpKind>(in.ops[i])) {
      case ReplayOpKind::kAlloc: {
        if (!in.sizes) throw std::invalid_argument("replay: sizes are required for alloc ops");
        uint32_t id = in.ids[i];
        uintptr_t& s = slot(id);
        if (s != 0)
          throw std::invalid_argument("replay op " + std::to_string(i) + ": id " + std::to_string(id) +
                                      " is already live");
        try {
          Allocation a = allocator.malloc(in.sizes[i], in.streams ? in.streams[i] : 0);
          // Zero-byte requests get no block; remember them with a sentinel.
          s = a.ptr ? a.ptr : ~uintptr_t(0);
        } catch (const OutOfMemoryError& e) {
          if (r.first_oom_index < 0) {
            r.first_oom_index = static_cast<int64_t>(i);
            r.first_oom_message = e.what();
          }
          // A what-if run goes on past an OOM: the matching free is then expected and skipped.
          if (id >= failed.size()) failed.resize(std::max<size_t>(id + 1, failed.size() * 2), 0);
          failed[id] = 1;
        }
        break;
      }
      case ReplayOpKind::kFree: {
        uint32_t id = in.ids[i];
        uintptr_t& s = slot(id);
        if (s == 0) {
          if (id < failed.size() && failed[id]) {
            failed[id] = 0;
            continue;
          }
          throw std::invalid_argument("replay op " + std::to_string(i) + ": free of id " + std::to_string(id) +
                                      ", which is not live");
        }
        if (s != ~uintptr_t(0)) allocator.free(s);
        s = 0;
        break;
      }
      case ReplayOpKind::kEmptyCache:
        allocator.empty_cache();
        break;
      case ReplayOpKind::kOomAttempt: {
        if (!in.sizes) throw std::invalid_argument("replay: sizes are required for oom attempts");
        ReplayResult::OomAttempt at{i, false, {}};
        try {
          Allocation a = allocator.malloc(in.sizes[i], in.streams ? in.streams[i] : 0);
          allocator.free(a.ptr);
        } catch (const OutOfMemoryError& e) {
          at.failed = true;
          at.message = e.what();
          if (r.first_oom_index < 0) {
            r.first_oom_index = static_cast<int64_t>(i);
            r.first_oom_message = e.what();
          }
        }
        r.oom_attempts.push_back(std::move(at));
        break;
      }
      default:
        throw std::invalid_argument("replay op " + std::to_string(i) + ": unknown op code " +
                                    std::to_string(in.ops[i]));
    }
  }
  DeviceStats st = allocator.stats();
  r.peak_allocated = static_cast<uint64_t>(st.allocated_bytes[kAggregate].peak);
  r.peak_reserved = static_cast<uint64_t>(st.reserved_bytes[kAggregate].peak);
  r.num_device_alloc = st.num_device_alloc;
  r.num_device_free = st.num_device_free;
  r.num_ooms = st.num_ooms;
  r.num_alloc_retries = st.num_alloc_retries;
  r.memory_stats = memory_stats_dict(st);
  r.virtual_time_ns = allocator.virtual_time_ns();
  if (allocator.history_enabled()) r.history = allocator.history();
  if (take_snapshot) r.snapshot = allocator.snapshot(false);
  return r;
}

ReplayResult replay(const ReplayInput& in, const ReplayOptions& o) {
  std::shared_ptr<Device> dev = open_device(o.device_id);
  CachingAllocator a(dev, AllocatorSettings::parse(o.settings));
  if (o.memory_fraction) a.set_memory_fraction(*o.memory_fraction);
  if (o.capacity) a.set_capacity_limit(*o.capacity);
  if (o.record_history) a.set_history(true, o.history_max_entries);
  return replay(a, in, o.take_snapshot);
}

}  // namespace vramlab::alloc
