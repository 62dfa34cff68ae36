// torch.cuda.memory_summary() layout, reproduced from torch/cuda/memory.py.
#include <cstdio>
#include <string>
#include <vector>

#include "allocator/stats.h"

namespace vramlab::alloc {

namespace {

// Python's _format_size: the unit follows the row's "all" value (pref), so the
// pool rows share their parent's unit.
std::string fmt_size(int64_t sz, int64_t pref) {
  static const char* prefixes[] = {"B  ", "KiB", "MiB", "GiB", "TiB", "PiB"};
  const char* prefix = prefixes[0];
  double pref_d = static_cast<double>(pref);
  for (int k = 1; k < 6; ++k) {
    if (pref_d < 768.0 * 1024.0) break;
    prefix = prefixes[k];
    sz = sz >= 0 ? sz / 1024 : -((-sz + 1023) / 1024);  // floor division
    pref_d /= 1024.0;
  }
  char buf[48];
  std::snprintf(buf, sizeof buf, "%6lld %s", static_cast<long long>(sz), prefix);
  return buf;
}

std::string fmt_count(int64_t cnt, int64_t pref) {
  static const char* prefixes[] = {" ", "K", "M"};
  const char* prefix = prefixes[0];
  double pref_d = static_cast<double>(pref);
  for (int k = 1; k < 3; ++k) {
    if (pref_d < 750.0 * 1000.0) break;
    prefix = prefixes[k];
    cnt = cnt >= 0 ? cnt / 1000 : -((-cnt + 999) / 1000);
    pref_d /= 1000.0;
  }
  char buf[48];
  std::snprintf(buf, sizeof buf, "%7lld %s ", static_cast<long long>(cnt), prefix);
  return buf;
}

using Formatter = std::string (*)(int64_t, int64_t);

std::string row(const std::string& name, Formatter f, const Stat& st, const Stat& pref) {
  char name_buf[64];
  std::snprintf(name_buf, sizeof name_buf, " %-21s | ", name.c_str());
  return name_buf + f(st.current, pref.current) + " | " + f(st.peak, pref.peak) + " | " +
         f(st.allocated, pref.allocated) + " | " + f(st.freed, pref.freed) + " ";
}

}  // namespace

std::string memory_summary(const DeviceStats& s, int device_index, bool abbreviated) {
  struct Metric {
    const StatArray* stats;
    const char* name;
    Formatter f;
  };
  const Metric metrics[] = {
      {&s.allocated_bytes, "Allocated memory", fmt_size},
      {&s.active_bytes, "Active memory", fmt_size},
      {&s.requested_bytes, "Requested memory", fmt_size},
      {&s.reserved_bytes, "GPU reserved memory", fmt_size},
      {&s.inactive_split_bytes, "Non-releasable memory", fmt_size},
      {&s.allocation, "Allocations", fmt_count},
      {&s.active, "Active allocs", fmt_count},
      {&s.segment, "GPU reserved segments", fmt_count},
      {&s.inactive_split, "Non-releasable allocs", fmt_count},
  };

  std::vector<std::string> lines;
  const std::string eq(75, '='), dash(75, '-');
  char buf[160];
  lines.push_back(eq);
  std::snprintf(buf, sizeof buf, " %16s PyTorch CUDA memory summary, device ID %-17d ", "", device_index);
  lines.emplace_back(buf);
  lines.push_back(dash);
  std::snprintf(buf, sizeof buf, "  %9s CUDA OOMs: %-12lld | %6s cudaMalloc retries: %-8lld  ", "",
                static_cast<long long>(s.num_ooms), "", static_cast<long long>(s.num_alloc_retries));
  lines.emplace_back(buf);
  lines.push_back(eq);
  lines.emplace_back("        Metric         | Cur Usage  | Peak Usage | Tot Alloc  | Tot Freed  ");
  for (const Metric& m : metrics) {
    lines.push_back(dash);
    const Stat& all = (*m.stats)[kAggregate];
    lines.push_back(row(m.name, m.f, all, all));
    if (!abbreviated) {
      lines.push_back(row("      from large pool", m.f, (*m.stats)[kLargePool], all));
      lines.push_back(row("      from small pool", m.f, (*m.stats)[kSmallPool], all));
    }
  }
  lines.push_back(dash);
  lines.push_back(row("Oversize allocations", fmt_count, s.oversize_allocations, s.oversize_allocations));
  lines.push_back(dash);
  lines.push_back(row("Oversize GPU segments", fmt_count, s.oversize_segments, s.oversize_segments));
  lines.push_back(eq);

  std::string out;
  for (const std::string& l : lines) out += "|" + l + "|\n";
  return out;
}

}  // namespace vramlab::alloc
