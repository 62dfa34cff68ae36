// Wall time of one simulated training step of a ~1B-parameter residual stack at
// batch 64 (shape-only: the point is that no per-element work happens on the host).
#include <chrono>
#include <cstdio>

#include "engine/protocol.h"

using namespace vramlab::engine;

int main() {
  struct Case {
    const char* name;
    int64_t dim, depth, batch;
    const char* opt;
    const char* precision;
    const char* ckpt;
  };
  const Case cases[] = {
      {"residual 8192x8 (1.07B) sgd fp32", 8192, 8, 64, "sgd", "fp32", "none"},
      {"residual 8192x8 (1.07B) adam fp32", 8192, 8, 64, "adam", "fp32", "none"},
      {"residual 8192x8 (1.07B) adam bf16", 8192, 8, 64, "adam", "bf16", "none"},
      {"residual 8192x8 (1.07B) adam sqrt-ckpt", 8192, 8, 64, "adam", "fp32", "sqrt"},
      {"residual 4096x64 (2.1B) adamw bf16", 4096, 64, 64, "adamw", "bf16", "block"},
  };
  std::printf("%-42s %12s %14s %14s %14s\n", "case", "params", "wall ms/step", "peak GiB", "model ms/step");
  for (const auto& c : cases) {
    ProtocolConfig cfg;
    cfg.model = "residual";
    cfg.dim = c.dim;
    cfg.depth = c.depth;
    cfg.batch = c.batch;
    cfg.optimizer = c.opt;
    cfg.precision = c.precision;
    cfg.checkpoint = c.ckpt;
    cfg.iterations = 1;
    auto t0 = std::chrono::steady_clock::now();
    ProtocolResult r = run_protocol(cfg);
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    double peak = double(std::max(r.at("it0_peak_fwd_bwd"), r.at("it0_peak_step")) + r.base) / double(1ull << 30);
    std::printf("%-42s %12lld %14.2f %14.2f %14.2f\n", c.name, (long long)r.num_parameters, ms, peak,
                r.modeled_time_ms);
  }
  return 0;
}
