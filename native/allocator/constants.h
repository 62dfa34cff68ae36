#pragma once
// Size classes of PyTorch's CUDACachingAllocator (c10/core/AllocatorConfig.h).
#include <cstddef>
#include <cstdint>

namespace vramlab::alloc {

constexpr size_t kMinBlockSize = 512;        // every request rounds up to a multiple of 512 B
constexpr size_t kSmallSize = 1048576;       // requests <= 1 MiB use the small pool
constexpr size_t kSmallBuffer = 2097152;     // small-pool segments are 2 MiB
constexpr size_t kLargeBuffer = 20971520;    // 1..10 MiB requests get 20 MiB segments
constexpr size_t kMinLargeAlloc = 10485760;  // from 10 MiB on, segments are rounded to 2 MiB
constexpr size_t kRoundLarge = 2097152;
constexpr size_t kMB = 1048576;
constexpr size_t kRoundUpPowerOfTwoIntervals = 16;  // 1 MiB .. 64 GiB, one slot per power of two
// Largest request the size arithmetic handles: rounding (to 512 B, to 2 MiB, to a power of
// two division) adds less than the request itself, so nothing at or below 2^62 can wrap.
// A larger request is an OOM, as on a real device, never a wrapped (tiny) size.
constexpr size_t kMaxRequestSize = size_t(1) << 62;

using StreamId = uint64_t;   // ordered like cudaStream_t values; 0 is the default stream
using ContextId = uint32_t;  // interned caller tag; 0 means "none"

}  // namespace vramlab::alloc
