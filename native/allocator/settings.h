#pragma once
// Allocator settings parsed from a PYTORCH_CUDA_ALLOC_CONF-style string, with the
// defaults, keys and limits of PyTorch 2.11 (c10/core/AllocatorConfig.cpp).
#include <algorithm>
#include <array>
#include <bit>
#include <cstddef>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>

#include "allocator/constants.h"

namespace vramlab::alloc {

// A bad settings string. The message names the offending key.
class SettingsError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

struct AllocatorSettings {
  size_t max_split_size = std::numeric_limits<size_t>::max();  // unlimited
  size_t max_non_split_rounding_size = kLargeBuffer;
  size_t large_segment_size = kLargeBuffer;
  double garbage_collection_threshold = 0.0;
  bool expandable_segments = false;
  // Divisions per power-of-two interval starting at 1 MiB (index 0 covers < 2 MiB).
  std::array<size_t, kRoundUpPowerOfTwoIntervals> roundup_power2_divisions{};
  // per_process_memory_fraction, when the string sets it (applied by the allocator).
  std::optional<double> per_process_memory_fraction;
  std::string source;  // the string this was parsed from

  bool max_split_unlimited() const { return max_split_size == std::numeric_limits<size_t>::max(); }
  // Inline: round_size asks on every malloc.
  size_t roundup_divisions_for(size_t size) const {
    // Interval index: log2(size) - log2(1 MiB), clamped to [0, 15].
    const size_t log_size = static_cast<size_t>(std::bit_width(size)) - 1;
    const size_t index = log_size > 20 ? log_size - 20 : 0;
    return roundup_power2_divisions[std::min(index, kRoundUpPowerOfTwoIntervals - 1)];
  }

  // Throws SettingsError on unknown keys, malformed values or values PyTorch rejects.
  static AllocatorSettings parse(const std::string& conf);
};

}  // namespace vramlab::alloc
