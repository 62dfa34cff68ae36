// Hugging Face generate() (transformers 5.17, default dynamic cache) against PyTorch 2.11 on an
// H100 (test/refs/measured/h100_hf_generate.json: hf_protocol.py's generate with the allocator
// history on, one process per spec, each run tagged): the bookkeeping of generate() and
// _sample (the float32 next-token logits held into the next step, the grown ids, mask and
// position_ids, the inputs' clones, the stopping flags), sliding-window cache layers past their
// window with the masks each step materialises, and the architectures' masks, replayed on the
// simulated H100.
#include <gtest/gtest.h>

#include "hf_tagged_runs.h"

using namespace vramlab::engine;
using vramlab::spectest::reading_diffs;
using vramlab::spectest::replay_h100;

namespace {

const SpecValue& measured() { return vramlab::spectest::repo_json("test/refs/measured/h100_hf_generate.json"); }
const SpecValue& run_tagged(const std::string& tag) { return vramlab::spectest::tagged_run(measured(), tag); }
void expect_exact(const std::string& tag) { vramlab::spectest::expect_tagged_exact(measured(), tag); }

}  // namespace

// Every measured run with its differences (bytes), exact or not, or the engine's refusal.
TEST(engine_hf_generate, MeasuredRunsReport) { vramlab::spectest::report_tagged(measured()); }

// generate()'s own tensors, step by step, under the dynamic cache: the next-token logits in
// float32 that outlive the step into the next forward (they were Mixtral's missing 264,192 B),
// the ids, mask and position_ids grown by cat, the clones prepare_inputs_for_generation makes,
// the mask functions' bool copies, the stopping flags; bos_token_id only where the config sets
// one (Qwen2/3, OLMo2 and Qwen3-MoE have none), has_right_padding only for batches. Every
// reading exact, reserved included.
TEST(engine_hf_generate, BookkeepingIsExactAcrossArchitectures) {
  for (const char* tag : {"llama_gen_more13", "mixtral_gen_moe8", "qwen3moe_gen", "qwen2_gen", "qwen3_gen", "phi3_gen",
                          "olmo2_gen", "llama_gen_fp16", "llama_gen_b1_n64", "llama_gen_lora_qv", "gpt2_generate_bf16",
                          "gpt2_gen_fp16", "gemma3_1bshape_generate"})
    expect_exact(tag);
}

// DynamicSlidingWindowLayer: its window as a device scalar per sliding layer, the full keys and
// values of each update returned and a view of their last window - 1 positions kept (which keeps
// the whole cat alive); once the window masks something, the sliding mask materialised each
// forward (the padding mask's window columns picked, sdpa_mask's ranges and and_masks) and the
// attention taking it with HF's repeated k/v (cuDNN's bf16 bias). Mistral reaching its window
// while decoding, past it from the prompt and 64 + 100 tokens; Gemma-2/3 (full layers beside);
// Gemma-3 1B-shaped at 600 past its 512 window; Qwen2 with sliding layers; Mistral in float32
// (memory-efficient attention under no_grad: the additive mask at any length, no padding).
TEST(engine_hf_generate, SlidingWindowGenerationIsExact) {
  for (const char* tag : {"window_mistral_generate", "window_mistral_gen_p200", "window_mistral_gen_p64_n100",
                          "window_gemma2_gen_p120", "window_gemma2_gen_p200", "window_gemma3_gen_p200",
                          "window_gemma3_1b_gen_p600", "window_qwen2_gen_p200", "window_mistral_gen_fp32_p200"})
    expect_exact(tag);
}

// Within bounds, not exact (the report prints each difference): GPT-2 fp32 and eager Qwen2 read
// their reserved peak one 2 MiB small-pool segment low (the allocation sequence equals PyTorch's
// from process start; the small pool places a block elsewhere), float32 GQA Llama's prefill peak
// is 451 KiB high (math SDPA's inference temporaries).
TEST(engine_hf_generate, NearRunsAreWithinTwoMiB) {
  for (const char* tag : {"gpt2_generate_fp32", "eager_qwen2_gen", "fp32gqa_llama_generate"}) {
    const SpecValue& run = run_tagged(tag);
    SCOPED_TRACE(tag);
    RunResult r = replay_h100(run);
    for (auto& [key, val] : run["readings"].fields())
      EXPECT_LE(std::llabs(r.at(key) - val.as_int(key)), 2 << 20) << key;
  }
}
