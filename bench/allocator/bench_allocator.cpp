// Allocator speed: ns per op on the sim device (and a CUDA device when present), next
// to PyTorch's CUDACachingAllocator measured in the same run on the same GPU
// (raw_alloc + raw_delete, best of 3; bench/allocator/torch_raw_alloc.py --json writes
// the figures, test/gpu/bench.sh runs both).
// On a CUDA device each replay row is followed by the driver calls made inside the timed
// replays (count and wall time a replay): where a segment's device time goes.
// Run: build/vramlab_bench_allocator [iterations] [torch.json]
#include <algorithm>
#include <functional>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <stdexcept>
#include <sstream>
#include <string>
#include <vector>

#include "allocator/caching_allocator.h"
#include "allocator/replay.h"
#include "device/cuda_device.h"
#include "engine/spec/spec_value.h"

using namespace vramlab;
using namespace vramlab::alloc;
using Clock = std::chrono::steady_clock;

namespace {

// The mixed workload's sequence; bench/allocator/torch_raw_alloc.py builds the same one.
struct Lcg {
  uint64_t x = 0x9E3779B97F4A7C15ull;
  uint64_t next() { return x = x * 6364136223846793005ull + 1442695040888963407ull; }
};
constexpr size_t kLive = 256;
constexpr uint64_t kMaxMixed = 64ull << 20;

double best_of_3(const std::function<double()>& run) {
  double best = 1e300;
  for (int i = 0; i < 3; ++i) best = std::min(best, run());
  return best;
}

double pair_ns(std::shared_ptr<Device> dev, size_t bytes, int iters) {
  CachingAllocator a(dev);
  a.free(a.malloc(bytes));  // warm: the segment is cached from here on
  return best_of_3([&] {
    auto t0 = Clock::now();
    for (int i = 0; i < iters; ++i) a.free(a.malloc(bytes));
    return std::chrono::duration<double, std::nano>(Clock::now() - t0).count() / iters;
  });
}

double mixed_ns(std::shared_ptr<Device> dev, int iters) {
  Lcg rng;
  std::vector<size_t> sizes(iters), slots(iters);
  for (int i = 0; i < iters; ++i) {
    uint64_t r = rng.next();
    sizes[i] = (r >> 33) % kMaxMixed + 1;
    slots[i] = (r >> 20) % kLive;
  }
  CachingAllocator a(dev);
  std::vector<uintptr_t> live(kLive);
  Lcg warm;
  for (auto& p : live) p = a.malloc((warm.next() >> 33) % kMaxMixed + 1).ptr;
  // Warm the cache with one pass so timed passes measure steady state.
  for (int i = 0; i < iters; ++i) {
    a.free(live[slots[i]]);
    live[slots[i]] = a.malloc(sizes[i]).ptr;
  }
  return best_of_3([&] {
    auto t0 = Clock::now();
    for (int i = 0; i < iters; ++i) {
      a.free(live[slots[i]]);
      live[slots[i]] = a.malloc(sizes[i]).ptr;
    }
    return std::chrono::duration<double, std::nano>(Clock::now() - t0).count() / iters;
  });
}

// Driver calls made inside the timed replays (cuda_call_stats before and after each).
struct CallsSeen {
  CudaCallStats sum;
  int replays = 0;
  double replay_ns = 0;
  void add(const CudaCallStats& before, const CudaCallStats& after, double ns) {
    for (int k = 0; k < static_cast<int>(CudaCall::kCount); ++k) {
      sum.count[k] += after.count[k] - before.count[k];
      sum.ns[k] += after.ns[k] - before.ns[k];
    }
    ++replays;
    replay_ns += ns;
  }
  // "cuMemCreate 36 x 11.3 us, ..., = X of Y us": means over every timed replay (the row is
  // the best of 3); empty when the device made no driver calls.
  std::string line() const {
    const double replay_us = replay_ns / 1e3 / replays;
    std::string out;
    double total_us = 0;
    char buf[96];
    for (int k = 0; k < static_cast<int>(CudaCall::kCount); ++k) {
      if (!sum.count[k]) continue;
      const double n = double(sum.count[k]) / replays, us = double(sum.ns[k]) / 1e3 / double(sum.count[k]);
      std::snprintf(buf, sizeof buf, "%s%s %.4g x %.1f us", out.empty() ? "" : ", ", cuda_call_name(CudaCall(k)), n,
                    us);
      out += buf;
      total_us += n * us;
    }
    if (out.empty()) return out;
    std::snprintf(buf, sizeof buf, " = %.0f of %.0f us a replay (means)", total_us, replay_us);
    return out + buf;
  }
};

double replay_ns(const std::string& device_id, const std::string& fixture, const std::string& settings, size_t* ops,
                 CallsSeen* calls) {
  // An unreadable fixture must fail loudly: an empty trace timed as 0 ops once printed
  // best_of_3's 1e300 as the row's figure.
  const std::string path = std::string(VRAMLAB_SOURCE_DIR) + "/test/fixtures/torch/" + fixture + ".trace.txt";
  std::ifstream f(path);
  if (!f) throw std::runtime_error("cannot read " + path + " (set up the source tree where the bench was built)");
  std::stringstream ss;
  ss << f.rdbuf();
  ReplayTrace t = parse_replay_text(ss.str());
  *ops = t.ops.size();
  if (t.ops.empty()) throw std::runtime_error(path + " holds no operations");
  return best_of_3([&] {
    double total = 0;
    const int reps = 50;
    for (int r = 0; r < reps; ++r) {
      std::shared_ptr<Device> dev = open_device(device_id);
      CachingAllocator a(dev, AllocatorSettings::parse(settings));
      const CudaCallStats before = cuda_call_stats();
      auto t0 = Clock::now();
      replay(a, t.view());
      const double ns = std::chrono::duration<double, std::nano>(Clock::now() - t0).count();
      calls->add(before, cuda_call_stats(), ns);
      total += ns;
    }
    return total / reps / static_cast<double>(t.ops.size());
  });
}

// PyTorch's ns per op by workload name, from the same run ({} when not given).
std::map<std::string, double> torch_ns;

void table(const std::string& device_id, int iters) {
  std::shared_ptr<Device> dev = open_device(device_id);
  std::printf("\n%s (%s), %d iterations, best of 3\n", device_id.c_str(), dev->info().name.c_str(), iters);
  std::printf("%-32s %12s %14s %8s\n", "workload", "vramlab ns", "PyTorch ns", "ratio");
  auto line = [](const std::string& name, double ns) {
    auto t = torch_ns.find(name);
    if (t != torch_ns.end() && t->second > 0)
      std::printf("%-32s %12.1f %14.1f %8.2f\n", name.c_str(), ns, t->second, ns / t->second);
    else
      std::printf("%-32s %12.1f %14s %8s\n", name.c_str(), ns, "-", "-");
  };
  line("pair_512B", pair_ns(dev, 512, iters));
  line("pair_1MiB", pair_ns(dev, 1 << 20, iters));
  line("pair_64MiB", pair_ns(dev, 64 << 20, iters));
  line("mixed_free_plus_alloc", mixed_ns(dev, iters));
  // The replays again under expandable segments (PyTorch's side sets the same option).
  for (const char* settings : {"", "expandable_segments:True"}) {
    for (const char* fx : {"mlp_adam", "resnet18_sgd"}) {
      size_t ops = 0;
      CallsSeen calls;
      const double ns = replay_ns(device_id, fx, settings, &ops, &calls);
      line(std::string("replay_") + fx + (*settings ? "_expandable" : ""), ns);
      const std::string seen = calls.line();
      if (!seen.empty()) std::printf("    device calls a replay: %s\n", seen.c_str());
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  int iters = argc > 1 ? std::atoi(argv[1]) : 200000;
  if (iters <= 0) iters = 200000;
  if (argc > 2) {
    try {
      engine::SpecValue t = engine::load_json_file(argv[2]);
      for (auto& [k, v] : t.fields()) torch_ns[k] = v.as_number(k);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "error: PyTorch figures not read (%s)\n", e.what());
      return 2;
    }
  }
  std::printf(
      "vramlab caching allocator: ns per op (pair = malloc + free; mixed = free one of %zu live blocks\n"
      "and allocate a new random size up to 64 MiB). Target: ratio <= 0.5.\n",
      kLive);
  try {
    table("sim:h200-141gb", iters);
    for (const DeviceInfo& d : cuda_list_devices()) table(d.id, iters);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
