#include "allocator/stats.h"

#include <algorithm>
#include <cstdio>

namespace vramlab::alloc {

namespace {
template <typename F>
void for_each_array(DeviceStats& s, F f) {
  for (StatArray* a : {&s.allocation, &s.segment, &s.active, &s.inactive_split, &s.allocated_bytes, &s.reserved_bytes,
                       &s.active_bytes, &s.inactive_split_bytes, &s.requested_bytes})
    for (Stat& st : *a) f(st);
}
}  // namespace

void DeviceStats::reset_peak() {
  for_each_array(*this, [](Stat& st) { st.reset_peak(); });
  oversize_allocations.reset_peak();
  oversize_segments.reset_peak();
}

void DeviceStats::reset_accumulated() {
  for_each_array(*this, [](Stat& st) { st.reset_accumulated(); });
  num_alloc_retries = num_ooms = num_sync_all_streams = num_device_alloc = num_device_free = 0;
  oversize_allocations.reset_accumulated();
  oversize_segments.reset_accumulated();
}

std::vector<std::pair<std::string, int64_t>> memory_stats_dict(const DeviceStats& s) {
  std::vector<std::pair<std::string, int64_t>> out;
  auto add_stat = [&](const std::string& prefix, const Stat& st) {
    out.emplace_back(prefix + ".current", st.current);
    out.emplace_back(prefix + ".peak", st.peak);
    out.emplace_back(prefix + ".allocated", st.allocated);
    out.emplace_back(prefix + ".freed", st.freed);
  };
  auto add_array = [&](const std::string& name, const StatArray& a) {
    add_stat(name + ".all", a[kAggregate]);
    add_stat(name + ".small_pool", a[kSmallPool]);
    add_stat(name + ".large_pool", a[kLargePool]);
  };
  add_array("allocation", s.allocation);
  add_array("segment", s.segment);
  add_array("active", s.active);
  add_array("inactive_split", s.inactive_split);
  add_array("allocated_bytes", s.allocated_bytes);
  add_array("reserved_bytes", s.reserved_bytes);
  add_array("active_bytes", s.active_bytes);
  add_array("inactive_split_bytes", s.inactive_split_bytes);
  add_array("requested_bytes", s.requested_bytes);
  add_stat("oversize_allocations", s.oversize_allocations);
  add_stat("oversize_segments", s.oversize_segments);
  out.emplace_back("num_alloc_retries", s.num_alloc_retries);
  out.emplace_back("num_ooms", s.num_ooms);
  out.emplace_back("num_sync_all_streams", s.num_sync_all_streams);
  out.emplace_back("num_device_alloc", s.num_device_alloc);
  out.emplace_back("num_device_free", s.num_device_free);
  out.emplace_back("max_split_size", s.max_split_size);
  std::sort(out.begin(), out.end());
  return out;
}

std::string format_size(uint64_t size) {
  char buf[64];
  if (size <= 1024) {
    std::snprintf(buf, sizeof buf, "%llu bytes", static_cast<unsigned long long>(size));
  } else if (size <= 1048576) {
    std::snprintf(buf, sizeof buf, "%.2f KiB", static_cast<double>(size) / 1024.0);
  } else if (size <= 1073741824ULL) {
    std::snprintf(buf, sizeof buf, "%.2f MiB", static_cast<double>(size) / 1048576.0);
  } else {
    std::snprintf(buf, sizeof buf, "%.2f GiB", static_cast<double>(size) / 1073741824.0);
  }
  return buf;
}

}  // namespace vramlab::alloc
