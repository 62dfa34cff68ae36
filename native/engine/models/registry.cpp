// The model families, one line each: a family is its own file here plus this line
// (and its description in main/contract/catalogue/families/).
#include <stdexcept>

#include "engine/models/family.h"
#include "engine/models/hf/decoder.h"

namespace vramlab::engine {

namespace {

struct FamilyEntry {
  const char* kind;
  std::unique_ptr<Model> (*build)(const KindArgs&);            // float32, converted after
  std::unique_ptr<Model> (*build_in)(const KindArgs&, DType);  // or built in the weights dtype
};

constexpr FamilyEntry kFamilies[] = {
    {"mlp", build_mlp, nullptr}, {"residual", build_residual, nullptr},
    {"gpt", build_gpt, nullptr}, {"llama", build_llama, nullptr},
    {"hf", nullptr, build_hf},
};

}  // namespace

std::unique_ptr<Model> build_model(const KindArgs& model) { return build_model(model, DType::Float32); }

std::unique_ptr<Model> build_model(const KindArgs& model, DType weights) {
  for (const auto& f : kFamilies)
    if (model.kind == f.kind) {
      std::unique_ptr<Model> m = f.build_in ? f.build_in(model, weights) : f.build(model);
      m->set_path("");
      if (!f.build_in && weights != DType::Float32) m->to_dtype(weights);
      return m;
    }
  std::string known;
  for (const auto& f : kFamilies) known += std::string(known.empty() ? "" : ", ") + f.kind;
  throw std::invalid_argument("unknown model kind \"" + model.kind + "\" (expected " + known + ")");
}

std::vector<std::string> model_family_kinds() {
  std::vector<std::string> out;
  for (const auto& f : kFamilies) out.push_back(f.kind);
  return out;
}

}  // namespace vramlab::engine
