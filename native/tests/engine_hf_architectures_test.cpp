// Every architecture of the hf family builds from its (completed) config.json with the
// parameter count HF's modeling code gives it (the formulas below are read off each
// modeling file's __init__), and the dense ones train a step on the simulated device.
#include <gtest/gtest.h>

#include "engine/experiment/session.h"
#include "engine/models/family.h"
#include "engine/models/hf/arch.h"
#include "hf_spec_util.h"

using namespace vramlab::engine;
using vramlab::spectest::hf_config;
using vramlab::spectest::num;

namespace {

SpecValue small(std::map<std::string, SpecValue> extra = {}) {
  std::map<std::string, SpecValue> f{{"vocab_size", num(1000)},
                                     {"hidden_size", num(256)},
                                     {"intermediate_size", num(512)},
                                     {"num_hidden_layers", num(2)},
                                     {"num_attention_heads", num(4)},
                                     {"num_key_value_heads", num(2)},
                                     {"max_position_embeddings", num(512)}};
  for (auto& [k, v] : extra) f[k] = v;
  return SpecValue::object(f);
}

KindArgs model_args(const std::string& arch, const SpecValue& cfg) {
  KindArgs k;
  k.kind = "hf";
  k.path = "spec.model";
  k.args = SpecValue::object({{"kind", SpecValue::string("hf")},
                              {"config", hf_config(arch, cfg)},
                              {"seq", num(64)},
                              {"attn_implementation", SpecValue::string("sdpa")}});
  return k;
}

int64_t count(const std::string& arch, const SpecValue& cfg) {
  Session s = open_session("sim:h100-80gb", "sim", "");
  ContextGuard g(*s.ctx);
  return build_model(model_args(arch, cfg), DType::BFloat16)->num_parameters();
}

// V, C, I, L, H, KV, D of small(): 1000, 256, 512, 2, 4, 2, 64
constexpr int64_t V = 1000, C = 256, I = 512, L = 2, H = 4, KV = 2, D = 64;
constexpr int64_t attn = C * H * D + 2 * C * KV * D + H * D * C;  // q, k, v, o
constexpr int64_t mlp = 3 * C * I;                                // gate, up, down

}  // namespace

TEST(engine_hf_architectures, ParameterCountsFollowTheModelingCode) {
  EXPECT_EQ(count("LlamaForCausalLM", small()), V * C + L * (attn + mlp + 2 * C) + C + V * C);
  EXPECT_EQ(count("MistralForCausalLM", small()), V * C + L * (attn + mlp + 2 * C) + C + V * C);
  // q/k/v biases; tied embeddings
  EXPECT_EQ(count("Qwen2ForCausalLM", small({{"tie_word_embeddings", SpecValue::boolean(true)}})),
            V * C + L * (attn + (H + 2 * KV) * D + mlp + 2 * C) + C);
  // q_norm, k_norm over head_dim
  EXPECT_EQ(count("Qwen3ForCausalLM", small({{"head_dim", num(D)}})),
            V * C + L * (attn + 2 * D + mlp + 2 * C) + C + V * C);
  // post-norms only, q/k norms over the projections
  EXPECT_EQ(count("Olmo2ForCausalLM", small()), V * C + L * (attn + H * D + KV * D + mlp + 2 * C) + C + V * C);
  // fused qkv_proj and gate_up_proj: the same sizes
  EXPECT_EQ(count("Phi3ForCausalLM", small()), V * C + L * (attn + mlp + 2 * C) + C + V * C);
  // four norms per layer, tied by default
  EXPECT_EQ(count("Gemma2ForCausalLM", small({{"head_dim", num(D)}})), V * C + L * (attn + mlp + 4 * C) + C);
  EXPECT_EQ(count("Gemma3ForCausalLM", small({{"head_dim", num(D)}})), V * C + L * (attn + 2 * D + mlp + 4 * C) + C);
  // router (E, C) and the experts' 3-D gate_up (E, 2I, C) and down (E, C, I)
  const int64_t E = 4;
  EXPECT_EQ(count("MixtralForCausalLM", small({{"num_local_experts", num(E)}})),
            V * C + L * (attn + E * C + E * 3 * C * I + 2 * C) + C + V * C);
  EXPECT_EQ(count("Qwen3MoeForCausalLM",
                  small({{"num_experts", num(E)}, {"moe_intermediate_size", num(128)}, {"head_dim", num(D)}})),
            V * C + L * (attn + 2 * D + E * C + E * 3 * C * 128 + 2 * C) + C + V * C);
}

// HF's own counts (sum(p.numel()) in hf_protocol.py) for the published Mixtral and the
// measured Gemma2 and Qwen3-MoE, whose forwards the engine does not run yet.
TEST(engine_hf_architectures, ParameterCountsMatchTransformers) {
  auto check = [](const char* file, size_t i) {
    const SpecValue f = load_json_file(std::string(VRAMLAB_SOURCE_DIR) + "/" + file);
    const SpecValue& run = f["runs"].items().at(i);
    const SpecValue& h = run["spec"]["hf"];
    EXPECT_EQ(count(h["arch"].as_string("arch"), h["config"]), run["total"].as_int("total")) << h.to_json();
  };
  check("test/refs/hf_reference.json", 4);           // Mixtral
  check("test/refs/measured/h100_hf_more.json", 5);  // Gemma2
  check("test/refs/measured/h100_hf_more.json", 6);  // Qwen3-MoE
  check("test/refs/measured/h100_hf_more.json", 3);  // OLMo2
}

TEST(engine_hf_architectures, UnsupportedArchitecturesAreRefusedByName) {
  Session s = open_session("sim:h100-80gb", "sim", "");
  ContextGuard g(*s.ctx);
  try {
    KindArgs k = model_args("LlamaForCausalLM", small());
    auto cfg = k.args["config"].fields();
    cfg["architectures"] = SpecValue::array({SpecValue::string("FalconForCausalLM")});
    auto m = k.args.fields();
    m["config"] = SpecValue::object(cfg);
    k.args = SpecValue::object(m);
    build_model(k, DType::BFloat16);
    FAIL() << "FalconForCausalLM built";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("FalconForCausalLM"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("LlamaForCausalLM"), std::string::npos);
  }
}

// The router's training noise and auxiliary loss, which are not modelled, are refused by
// name (routing itself runs on every backend: engine_hf_data_test).
TEST(engine_hf_architectures, MixtureOfExpertsRefusesWhatItDoesNotModel) {
  Session s = open_session("sim:h100-80gb", "sim", "");
  ContextGuard g(*s.ctx);
  auto refused = [&](const std::string& arch, const char* field, SpecValue v) {
    try {
      build_model(model_args(arch, small({{field, v}})), DType::BFloat16);
      ADD_FAILURE() << arch << " built with " << field;
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(field), std::string::npos) << e.what();
    }
  };
  refused("MixtralForCausalLM", "router_jitter_noise", num(0.01));
  refused("MixtralForCausalLM", "output_router_logits", SpecValue::boolean(true));
  refused("Qwen3MoeForCausalLM", "output_router_logits", SpecValue::boolean(true));
}
