// Upper bounds that keep a spec runnable on one machine; the contract's ranges use them.
export const LIMITS = {
  features: 1 << 20, // in / hidden / out / dim / ffn
  depth: 4096,
  batch: 1 << 24,
  iterations: 10_000, // each iteration keeps its own readings (main/contract/limits.ts)
  accum: 4096,
  vocab: 1 << 20,
  seq: 1 << 20,
  heads: 1024,
  rank: 4096,
  shapes: 4096,
  capacityMin: 1 << 20, // 1 MiB
  capacityMax: 2 ** 50, // 1 PiB
} as const;
