// Parity with PyTorch: every published reference of test/refs/pytorch_reference.json,
// on the simulated device, within max(1%, 2 MiB).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "spec_util.h"

using namespace vramlab::engine;

namespace {

const SpecValue& reference() {
  static SpecValue v = load_json_file(std::string(VRAMLAB_SOURCE_DIR) + "/test/refs/pytorch_reference.json");
  return v;
}

// The published protocol's config ({model, in, hidden, out | dim, depth, batch, ckpt, opt})
// as a spec on the H200 it was measured on.
RunSpec config_from(const SpecValue& c) {
  std::string model = c["model"].as_string("") == "mlp"
                          ? "{\"kind\":\"mlp\",\"in\":" + std::to_string(int64_t(c["in"].as_number(""))) +
                                ",\"hidden\":" + std::to_string(int64_t(c["hidden"].as_number(""))) +
                                ",\"out\":" + std::to_string(int64_t(c["out"].as_number("")))
                          : "{\"kind\":\"residual\",\"dim\":" + std::to_string(int64_t(c["dim"].as_number("")));
  model += ",\"depth\":" + std::to_string(int64_t(c["depth"].as_number(""))) + "}";
  std::string j = "{\"model\":" + model + ",\"batch\":" + std::to_string(int64_t(c["batch"].as_number(""))) +
                  ",\"device\":\"sim:h200-141gb\",\"optimizer\":\"" + (c.has("opt") ? c["opt"].as_string("") : "sgd") +
                  "\"";
  if (c.has("ckpt")) j += ",\"checkpoint\":\"" + c["ckpt"].as_string("") + "\"";
  return vramlab::spectest::spec(j + "}");
}

void expect_close(const std::string& what, int64_t ours, int64_t torch) {
  double tol = std::max(0.01 * std::fabs(double(torch)), 2.0 * 1048576.0);
  EXPECT_LE(std::fabs(double(ours - torch)), tol) << what << ": ours " << ours << " vs torch " << torch;
}

}  // namespace

TEST(engine_parity, PublishedParityExamples) {
  const auto& runs = reference()["parity_examples"]["runs"].items();
  ASSERT_EQ(runs.size(), 4u);
  for (size_t i = 0; i < runs.size(); ++i) {
    RunResult r = run_experiment(config_from(runs[i]["config"]));
    for (auto& [key, val] : runs[i]["torch"].fields())
      expect_close("run " + std::to_string(i) + " " + key, r.at(key), int64_t(val.as_number("")));
  }
}

TEST(engine_parity, PublishedParityExamplesAreExact) {
  // The mechanisms are modelled exactly; any drift is a regression worth seeing.
  const auto& runs = reference()["parity_examples"]["runs"].items();
  for (size_t i = 0; i < runs.size(); ++i) {
    RunResult r = run_experiment(config_from(runs[i]["config"]));
    for (auto& [key, val] : runs[i]["torch"].fields())
      EXPECT_EQ(r.at(key), int64_t(val.as_number(""))) << "run " << i << " " << key;
  }
}

TEST(engine_parity, SeedMlpExample) {
  const auto& ref = reference()["seed_mlp_example"]["results"];
  RunResult r = run_seed_example();
  for (auto& [key, val] : ref.fields()) {
    int64_t ours = key == "base" ? r.base : r.at(key);
    expect_close("seed " + key, ours, int64_t(val.as_number("")));
  }
}
