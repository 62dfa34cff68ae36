#include "engine/ops/cub_temp.h"

#include <algorithm>

namespace vramlab::engine {

namespace {
constexpr size_t kAlign = 256;
size_t aligned(size_t b) { return (b + kAlign - 1) / kAlign * kAlign; }
int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
}  // namespace

size_t cub_radix_sort_pairs_bytes(int64_t n, size_t key_bytes, size_t value_bytes, int end_bit) {
  // Onesweep: per-pass digit histograms (int64 offsets), one look-back row of 256
  // counters per tile, per-pass tile counters, then the alternate key/value buffers.
  constexpr int kRadixBits = 8, kDigits = 1 << kRadixBits;
  constexpr int64_t kTileItems = 256 * 21;  // 256 threads x 21 items for 8-byte keys on sm80/sm90
  const int passes = std::max(1, (end_bit + kRadixBits - 1) / kRadixBits);
  const int64_t tiles = std::max<int64_t>(1, ceil_div(n, kTileItems));
  size_t total = aligned(size_t(passes) * kDigits * 8) + aligned(size_t(tiles) * kDigits * 4) +
                 aligned(size_t(passes) * 4) + aligned(size_t(n) * key_bytes) + aligned(size_t(n) * value_bytes);
  return total + kAlign - 1;
}

size_t cub_scan_bytes(int64_t n) {
  // (tiles + 32 warp-padding entries) 16-byte tile descriptors.
  constexpr int64_t kTileItems = 128;
  const int64_t tiles = std::max<int64_t>(1, ceil_div(n, kTileItems));
  return aligned(size_t(tiles + 32) * 16) + kAlign - 1;
}

}  // namespace vramlab::engine
