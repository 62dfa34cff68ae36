// Training-step time of the transformer families on a device, for the same-run table
// beside PyTorch eager (bench/torch/train_step.py --transformers; joined by
// bench/torch/step_table.py). The step is the protocol's: bf16 autocast forward,
// cross-entropy over the vocabulary, backward, AdamW step, zero_grad(set_to_none).
// Timed as whole runs of the engine's experiment (what a user's run does), 3 + N steps
// minus 3 steps, so model construction and warm-up cancel: ms per step.
//
//   vramlab_bench_transformer_step [--device cuda:0|sim:...] [--steps 10] [--only ROW]  -> JSON {row: ms}
// (default: cuda:0 when there is a GPU, else the simulated device's modelled time)
// Also built as a shared library (libvramlab_step.so, entry vramlab_bench_transformer_step)
// so bench/torch/profile_step.py can run it under PyTorch's profiler, which sees every
// kernel of the process: where our step's time goes, kernel by kernel.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "device/device.h"
#include "spec_util.h"
#ifdef VRAMLAB_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

using namespace vramlab::engine;

namespace {

struct Row {
  const char* name;
  const char* spec;
};
// GPT-2 small as in the issue; a Llama-shaped model (GQA, SwiGLU, rotary) of ~0.4B; a
// Llama-3-style one (Llama 3.2 1B's shape: 128k vocabulary, 32 query / 8 key heads) on one
// 4096-token sequence.
const Row kRows[] = {
    {"gpt2_small_b8_s1024/bf16",
     R"({"model":{"kind":"gpt","vocab":50257,"seq":1024,"dim":768,"depth":12,"heads":12},"batch":8,"optimizer":"adamw","precision":"bf16"})"},
    {"llama_d1024_l8_b4_s1024/bf16",
     R"({"model":{"kind":"llama","vocab":32000,"seq":1024,"dim":1024,"depth":8,"heads":16,"kv_heads":4,"ffn":2816},"batch":4,"optimizer":"adamw","precision":"bf16"})"},
    {"llama3_d2048_l16_b1_s4096/bf16",
     R"({"model":{"kind":"llama","vocab":128256,"seq":4096,"dim":2048,"depth":16,"heads":32,"kv_heads":8,"ffn":8192},"batch":1,"optimizer":"adamw","precision":"bf16"})"},
};

// Wall time on a GPU; on a simulated device its modelled time (the sim computes nothing).
double run_ms(RunSpec spec, int64_t iterations) {
  spec.iterations = iterations;
  auto t0 = std::chrono::steady_clock::now();
  RunResult r = run_experiment(spec);
  if (spec.device.rfind("sim:", 0) == 0) return r.modeled_time_ms;
#ifdef VRAMLAB_HAVE_CUDA
  cudaDeviceSynchronize();
#endif
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int bench_main(int argc, char** argv) {
  std::string device = vramlab::default_device_id(), only;
  int64_t steps = 10;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--device"))
      device = argv[i + 1];
    else if (!std::strcmp(argv[i], "--steps"))
      steps = std::atoll(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--only"))
      only = argv[i + 1];
  }
  std::printf("{");
  bool first = true;
  for (const Row& r : kRows) {
    if (!only.empty() && only != r.name) continue;
    RunSpec spec = vramlab::spectest::spec(r.spec);
    spec.device = device;
    try {
      run_ms(spec, 1);  // loads kernels and cuBLAS heuristics once
      double a = run_ms(spec, 3), b = run_ms(spec, 3 + steps);
      std::printf("%s\n \"%s\": %.3f", first ? "" : ",", r.name, (b - a) / double(steps));
    } catch (const std::exception& e) {
      std::fprintf(stderr, "%s: %s\n", r.name, e.what());
      std::printf("%s\n \"%s\": null", first ? "" : ",", r.name);
    }
    first = false;
  }
  std::printf("\n}\n");
  std::fflush(stdout);
  return 0;
}

#ifdef VRAMLAB_BENCH_AS_LIBRARY
extern "C" int vramlab_bench_transformer_step(int argc, char** argv) { return bench_main(argc, argv); }
#else
int main(int argc, char** argv) { return bench_main(argc, argv); }
#endif
