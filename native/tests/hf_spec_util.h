#pragma once
// Hugging Face specs for tests: a config.json completed with transformers 5.17's
// defaults (test/fixtures/hf_config_defaults.json, derived fields as each Config's
// __post_init__ derives them), as the contract completes it, and the measuring
// protocol's own spec format (hf_protocol.py) turned into ours.
#include <string>

#include "spec_util.h"

namespace vramlab::spectest {

inline const SpecValue& hf_defaults() {
  static SpecValue v =
      vramlab::engine::load_json_file(std::string(VRAMLAB_SOURCE_DIR) + "/test/fixtures/hf_config_defaults.json");
  return v;
}

inline SpecValue num(double d) { return SpecValue::number(d); }

// config.json for `arch` with the given fields, completed.
inline SpecValue hf_config(const std::string& arch, const SpecValue& given) {
  const SpecValue* entry = hf_defaults()["architectures"].find(arch);
  if (!entry) throw std::invalid_argument("no defaults for " + arch);
  auto f = (*entry)["defaults"].fields();
  for (auto& [k, v] : given.fields()) f[k] = v;
  f["architectures"] = SpecValue::array({SpecValue::string(arch)});
  f["model_type"] = (*entry)["model_type"];
  const std::string mt = (*entry)["model_type"].as_string("model_type");
  auto isnull = [&](const char* k) { return f.count(k) && f[k].is_null(); };
  if (mt != "gpt2") {
    if (isnull("num_key_value_heads")) f["num_key_value_heads"] = f["num_attention_heads"];
    if (isnull("head_dim"))
      f["head_dim"] = num(double(f["hidden_size"].as_int("hidden_size") / f["num_attention_heads"].as_int("heads")));
    const int64_t L = f["num_hidden_layers"].as_int("num_hidden_layers");
    if (mt == "qwen2" || mt == "qwen3" || mt == "qwen3_moe") {
      if (!f["use_sliding_window"].as_bool("use_sliding_window")) f["sliding_window"] = SpecValue();
    }
    if (f.count("layer_types") && f["layer_types"].is_null()) {
      std::vector<SpecValue> t;
      for (int64_t i = 0; i < L; ++i) {
        bool sliding = false;
        if (mt == "qwen2" || mt == "qwen3" || mt == "qwen3_moe")
          sliding = !f["sliding_window"].is_null() && i >= f["max_window_layers"].as_int("max_window_layers");
        else if (mt == "gemma2")
          sliding = (i + 1) % 2 != 0;
        else if (mt == "gemma3_text")
          sliding = (i + 1) % 6 != 0;
        t.push_back(SpecValue::string(sliding ? "sliding_attention" : "full_attention"));
      }
      f["layer_types"] = SpecValue::array(t);
    }
  }
  return SpecValue::object(f);
}

// hf_protocol.py's spec ({"hf": {arch, config}, batch, seq, weights, precision, optimizer,
// finetune, checkpoint, mode, new_tokens}) as ours, on the simulated H200.
inline SpecValue hf_spec(const SpecValue& p, const std::string& device = "sim:h200-141gb") {
  const SpecValue& h = p["hf"];
  const std::string arch = h["arch"].as_string("arch");
  auto f = (*defaults().find("spec")).fields();
  const int64_t seq = p["seq"].as_int("seq");
  f["model"] = SpecValue::object({{"kind", SpecValue::string("hf")},
                                  {"config", hf_config(arch, h["config"])},
                                  {"seq", num(double(seq))},
                                  // the protocol's hf.attn (config._attn_implementation), sdpa when absent
                                  {"attn_implementation", h.find("attn") ? h["attn"] : SpecValue::string("sdpa")}});
  f["batch"] = p["batch"];
  f["device"] = SpecValue::string(device);
  f["loss"] = SpecValue::string("cross_entropy");
  auto get = [&](const char* k, const char* dflt) {
    const SpecValue* v = p.find(k);
    return v ? *v : SpecValue::string(dflt);
  };
  f["weights"] = get("weights", "fp32");
  f["precision"] = get("precision", "fp32");
  if (const SpecValue* it = p.find("iterations")) f["iterations"] = *it;
  // the protocol's optimizers: torch.optim defaults (foreach on CUDA), AdamW weight decay 0.01
  const SpecValue opt = get("optimizer", "adamw");
  const std::string ok = opt.is_string() ? opt.as_string("optimizer") : opt["kind"].as_string("optimizer.kind");
  SpecValue od = *defaults()["optimizers"].find(ok);
  f["optimizer"] = opt.is_string() ? od : merge_values(od, opt);
  const SpecValue ft = get("finetune", "full");
  if (ft.is_string()) {
    f["finetune"] = SpecValue::object({{"method", ft}});
  } else {
    auto ff = ft.fields();
    if (!ff.count("alpha")) ff["alpha"] = num(2 * ff["rank"].as_number("rank"));
    if (!ff.count("dropout")) ff["dropout"] = num(0);
    f["finetune"] = SpecValue::object(ff);
  }
  f["checkpoint"] = SpecValue::string(get("checkpoint", "none").as_string("checkpoint") == "hf" ? "block" : "none");
  const std::string mode = get("mode", "train").as_string("mode");
  f["mode"] = SpecValue::string(mode);
  if (mode == "generate") {
    f["prompt"] = num(double(seq));
    f["new_tokens"] = p["new_tokens"];
  }
  return SpecValue::object(f);
}

}  // namespace vramlab::spectest
