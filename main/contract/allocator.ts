// The caching allocator's size classes (c10's CUDACachingAllocator, native/allocator/constants.h),
// declared once for TypeScript. The addon reports the engine's own values and loading it
// checks they are these (main/addon/load.ts), so snapshot code and the engine cannot drift.
export const ALLOCATOR_CONSTANTS = {
  /** Every request rounds up to a multiple of 512 B (kMinBlockSize). */
  minBlockSize: 512,
  /** Requests up to 1 MiB use the small pool; also the large pool's split threshold (kSmallSize). */
  smallSize: 1048576,
  /** Small-pool segments are 2 MiB (kSmallBuffer). */
  smallBuffer: 2097152,
  /** 1..10 MiB requests get 20 MiB segments; max_non_split_rounding's default (kLargeBuffer). */
  largeBuffer: 20971520,
  /** From 10 MiB on, segments are rounded to 2 MiB (kMinLargeAlloc, kRoundLarge). */
  minLargeAlloc: 10485760,
  roundLarge: 2097152,
  /** roundup_power2_divisions has one slot per power of two from 1 MiB (kRoundUpPowerOfTwoIntervals). */
  roundupIntervals: 16,
} as const;

export type AllocatorConstants = { [K in keyof typeof ALLOCATOR_CONSTANTS]: number };
