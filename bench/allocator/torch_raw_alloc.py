#!/usr/bin/env python3
"""PyTorch's side of bench_allocator: c10::cuda::CUDACachingAllocator::raw_alloc /
raw_delete timed from C++ on the same workloads, ns per op, best of 3.

Needs torch with CUDA and a compiler (torch.utils.cpp_extension.load_inline builds a
tiny extension). Run on a GPU machine:
  python3 bench/allocator/torch_raw_alloc.py [iters] [--json FILE]
With --json the figures go to FILE for vramlab_bench_allocator's same-run table.

Workloads (identical to bench/allocator/bench_allocator.cpp):
  pair_512B / pair_1MiB / pair_64MiB  raw_alloc + raw_delete of one size, cache warm
  mixed_free_plus_alloc               256 live blocks; each step frees one and allocates a
                                      new size, both drawn from the shared 64-bit LCG
  replay_<fixture>                    test/fixtures/torch/<fixture>.trace.txt replayed from an
                                      empty cache, 50 times; ns per operation
  replay_<fixture>_expandable         the same with expandable_segments:True (set at run time)
"""
import json
import os
import sys

import torch
from torch.utils.cpp_extension import load_inline

CPP = r"""
#include <torch/extension.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <algorithm>
#include <chrono>
#include <vector>

using Clock = std::chrono::steady_clock;
namespace alloc = c10::cuda::CUDACachingAllocator;

static double elapsed_ns(Clock::time_point t0) {
  return std::chrono::duration<double, std::nano>(Clock::now() - t0).count();
}

double pair_ns(int64_t bytes, int64_t iters) {
  alloc::raw_delete(alloc::raw_alloc(bytes));  // warm: the segment stays cached
  double best = 1e300;
  for (int rep = 0; rep < 3; ++rep) {
    auto t0 = Clock::now();
    for (int64_t i = 0; i < iters; ++i) alloc::raw_delete(alloc::raw_alloc(bytes));
    best = std::min(best, elapsed_ns(t0) / iters);
  }
  return best;
}

struct Lcg {
  uint64_t x = 0x9E3779B97F4A7C15ull;
  uint64_t next() { return x = x * 6364136223846793005ull + 1442695040888963407ull; }
};

double mixed_ns(int64_t iters) {
  const size_t kLive = 256;
  const uint64_t kMax = 64ull << 20;
  Lcg rng;
  std::vector<size_t> sizes(iters), slots(iters);
  for (int64_t i = 0; i < iters; ++i) {
    uint64_t r = rng.next();
    sizes[i] = (r >> 33) % kMax + 1;
    slots[i] = (r >> 20) % kLive;
  }
  std::vector<void*> live(kLive);
  Lcg warm;
  for (auto& p : live) p = alloc::raw_alloc((warm.next() >> 33) % kMax + 1);
  for (int64_t i = 0; i < iters; ++i) {  // one untimed pass to reach steady state
    alloc::raw_delete(live[slots[i]]);
    live[slots[i]] = alloc::raw_alloc(sizes[i]);
  }
  double best = 1e300;
  for (int rep = 0; rep < 3; ++rep) {
    auto t0 = Clock::now();
    for (int64_t i = 0; i < iters; ++i) {
      alloc::raw_delete(live[slots[i]]);
      live[slots[i]] = alloc::raw_alloc(sizes[i]);
    }
    best = std::min(best, elapsed_ns(t0) / iters);
  }
  for (void* p : live) alloc::raw_delete(p);
  return best;
}

// ops: (kind, id, size) triples; kind 0 alloc, 1 free, 2 empty_cache. Each pass starts
// from an empty cache, as vramlab's replay starts from a fresh allocator.
double replay_ns(std::vector<int64_t> ops, int64_t max_id) {
  const size_t n = ops.size() / 3;
  double best = 1e300;
  for (int rep = 0; rep < 3; ++rep) {
    double total = 0;
    const int reps = 50;
    for (int r = 0; r < reps; ++r) {
      std::vector<void*> ptrs(max_id + 1, nullptr);
      alloc::emptyCache();
      auto t0 = Clock::now();
      for (size_t i = 0; i < n; ++i) {
        int64_t kind = ops[3 * i], id = ops[3 * i + 1];
        if (kind == 0) ptrs[id] = alloc::raw_alloc(ops[3 * i + 2]);
        else if (kind == 1) { alloc::raw_delete(ptrs[id]); ptrs[id] = nullptr; }
        else alloc::emptyCache();
      }
      total += elapsed_ns(t0);
      for (void* p : ptrs) if (p) alloc::raw_delete(p);
    }
    best = std::min(best, total / reps / n);
  }
  alloc::emptyCache();
  return best;
}
"""


def trace_ops(fixture):
    """The replay trace's operations as (kind, id, size) triples."""
    here = os.path.dirname(os.path.abspath(__file__))
    ops, max_id = [], 0
    for line in open(os.path.join(here, "..", "..", "test", "fixtures", "torch", fixture + ".trace.txt")):
        f = line.split("#")[0].split()
        if not f: continue
        if f[0] == "a": ops += [0, int(f[1]), int(f[2])]; max_id = max(max_id, int(f[1]))
        elif f[0] == "f": ops += [1, int(f[1]), 0]
        elif f[0] == "e": ops += [2, 0, 0]
    if not ops: raise SystemExit(f"{fixture}: no operations")
    return ops, max_id


def main():
    args = sys.argv[1:]
    out = None
    if "--json" in args:
        i = args.index("--json"); out = args[i + 1]; del args[i:i + 2]
    iters = int(args[0]) if args else 200000
    if not torch.cuda.is_available():
        raise SystemExit("needs a CUDA GPU")
    torch.cuda.init()
    ext = load_inline(
        name="vramlab_torch_raw_alloc",
        cpp_sources=CPP,
        functions=["pair_ns", "mixed_ns", "replay_ns"],
        with_cuda=True,
        extra_cflags=["-O2"],
        verbose=False,
    )
    print("torch %s on %s, %d iterations, best of 3 (ns per op)" % (torch.__version__, torch.cuda.get_device_name(), iters))
    print("%-32s %12s" % ("workload", "PyTorch ns"))
    res = {}
    for name, size in (("pair_512B", 512), ("pair_1MiB", 1 << 20), ("pair_64MiB", 64 << 20)):
        res[name] = ext.pair_ns(size, iters)
    res["mixed_free_plus_alloc"] = ext.mixed_ns(iters)
    for fx in ("mlp_adam", "resnet18_sgd"):
        res["replay_" + fx] = ext.replay_ns(*trace_ops(fx))
    try:
        torch.cuda.memory._set_allocator_settings("expandable_segments:True")
    except Exception as e:  # an older or newer torch without the run-time switch
        print("expandable segments not set (%s): no _expandable rows" % e)
    else:
        for fx in ("mlp_adam", "resnet18_sgd"):
            res["replay_" + fx + "_expandable"] = ext.replay_ns(*trace_ops(fx))
        torch.cuda.memory._set_allocator_settings("expandable_segments:False")
    for name, ns in res.items():
        print("%-32s %12.1f" % (name, ns))
    if out:
        json.dump(res, open(out, "w"), indent=1)


if __name__ == "__main__":
    main()
