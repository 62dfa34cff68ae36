// Rotary embeddings of every rope type transformers 5.17 builds (modeling_rope_utils.py):
// each type's init leaves the same two float32 buffers (inv_freq and its clone), its
// temporaries freed at build; "dynamic" and "longrope" run dynamic_rope_update each
// forward. Held on a small Llama against the same model with the default rope.
#include <gtest/gtest.h>

#include "hf_spec_util.h"

using namespace vramlab::engine;
using vramlab::spectest::num;

namespace {

SpecValue str(const char* s) { return SpecValue::string(s); }

// A small Llama (head_dim 64: inv_freq is 32 floats, one 512-byte block) with `rope`.
RunResult run_with(const SpecValue& rope, int64_t seq = 128) {
  auto cfg = SpecValue::object({{"vocab_size", num(1000)},
                                {"hidden_size", num(256)},
                                {"intermediate_size", num(512)},
                                {"num_hidden_layers", num(2)},
                                {"num_attention_heads", num(4)},
                                {"num_key_value_heads", num(2)},
                                {"max_position_embeddings", num(512)},
                                {"rope_parameters", rope}});
  auto p = SpecValue::object({{"hf", SpecValue::object({{"arch", str("LlamaForCausalLM")}, {"config", cfg}})},
                              {"batch", num(2)},
                              {"seq", num(double(seq))},
                              {"weights", str("bf16")},
                              {"precision", str("bf16")},
                              {"optimizer", str("adamw")}});
  return run_experiment(read_run_spec(vramlab::spectest::hf_spec(p, "sim:h100-80gb")));
}

SpecValue rope(std::map<std::string, SpecValue> f) {
  f.emplace("rope_theta", num(10000));
  return SpecValue::object(f);
}

SpecValue factors(double v) { return SpecValue::array(std::vector<SpecValue>(32, num(v))); }

const char* kReadings[] = {"params",
                           "input",
                           "after_forward",
                           "it0_peak_fwd_bwd",
                           "it0_after_backward",
                           "it0_peak_step",
                           "it0_after_zero_grad",
                           "it1_peak_fwd_bwd",
                           "it1_after_backward",
                           "it1_peak_step",
                           "it1_after_zero_grad",
                           "reserved_peak"};

}  // namespace

// linear, yarn and llama3 only change inv_freq's values (and a cos/sin scaling): every
// reading equals the default rope's; dynamic adds device scalars to each forward
// (torch.max(position_ids) + 1 and two comparisons), freed before the layers run.
TEST(engine_hf_rope, ScalingTypesAllocateAsTheDefault) {
  const RunResult base = run_with(rope({{"rope_type", str("default")}}));
  const std::vector<std::pair<const char*, SpecValue>> types = {
      {"linear", rope({{"rope_type", str("linear")}, {"factor", num(8)}})},
      {"dynamic", rope({{"rope_type", str("dynamic")}, {"factor", num(2)}})},
      {"yarn", rope({{"rope_type", str("yarn")}, {"factor", num(4)}, {"original_max_position_embeddings", num(128)}})},
      {"llama3", rope({{"rope_type", str("llama3")},
                       {"factor", num(32)},
                       {"low_freq_factor", num(1)},
                       {"high_freq_factor", num(4)},
                       {"original_max_position_embeddings", num(256)}})},
  };
  for (auto& [name, rp] : types) {
    SCOPED_TRACE(name);
    const RunResult r = run_with(rp);
    EXPECT_EQ(r.num_parameters, base.num_parameters);
    for (const char* k : kReadings) EXPECT_EQ(r.at(k), base.at(k)) << k;
  }
}

// longrope within original_max_position_embeddings: the first forward rebinds inv_freq to
// original_inv_freq, so the initial inv_freq (one 512-byte block) is gone from then on.
// Beyond it, each forward computes the long frequencies and they replace inv_freq: two
// buffers again, as with the default rope.
TEST(engine_hf_rope, LongropeRebindsInvFreqByLength) {
  const RunResult base = run_with(rope({{"rope_type", str("default")}}), 256);
  auto lr = [](int64_t original) {
    return rope({{"rope_type", str("longrope")},
                 {"long_factor", factors(4)},
                 {"short_factor", factors(1)},
                 {"original_max_position_embeddings", num(double(original))}});
  };
  const RunResult shorter = run_with(lr(512), 256);
  EXPECT_EQ(shorter.at("params"), base.at("params"));
  EXPECT_EQ(shorter.at("input"), base.at("input"));
  for (const char* k : {"after_forward", "it0_after_backward", "it0_after_zero_grad", "it1_after_zero_grad"})
    EXPECT_EQ(shorter.at(k), base.at(k) - 512) << k;
  const RunResult longer = run_with(lr(128), 256);
  for (const char* k : {"params", "after_forward", "it0_after_backward", "it0_after_zero_grad", "it1_after_zero_grad"})
    EXPECT_EQ(longer.at(k), base.at(k)) << k;
}

TEST(engine_hf_rope, UnknownTypesAndMissingKeysAreRefusedByName) {
  try {
    run_with(rope({{"rope_type", str("ntk-by-parts")}}));
    FAIL() << "built";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("\"ntk-by-parts\""), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("llama3"), std::string::npos) << e.what();
  }
  // llama3 indexes rope_parameters["low_freq_factor"] (a KeyError in transformers)
  EXPECT_THROW(run_with(rope({{"rope_type", str("llama3")}, {"factor", num(8)}})), std::invalid_argument);
  // longrope's factors multiply the head_dim / 2 frequencies
  EXPECT_THROW(
      run_with(rope(
          {{"rope_type", str("longrope")}, {"long_factor", SpecValue::array({num(1)})}, {"short_factor", factors(1)}})),
      std::invalid_argument);
}
