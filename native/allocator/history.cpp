#include "allocator/history.h"

#include <algorithm>
#include <stdexcept>

namespace vramlab::alloc {

const char* trace_action_name(TraceAction a) {
  switch (a) {
    case TraceAction::kAlloc:
      return "alloc";
    case TraceAction::kFree:
      return "free";
    case TraceAction::kSegmentAlloc:
      return "segment_alloc";
    case TraceAction::kSegmentFree:
      return "segment_free";
    case TraceAction::kSegmentMap:
      return "segment_map";
    case TraceAction::kSegmentUnmap:
      return "segment_unmap";
    case TraceAction::kOom:
      return "oom";
    case TraceAction::kEmptyCache:
      return "empty_cache";
  }
  return "unknown";
}

void TraceRing::set_max_entries(size_t n) {
  n = std::max<size_t>(1, n);
  if (n != max_entries_) {
    // Re-linearise so that shrinking keeps the newest events.
    std::vector<TraceEvent> all = entries();
    if (all.size() > n) all.erase(all.begin(), all.end() - static_cast<std::ptrdiff_t>(n));
    buf_ = std::move(all);
    next_ = buf_.size() == n ? 0 : buf_.size();
    if (next_ == n) next_ = 0;
    max_entries_ = n;
  }
}

std::vector<TraceEvent> TraceRing::entries() const {
  std::vector<TraceEvent> out;
  out.reserve(buf_.size());
  out.insert(out.end(), buf_.begin() + static_cast<std::ptrdiff_t>(next_), buf_.end());
  out.insert(out.end(), buf_.begin(), buf_.begin() + static_cast<std::ptrdiff_t>(next_));
  return out;
}

void TraceRing::clear() {
  buf_.clear();
  buf_.shrink_to_fit();
  next_ = 0;
}

ContextTable::ContextTable() { names_.emplace_back(""); }

ContextId ContextTable::intern(std::string_view name) {
  if (name.empty()) return 0;
  std::lock_guard<std::mutex> g(mu_);
  auto it = ids_.find(std::string(name));
  if (it != ids_.end()) return it->second;
  if (names_.size() >= 0xFFFFFFFFu) throw std::length_error("too many interned contexts");
  ContextId id = static_cast<ContextId>(names_.size());
  names_.emplace_back(name);
  ids_.emplace(std::string(name), id);
  return id;
}

std::string ContextTable::name(ContextId id) const {
  std::lock_guard<std::mutex> g(mu_);
  if (id >= names_.size()) throw std::out_of_range("unknown context id " + std::to_string(id));
  return names_[id];
}

size_t ContextTable::size() const {
  std::lock_guard<std::mutex> g(mu_);
  return names_.size();
}

}  // namespace vramlab::alloc
