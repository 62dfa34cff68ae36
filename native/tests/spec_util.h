#pragma once
// Specs for tests, written as users write them (partial JSON) and completed with the
// contract's defaults. test/fixtures/spec_defaults.json is generated from
// main/contract/catalogue (test/unit/spec_defaults.test.ts keeps it in step), so the
// engine is tested on exactly the specs the contract hands it.
#include <map>
#include <string>

#include "engine/experiment/experiment.h"
#include "engine/spec/run_spec.h"
#include "engine/spec/spec_value.h"

namespace vramlab::spectest {

using vramlab::engine::SpecValue;

inline const SpecValue& defaults() {
  static SpecValue v =
      vramlab::engine::load_json_file(std::string(VRAMLAB_SOURCE_DIR) + "/test/fixtures/spec_defaults.json");
  return v;
}

// A partial spec value completed the way the contract completes it.
inline SpecValue complete(const SpecValue& partial) {
  using vramlab::engine::merge_values;
  const SpecValue& d = defaults();
  SpecValue out = *d.find("spec");
  std::string kind = "mlp";
  if (const SpecValue* m = partial.find("model")) kind = m->find("kind")->as_string("model.kind");
  const SpecValue* fam = d.find("models")->find(kind);
  if (!fam) throw std::invalid_argument("no defaults for model kind " + kind);
  out = merge_values(out, *fam->find("spec"));
  std::string mode = "train";
  if (const SpecValue* m = partial.find("mode")) mode = m->as_string("mode");
  if (const SpecValue* md = d.find("modes")->find(mode)) out = merge_values(out, *md);
  std::map<std::string, SpecValue> f = out.fields();
  for (auto& [k, v] : partial.fields()) f[k] = v;
  // model: family defaults under the given fields; kv_heads defaults to heads
  SpecValue model =
      merge_values(*fam->find("model"), partial.find("model") ? *partial.find("model") : SpecValue::object({}));
  if (kind == "llama" && partial.find("model") && !partial.find("model")->has("kv_heads")) {
    auto mf = model.fields();
    mf["kv_heads"] = mf["heads"];
    model = SpecValue::object(mf);
  }
  f["model"] = model;
  // optimizer: "adamw" or {kind, ...} over that optimizer's defaults
  if (const SpecValue* o = partial.find("optimizer")) {
    std::string ok = o->is_string() ? o->as_string("optimizer") : o->find("kind")->as_string("optimizer.kind");
    const SpecValue* od = d.find("optimizers")->find(ok);
    if (!od) throw std::invalid_argument("no defaults for optimizer " + ok);
    f["optimizer"] = o->is_string() ? *od : merge_values(*od, *o);
  }
  // finetune: lora's alpha defaults to 2 x rank
  if (const SpecValue* ft = partial.find("finetune"); ft && ft->has("rank") && !ft->has("alpha")) {
    auto ff = ft->fields();
    ff["alpha"] = SpecValue::number(2 * ft->find("rank")->as_number("rank"));
    f["finetune"] = SpecValue::object(ff);
  }
  // parallel: {kind, ...} over that kind's defaults (world, buckets, resharding, dtypes)
  if (const SpecValue* pa = partial.find("parallel"); pa && !pa->is_null()) {
    const SpecValue* pd = d.find("parallel")->find(pa->find("kind")->as_string("parallel.kind"));
    if (!pd) throw std::invalid_argument("no defaults for parallel kind");
    f["parallel"] = merge_values(*pd, *pa);
  }
  return SpecValue::object(f);
}

inline vramlab::engine::RunSpec spec(const SpecValue& partial) {
  return vramlab::engine::read_run_spec(complete(partial));
}
inline vramlab::engine::RunSpec spec(const std::string& partial_json) {
  return spec(vramlab::engine::parse_json(partial_json));
}

// A JSON file of the repository (test/refs/..., test/fixtures/...), read once per test binary.
inline const SpecValue& repo_json(const std::string& rel) {
  static std::map<std::string, SpecValue> cache;
  auto it = cache.find(rel);
  if (it == cache.end())
    it = cache.emplace(rel, vramlab::engine::load_json_file(std::string(VRAMLAB_SOURCE_DIR) + "/" + rel)).first;
  return it->second;
}

}  // namespace vramlab::spectest
