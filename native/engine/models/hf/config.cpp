// Reading a completed config.json by its own field names (the contract fills in every
// default from transformers' <X>Config, so nothing here has a default of its own).
#include <stdexcept>

#include "engine/models/hf/arch.h"
#include "engine/models/hf/rope.h"

namespace vramlab::engine::hf {

const SpecValue& Config::at(const char* key) const {
  const SpecValue* x = v.find(key);
  if (!x) throw std::invalid_argument(path + "." + key + " is missing");
  return *x;
}
int64_t Config::i(const char* key) const { return at(key).as_int(path + "." + key); }
double Config::f(const char* key) const { return at(key).as_number(path + "." + key); }
bool Config::b(const char* key) const { return at(key).as_bool(path + "." + key); }
std::string Config::s(const char* key) const { return at(key).as_string(path + "." + key); }
bool Config::is_null(const char* key) const { return at(key).is_null(); }

void read_rope_into(Arch& a, const Config& c) {
  a.rope = read_rope(c, c.at("rope_parameters"), c.path + ".rope_parameters");
  a.rope_theta = a.rope.theta;
}

std::vector<bool> sliding_layers(const Config& c, int64_t layers) {
  std::vector<bool> out(size_t(layers), false);
  if (!c.has("layer_types") || c.is_null("layer_types")) return out;
  const auto& items = c.at("layer_types").items();
  if (int64_t(items.size()) != layers)
    throw std::invalid_argument(c.path + ".layer_types must name one type per layer (" + std::to_string(layers) + ")");
  for (size_t i = 0; i < items.size(); ++i) {
    const std::string t = items[i].as_string(c.path + ".layer_types");
    if (t != "full_attention" && t != "sliding_attention")
      throw std::invalid_argument(c.path + ".layer_types: unknown layer type \"" + t + "\"");
    out[i] = t == "sliding_attention";
  }
  return out;
}

Arch decoder_sizes(const Config& c, const std::string& name) {
  Arch a;
  a.name = name;
  a.vocab = c.i("vocab_size");
  a.hidden = c.i("hidden_size");
  a.intermediate = c.i("intermediate_size");
  a.layers = c.i("num_hidden_layers");
  a.heads = c.i("num_attention_heads");
  a.kv_heads = c.i("num_key_value_heads");
  a.head_dim = c.has("head_dim") && !c.is_null("head_dim") ? c.i("head_dim") : a.hidden / a.heads;
  a.max_positions = c.i("max_position_embeddings");
  a.norm_eps = c.f("rms_norm_eps");
  a.tie = c.b("tie_word_embeddings");
  a.sliding.assign(size_t(a.layers), false);
  a.sparse.assign(size_t(a.layers), false);
  if (a.heads <= 0 || a.kv_heads <= 0 || a.heads % a.kv_heads != 0)
    throw std::invalid_argument(c.path + ": num_attention_heads (" + std::to_string(a.heads) +
                                ") must be a multiple of num_key_value_heads (" + std::to_string(a.kv_heads) + ")");
  return a;
}

Arch llama_shape(const Config& c, const std::string& name) {
  Arch a = decoder_sizes(c, name);
  read_rope_into(a, c);
  a.act = c.s("hidden_act");
  return a;
}

}  // namespace vramlab::engine::hf
