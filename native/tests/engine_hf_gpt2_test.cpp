// GPT2LMHeadModel (Conv1D projections, learned positions, LayerNorm, gelu_new, tied lm_head,
// dropout on in training) and the scaled rope types against PyTorch 2.11 + transformers 5.17
// + peft 0.21: the published GPT-2 run (test/refs/hf_reference.json [2], H200) and our H100
// measurements (test/refs/measured/h100_hf_gpt2_rope.json: GPT-2 fp32 / bf16 / autocast with
// and without dropout, LoRA on c_attn, checkpointing; Llama with each rope type), replayed on
// the simulated device of the card they were measured on.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>

#include "hf_spec_util.h"

using namespace vramlab::engine;

namespace {

const SpecValue& load(const std::string& rel) { return vramlab::spectest::repo_json(rel); }
const SpecValue& published() { return load("test/refs/hf_reference.json"); }
const SpecValue& measured() { return load("test/refs/measured/h100_hf_gpt2_rope.json"); }

// Every reading, the parameter count and the trainable count of one run, byte for byte.
void expect_exact(const SpecValue& run, const std::string& device) {
  SCOPED_TRACE(run["spec"].to_json().substr(0, 400));
  RunResult r = run_experiment(read_run_spec(vramlab::spectest::hf_spec(run["spec"], device)));
  for (auto& [key, val] : run["readings"].fields()) EXPECT_EQ(r.at(key), val.as_int(key)) << key;
  EXPECT_EQ(r.num_parameters, run["total"].as_int("total"));
  EXPECT_EQ(r.trainable_parameters, run["trainable"].as_int("trainable"));
}

}  // namespace

// [2]: GPT-2 (vocab 8192, 256 positions, 512 wide, 6 layers), fp32, batch 8 x 256, AdamW,
// its default dropout 0.1 on the embeddings, attention and residuals.
TEST(engine_hf_gpt2, PublishedGpt2TrainingIsExact) {
  expect_exact(published()["runs"].items().at(2), "sim:h200-141gb");
}

// fp32 with and without dropout (memory-efficient SDPA; dropout keeps a bool mask per
// dropped tensor, none inside SDPA), LoRA r8 on c_attn (fp32, and bf16 under cuDNN with
// its philox seed and offset on the device).
// fp32 weights under bf16 autocast too: each LayerNorm's float32 output (saved by nothing, the
// projection saves its bf16 cast) lives until the residual sum rebinds hidden_states.
TEST(engine_hf_gpt2, MeasuredGpt2IsExact) {
  for (size_t i : {0, 1, 4, 5, 6}) expect_exact(measured()["runs"].items().at(i), "sim:h100-80gb");
}

// HF gradient checkpointing with the default dropout (fp32; bf16 with LoRA on every Conv1D, the
// embeddings' output made to require grad) and without dropout (fp32): each block is recomputed when the backward of
// its last dropout unpacks the saved mask, before that node allocates its gradient, as the
// generated node unpacks first (PyTorch's trace: the recomputed ln_1 before
// native_dropout_backward); GPT2Model's frame frees inputs_embeds before position_embeds.
// Every reading, reserved_peak included (were 1 to 2 MiB high after backward, 52 MiB low).
TEST(engine_hf_gpt2, MeasuredGpt2CheckpointedIsExact) {
  for (size_t i : {7, 9, 17}) expect_exact(measured()["runs"].items().at(i), "sim:h100-80gb");
}

// bf16 weights under bf16 autocast: dropout 0.1, none, and attn_pdrop 0.125 (all cuDNN, whose
// dropout PyTorch's trace shows taking 0.1 too), every reading exact: the split of c_attn's
// output backs up as one cat of the three gradients, and the embedding dropout's output goes
// when the first block returns. gelu_new's pow in float32 under autocast.
TEST(engine_hf_gpt2, MeasuredGpt2Bf16IsExact) {
  for (size_t i : {2, 3, 8}) expect_exact(measured()["runs"].items().at(i), "sim:h100-80gb");
}

// Llama with each rope type: default, linear, dynamic, yarn, llama3, longrope within and
// beyond original_max_position_embeddings (the first rebinds inv_freq to original_inv_freq,
// one 512-byte block less from the first forward on). Every reading exact, reserved_peak
// included (the rotary backward's (B, H, T, D) gradients copied by the projections' view
// backward decide the small pool's last segment).
TEST(engine_hf_gpt2, MeasuredRopeTypesAreExact) {
  for (size_t i = 10; i <= 16; ++i) expect_exact(measured()["runs"].items().at(i), "sim:h100-80gb");
}

// Every run with its differences (bytes), exact or not.
TEST(engine_hf_gpt2, MeasuredRunsReport) {
  const auto& runs = measured()["runs"].items();
  for (size_t i = 0; i < runs.size(); ++i) {
    RunResult r = run_experiment(read_run_spec(vramlab::spectest::hf_spec(runs[i]["spec"], "sim:h100-80gb")));
    std::string d;
    for (auto& [key, val] : runs[i]["readings"].fields()) {
      const int64_t diff = r.at(key) - val.as_int(key);
      if (diff != 0) d += " " + key + ":" + std::to_string(diff);
    }
    std::printf("  %s h100_hf_gpt2_rope[%zu]%s\n", d.empty() ? "EXACT " : "differ", i, d.c_str());
  }
}
