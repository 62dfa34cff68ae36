// The model families, one line each: a family is its own file here plus this line
// (and its description in main/contract/catalogue/families/).
#include <stdexcept>

#include "engine/models/family.h"

namespace vramlab::engine {

namespace {

struct FamilyEntry {
  const char* kind;
  std::unique_ptr<Model> (*build)(const KindArgs&);
};

constexpr FamilyEntry kFamilies[] = {
    {"mlp", build_mlp},
    {"residual", build_residual},
    {"gpt", build_gpt},
    {"llama", build_llama},
};

}  // namespace

std::unique_ptr<Model> build_model(const KindArgs& model) {
  for (const auto& f : kFamilies)
    if (model.kind == f.kind) {
      auto m = f.build(model);
      m->set_path("");
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
