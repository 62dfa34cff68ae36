// The hf paths the engine used to refuse, against PyTorch 2.11 + transformers 5.17 + peft 0.21
// on an H100 (test/refs/measured/h100_hf_paths.json, hf_protocol.py, each run tagged): eager
// attention (Llama, Qwen2, Gemma-2 with its soft-capping, GPT-2's own), LoRA dropout > 0,
// sequences beyond a sliding window, Gemma-3's rotary tables per layer type, GPT-2 generate()
// and float32 weights with grouped-query attention (PyTorch's math SDPA), replayed on the
// simulated H100.
#include <gtest/gtest.h>

#include "hf_tagged_runs.h"

using namespace vramlab::engine;
using vramlab::spectest::reading_diffs;
using vramlab::spectest::replay_h100;

namespace {

const SpecValue& measured() { return vramlab::spectest::repo_json("test/refs/measured/h100_hf_paths.json"); }
const SpecValue& run_tagged(const std::string& tag) { return vramlab::spectest::tagged_run(measured(), tag); }
void expect_exact(const std::string& tag) { vramlab::spectest::expect_tagged_exact(measured(), tag); }

}  // namespace

// Every measured run with its differences (bytes), exact or not, or the engine's refusal.
TEST(engine_hf_paths, MeasuredRunsReport) { vramlab::spectest::report_tagged(measured()); }

// Eager attention: the (B, 1, T, T) masks in the inputs' dtype (two for Gemma-2, the sliding one
// past its window too), repeat_kv's copies, the scores, the float32 softmax held for backward
// and its cast, the weights kept until the attention returns; GPT-2's own softmax in the
// scores' dtype with its dropout (in fp32 the trace shows softmax's CUDA backward with its
// grad * output temporary, and key and value viewed before the query); Llama generate() with a mask per step
// (generate()'s padding mask as bool, and-ed with the causal one). Every reading exact, reserved included.
TEST(engine_hf_paths, EagerAttentionIsExact) {
  for (const char* tag :
       {"eager_llama_fp32", "eager_llama_fp32w_bf16amp", "eager_llama_lora_qv", "eager_llama_ckpt",
        "eager_llama_mha_b2_512", "eager_gemma2_bf16", "eager_window_gemma2", "eager_llama_bf16", "eager_qwen2_bf16",
        "eager_gpt2_bf16_nodrop", "eager_gpt2_bf16", "eager_gpt2_fp32", "eager_llama_generate"})
    expect_exact(tag);
}

// LoRA dropout (peft's nn.Dropout before lora_A): its mask and output per adapted layer, with
// and without checkpointing, on Llama (q/v and all seven projections; fp32 weights too, where
// grouped-query attention runs the math SDPA) and GPT-2 (Conv1D).
TEST(engine_hf_paths, LoraDropoutIsExact) {
  for (const char* tag : {"loradrop_llama_qv_005", "loradrop_llama_all_01", "loradrop_llama_qv_01_ckpt",
                          "loradrop_llama_fp32_01", "loradrop_gpt2_fp32_005", "loradrop_gpt2_bf16_01"})
    expect_exact(tag);
}

// generate() with the dynamic cache: GPT-2 in bf16, Gemma-3 1B-shaped (its five sliding layers'
// window scalars), Mistral reaching its window while decoding: params, input, peak, after, reserved.
TEST(engine_hf_paths, GenerationIsExact) {
  for (const char* tag : {"gpt2_generate_bf16", "gemma3_1bshape_generate", "window_mistral_generate"})
    expect_exact(tag);
}

// Gemma-3 1B-shaped (head dim 256: cuDNN attention on Hopper; one full layer in six, so a
// rotary table per layer type): bf16, fp32 weights under autocast, LoRA + checkpointing.
TEST(engine_hf_paths, Gemma3PerLayerTypeRotaryIsExact) {
  for (const char* tag : {"gemma3_1bshape_6l", "gemma3_1bshape_12l_fp32w", "gemma3_1bshape_lora_ckpt"})
    expect_exact(tag);
}

// Training past a sliding window under sdpa: the boolean sliding mask materialised once the
// window masks something, k and v repeated by HF (no enable_gqa with a mask), and the mask
// converted to an additive one the attention node keeps: cuDNN's for bf16 (Mistral, Gemma-2,
// Gemma-3, Qwen2 with sliding layers), memory-efficient attention's for float32 (Mistral).
// With checkpointing (PyTorch's trace): the recomputed bias goes with the attention backward's
// other unpacked tensors, the attention's q/k/v locals go in slot order at its return, and
// RMSNorm's rsqrt temporary before the rebinding frees its float32 copy.
TEST(engine_hf_paths, SlidingWindowTrainingIsExact) {
  for (const char* tag :
       {"window_mistral_256_w128", "window_gemma2_256_w128", "window_gemma3_256_w128", "window_qwen2_256_w128",
        "window_mistral_fp32", "window_mistral_512_w128_b2", "window_mistral_ckpt"})
    expect_exact(tag);
}

// Float32 weights with grouped-query attention run PyTorch's math SDPA (memory-efficient
// attention takes no enable_gqa), as PyTorch's allocator trace shows it: the scaled query keeps
// the rotary output's (B, T, H, D) layout, so matmul copies it (a temporary, or the block the
// scores' backward saves when the keys need a gradient); the causal mask's where() puts both
// scalars on the device; _safe_softmax zeroes masked rows in the softmax's own output.
// Llama (batch 2 x 512, and LoRA + checkpointing), tied Qwen2, Llama generate(): every reading.
TEST(engine_hf_paths, Float32GroupedQueryAttentionIsExact) {
  for (const char* tag : {"fp32gqa_llama_ckpt_lora", "fp32gqa_llama_b2_512", "fp32gqa_qwen2", "fp32gqa_llama_generate"})
    expect_exact(tag);
}

// Within bounds, not exact (the report prints each difference): GPT-2 generate in fp32 (reserved
// one 2 MiB segment low) and with fp32 weights under autocast (the protocol's random prompt holds
// the pad token 0, so transformers builds a padding mask the simulation cannot know).
TEST(engine_hf_paths, NearRunsAreWithinTwoMiB) {
  for (const char* tag : {"gpt2_generate_fp32", "gpt2_generate_fp32w_bf16amp"}) {
    const SpecValue& run = run_tagged(tag);
    SCOPED_TRACE(tag);
    RunResult r = replay_h100(run);
    for (auto& [key, val] : run["readings"].fields())
      EXPECT_LE(std::llabs(r.at(key) - val.as_int(key)), 2 << 20) << key;
  }
}
