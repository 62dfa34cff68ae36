#pragma once
// Scratch that CUB's device algorithms ask the caching allocator for (ATen passes
// CUB a buffer from the allocator): the sizes CUB's temp-storage queries return, per
// algorithm, for the launch shapes ATen uses on sm80/sm90. Each is a handful of
// 256-byte-aligned arrays plus CUB's 255 bytes of alignment slack.
#include <cstddef>
#include <cstdint>

namespace vramlab::engine {

// cub::DeviceRadixSort::SortPairs (not in place: the alternate key and value buffers
// live in the scratch) over `n` items sorted on bits [0, end_bit).
size_t cub_radix_sort_pairs_bytes(int64_t n, size_t key_bytes, size_t value_bytes, int end_bit);
// cub::DeviceSelect::UniqueByKey / cub::DeviceScan::ExclusiveSum over `n` items: the
// decoupled look-back tile states.
size_t cub_scan_bytes(int64_t n);

}  // namespace vramlab::engine
