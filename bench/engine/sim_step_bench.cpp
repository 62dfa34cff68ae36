// Wall time of one simulated training step (shape-only: no per-element work happens on
// the host): ~1B-parameter residual stacks at batch 64, and the transformer shapes the
// transformer issue sets targets for (Llama-3-8B at batch 1, seq 8192, Adam: < 1 s).
#include <algorithm>
#include <chrono>
#include <cstdio>

#include "spec_util.h"

using namespace vramlab::engine;

int main() {
  struct Case {
    const char* name;
    const char* spec;
    double target_ms = 0;  // the transformer issue's target for this case (0: none)
  };
  const Case cases[] = {
      {"residual 8192x8 (1.07B) sgd fp32",
       R"({"model":{"kind":"residual","dim":8192,"depth":8},"batch":64,"optimizer":"sgd"})"},
      {"residual 8192x8 (1.07B) adam fp32",
       R"({"model":{"kind":"residual","dim":8192,"depth":8},"batch":64,"optimizer":"adam"})"},
      {"residual 8192x8 (1.07B) adam bf16",
       R"({"model":{"kind":"residual","dim":8192,"depth":8},"batch":64,"optimizer":"adam","precision":"bf16"})"},
      {"residual 8192x8 (1.07B) adam sqrt-ckpt",
       R"({"model":{"kind":"residual","dim":8192,"depth":8},"batch":64,"optimizer":"adam","checkpoint":"sqrt"})"},
      {"residual 4096x64 (2.1B) adamw bf16 block",
       R"({"model":{"kind":"residual","dim":4096,"depth":64},"batch":64,"optimizer":"adamw","precision":"bf16","checkpoint":"block"})"},
      {"gpt2-small b8 s1024 adamw bf16",
       R"({"model":{"kind":"gpt","vocab":50257,"seq":1024,"dim":768,"depth":12,"heads":12},"batch":8,"optimizer":"adamw","precision":"bf16"})"},
      {"llama3-8b b1 s8192 adam bf16",
       R"({"model":{"kind":"llama","vocab":128256,"seq":8192,"dim":4096,"depth":32,"heads":32,"kv_heads":8,"ffn":14336},"batch":1,"optimizer":"adam","precision":"bf16"})",
       1000},
  };
  std::printf("%-42s %14s %14s %10s %14s %14s\n", "case (1 step, simulated)", "params", "wall ms/step", "target ms",
              "peak GiB", "model ms/step");
  for (const auto& c : cases) {
    RunSpec spec = vramlab::spectest::spec(c.spec);
    spec.iterations = 1;
    spec.device = "sim:custom:1024GiB";  // report the peak even beyond the card
    auto t0 = std::chrono::steady_clock::now();
    RunResult r = run_experiment(spec);
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    double peak = double(std::max(r.at("it0_peak_fwd_bwd"), r.at("it0_peak_step")) + r.base) / double(1ull << 30);
    char target[16] = "-";
    if (c.target_ms > 0) std::snprintf(target, sizeof target, "%.0f", c.target_ms);
    std::printf("%-42s %14lld %14.2f %10s %14.2f %14.2f\n", c.name, (long long)r.num_parameters, ms, target, peak,
                r.modeled_time_ms);
  }
  return 0;
}
