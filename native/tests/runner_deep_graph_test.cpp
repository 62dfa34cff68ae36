// The deepest specs the work limits allow (main/contract/limits.ts: iterations x accum x
// depth <= 65536, depth <= 4096) run to the end on a run thread with macOS's default
// stack for secondary threads (512 KiB), on every family, mode and fine-tune method:
// nothing in a run (graph release above all) may use stack in proportion to the model.
// (Before graphs were freed iteratively, depth 200 already overflowed this stack.)
#include <gtest/gtest.h>

#include <string>

#include "runner/job_spec.h"
#include "runner/worker.h"
#include "spec_util.h"

using namespace vramlab::runner;

namespace {

constexpr size_t kMacSecondaryThreadStack = 512 << 10;

// Sanitizer builds run ~10x slower with larger frames: an eighth of the depth there still
// far exceeds what a recursive release survives on this stack.
#if defined(__SANITIZE_ADDRESS__)
#define VRAMLAB_DEEP_SCALE 8
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define VRAMLAB_DEEP_SCALE 8
#endif
#endif
#ifndef VRAMLAB_DEEP_SCALE
#define VRAMLAB_DEEP_SCALE 1
#endif
const std::string kDepth = std::to_string(4096 / VRAMLAB_DEEP_SCALE);

// Tiny widths and no optimizer state so each run takes a few seconds: the graph's depth
// is what matters. seq 18 leaves room for generate's 2 + 16 positions.
std::string llama() {
  return R"("model":{"kind":"llama","depth":)" + kDepth +
         R"(,"dim":8,"heads":1,"kv_heads":1,"ffn":8,"vocab":8,"seq":18},"batch":1)";
}
std::string gpt() {
  return R"("model":{"kind":"gpt","depth":)" + kDepth + R"(,"dim":8,"heads":1,"vocab":8,"seq":18},"batch":1)";
}
std::string mlp() { return R"("model":{"kind":"mlp","depth":)" + kDepth + R"(,"in":8,"hidden":8,"out":8},"batch":2)"; }
std::string residual() { return R"("model":{"kind":"residual","depth":)" + kDepth + R"(,"dim":8},"batch":2)"; }

Outcome run_small_stack(const std::string& fields) {
  JobRequest r;
  r.kind = "experiment";
  r.spec = vramlab::spectest::spec("{" + fields + R"(,"device":"sim:h200-141gb"})");
  RunWorker w(
      make_job(r), [] {}, {}, size_t(1) << 11, kMacSecondaryThreadStack);
  w.start();
  while (!w.wait_for(20)) w.drain();
  w.join();
  return *w.outcome();
}

void expect_done(const std::string& fields) {
  SCOPED_TRACE(fields);
  Outcome o = run_small_stack(fields);
  EXPECT_EQ(o.status, RunStatus::Done) << o.error;
  EXPECT_FALSE(o.result.readings.empty());
}

}  // namespace

TEST(runner_deep_graph, LlamaTrainBf16Lora) {
  expect_done(
      llama() +
      R"(,"iterations":1,"optimizer":"sgd","precision":"bf16","finetune":{"method":"lora","rank":2,"targets":["q","v","down"]})");
}

TEST(runner_deep_graph, LlamaFreezeWithBlockCheckpointing) {
  expect_done(llama() +
              R"(,"iterations":1,"optimizer":"none","checkpoint":"block","finetune":{"method":"freeze","blocks":)" +
              std::to_string(4096 / VRAMLAB_DEEP_SCALE / 2) + "}");
}

TEST(runner_deep_graph, LlamaInference) { expect_done(llama() + R"(,"mode":"inference")"); }

TEST(runner_deep_graph, GptTrainFp16CheckpointingEveryTwoBlocks) {
  expect_done(gpt() + R"(,"iterations":1,"optimizer":"none","precision":"fp16","checkpoint":{"every":2})");
}

TEST(runner_deep_graph, GptGenerate) {
  // new_tokens x depth = 16 x 4096: the generate limit exactly.
  expect_done(gpt() + R"(,"mode":"generate","prompt":2,"new_tokens":16)");
}

TEST(runner_deep_graph, MlpTrain) { expect_done(mlp() + R"(,"iterations":1,"optimizer":"sgd")"); }

TEST(runner_deep_graph, ResidualTrainSqrtCheckpointing) {
  expect_done(residual() + R"(,"iterations":1,"optimizer":"none","checkpoint":"sqrt")");
}

TEST(runner_deep_graph, LossAccumulationKeepsOneGraphOverEveryPass) {
  // total = total + loss over 16 forward passes: one graph 16 x depth deep.
  expect_done(residual() + R"(,"iterations":16,"mode":"loss_accumulation","keep_loss_graph":true)");
}
