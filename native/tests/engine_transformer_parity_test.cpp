// Parity with PyTorch on transformers, on the simulated H100:
// - the published configurations (test/refs/transformer_reference.json, H100, PyTorch
//   2.11): training exact byte for byte; fine-tuning, generation and variable shapes
//   within max(1%, 2 MiB) and printed EXACT / within;
// - our own H100 measurements (test/refs/measured/h100_transformers_*.json, taken with
//   bench/torch/measure_transformers.sh): within the same tolerance, counts printed.
// What is not exact and why is in docs/parity.md.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "spec_util.h"

using namespace vramlab::engine;

namespace {

const SpecValue& load(const std::string& rel) { return vramlab::spectest::repo_json(rel); }
const SpecValue& published() { return load("test/refs/transformer_reference.json"); }

double tolerance(int64_t torch) { return std::max(0.01 * std::fabs(double(torch)), 2.0 * 1048576.0); }

struct Counts {
  int exact = 0, within = 0, off = 0;
};

// Runs each configuration; `exact` demands every reading byte for byte.
Counts check(const std::vector<SpecValue>& runs, const std::string& label, bool exact) {
  Counts c;
  for (size_t i = 0; i < runs.size(); ++i) {
    const SpecValue& run = runs[i];
    if (!run.find("readings") || run.find("error") ||
        (run.find("oom") && run["oom"].kind() == SpecValue::Kind::Bool && run["oom"].as_bool("oom")))
      continue;
    SCOPED_TRACE(label + "[" + std::to_string(i) + "] " + run["spec"].to_json());
    RunResult r = run_experiment(vramlab::spectest::spec(run["spec"]));
    std::ostringstream diffs;
    bool run_exact = true, run_off = false;
    for (auto& [key, val] : run["readings"].fields()) {
      const int64_t torch = val.as_int(key), ours = r.at(key);
      if (ours == torch) continue;
      run_exact = false;
      const bool bad = std::fabs(double(ours - torch)) > tolerance(torch);
      run_off = run_off || bad;
      char buf[96];
      std::snprintf(buf, sizeof buf, " %s:%+.3fMiB%s", key.c_str(), double(ours - torch) / 1048576.0, bad ? "!" : "");
      diffs << buf;
      if (exact)
        EXPECT_EQ(ours, torch) << key;
      else
        EXPECT_LE(std::fabs(double(ours - torch)), tolerance(torch))
            << key << ": ours " << ours << " vs torch " << torch;
    }
    if (const SpecValue* b = run.find("sdpa_backend")) {
      // the reference's "flash" is its probe's name for the fused fp16/bf16 kernel; on an
      // H100 PyTorch 2.11 runs cuDNN attention there
      const std::string want = b->as_string("sdpa_backend");
      EXPECT_EQ(r.sdpa_backend == "cudnn" ? std::string("flash") : r.sdpa_backend, want);
    }
    (run_off ? c.off : run_exact ? c.exact : c.within)++;
    std::printf("  %s %s[%zu] %s%s\n",
                run_off     ? "OFF   "
                : run_exact ? "EXACT "
                            : "within",
                label.c_str(), i, run["spec"].to_json().substr(0, 150).c_str(), diffs.str().c_str());
  }
  std::printf("  %s: %d exact, %d within, %d off\n", label.c_str(), c.exact, c.within, c.off);
  return c;
}

}  // namespace

TEST(engine_transformer_parity, PublishedTrainingIsExact) {
  Counts c = check(published()["transformers"].items(), "transformers", true);
  EXPECT_EQ(c.exact, 5);
}

TEST(engine_transformer_parity, PublishedFinetuneAndGenerate) {
  Counts c = check(published()["finetune_and_generate"].items(), "finetune_and_generate", false);
  EXPECT_EQ(c.off, 0);
  // the bf16-weights Llama (run 1) too since the driver's takes are in the address layout
  // (its it1_peak_step was 128 KiB low on a tie the segments' order breaks)
  EXPECT_EQ(c.exact, 4);
}

// The fp16 gpt with sqrt(n) checkpointing (test/refs/measured/h100_driver_takes.json,
// "gpt_fp16_sqrt": the readings of PyTorch's traced run on an H100): exact once the first
// fp16 cuDNN attention (10 MiB on the main thread, 8 on the recomputing autograd thread) and
// the first fp16 non-Lt gemm (2 MiB) take their address space where PyTorch's process did;
// it was 2.5 / 3 MiB low after the second backward.
TEST(engine_transformer_parity, Fp16SqrtCheckpointedGptIsExactWithTheDriversTakes) {
  const SpecValue& run = load("test/refs/measured/h100_driver_takes.json")["gpt_fp16_sqrt"];
  RunResult r = run_experiment(vramlab::spectest::spec(run["spec"]));
  for (auto& [key, val] : run["readings"].fields()) EXPECT_EQ(r.at(key), val.as_int(key)) << key;
}

TEST(engine_transformer_parity, PublishedVariableShapes) {
  Counts c = check(published()["variable_shapes"].items(), "variable_shapes", false);
  EXPECT_EQ(c.off, 0);
}

TEST(engine_transformer_parity, MeasuredTrainingWithinTolerance) {
  Counts c = check(load("test/refs/measured/h100_transformers_train.json")["runs"].items(), "h100_train", false);
  EXPECT_EQ(c.off, 0);
}

TEST(engine_transformer_parity, MeasuredFinetuneWithinTolerance) {
  Counts c = check(load("test/refs/measured/h100_transformers_finetune.json")["runs"].items(), "h100_finetune", false);
  EXPECT_EQ(c.off, 0);
}

// The usual fixes for varying lengths (main/runner/fixes.ts; specs from
// scripts/length-fix-specs.mjs) under PyTorch on an H200: a GPT-2 small and a small GPT
// trained on drawn lengths as is, padded to buckets, longest first, packed and with
// expandable segments. Reserved memory's creep and every segment allocation, byte for byte.
TEST(engine_transformer_parity, MeasuredLengthFixesAreExact) {
  Counts c = check(load("test/refs/measured/h200_length_fixes.json")["runs"].items(), "h200_length_fixes", true);
  EXPECT_EQ(c.exact, 10);
}

// More of the same, measured widely: a Llama on a length histogram, an fp32 GPT (the
// memory-efficient attention backend) with every block checkpointed, a GPT already padded
// to 64 tokens with SGD, each under every fix; and the empty_cache() cadence for all five
// specs (bench/torch/protocol_fixes.py adds it to the reference protocol). Every run
// without empty_cache() is exact; three of the five cadence runs are within tolerance
// (addresses the driver reuses after cudaFree: docs/parity.md).
TEST(engine_transformer_parity, MeasuredLengthFixesWidely) {
  Counts c =
      check(load("test/refs/measured/h200_length_fixes_more.json")["runs"].items(), "h200_length_fixes_more", false);
  EXPECT_EQ(c.off, 0);
  EXPECT_GE(c.exact, 17);
}
