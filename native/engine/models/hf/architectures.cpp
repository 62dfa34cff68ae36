// The Hugging Face architectures the hf family builds, one line each: config.architectures[0]
// names the file (in this folder) that says how it differs from Llama.
#include <stdexcept>

#include "engine/models/hf/arch.h"

namespace vramlab::engine::hf {

namespace {

struct Entry {
  const char* architecture;
  ArchReader read;
};

constexpr Entry kArchitectures[] = {
    {"LlamaForCausalLM", llama},        {"MistralForCausalLM", mistral},    {"Qwen2ForCausalLM", qwen2},
    {"Qwen3ForCausalLM", qwen3},        {"Qwen3MoeForCausalLM", qwen3_moe}, {"Gemma2ForCausalLM", gemma2},
    {"Gemma3ForCausalLM", gemma3_text}, {"Phi3ForCausalLM", phi3},          {"MixtralForCausalLM", mixtral},
    {"Olmo2ForCausalLM", olmo2},        {"GPT2LMHeadModel", gpt2},
};

}  // namespace

std::vector<std::string> supported_architectures() {
  std::vector<std::string> out;
  for (auto& e : kArchitectures) out.push_back(e.architecture);
  return out;
}

Arch read_arch(const KindArgs& model) {
  const std::string p = model.path + ".config";
  const SpecValue* cfg = model.args.find("config");
  if (!cfg || !cfg->is_object()) throw std::invalid_argument(p + " must be the model's config.json object");
  const SpecValue* archs = cfg->find("architectures");
  if (!archs || archs->kind() != SpecValue::Kind::Array || archs->items().empty())
    throw std::invalid_argument(p + ".architectures must name the architecture");
  const std::string name = archs->items()[0].as_string(p + ".architectures[0]");
  for (auto& e : kArchitectures)
    if (name == e.architecture) {
      Arch a = e.read(Config{*cfg, p});
      a.bos_token = cfg->has("bos_token_id") && !(*cfg)["bos_token_id"].is_null();
      return a;
    }
  std::string known;
  for (auto& e : kArchitectures) known += std::string(known.empty() ? "" : ", ") + e.architecture;
  throw std::invalid_argument(p + ".architectures[0] \"" + name + "\" is not supported (supported: " + known + ")");
}

}  // namespace vramlab::engine::hf
