// Parity with PyTorch: every published reference of test/refs/pytorch_reference.json,
// on the simulated device, within max(1%, 2 MiB).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "engine/protocol.h"
#include "engine_json.h"

using namespace vramlab::engine;
namespace tj = vramlab::testjson;

namespace {

const tj::Value& reference() {
  static tj::Value v = tj::load_file(std::string(VRAMLAB_SOURCE_DIR) + "/test/refs/pytorch_reference.json");
  return v;
}

ProtocolConfig config_from(const tj::Value& c) {
  ProtocolConfig cfg;
  cfg.model = c["model"].str;
  if (cfg.model == "mlp") {
    cfg.in = int64_t(c["in"].num);
    cfg.hidden = int64_t(c["hidden"].num);
    cfg.out = int64_t(c["out"].num);
  } else {
    cfg.dim = int64_t(c["dim"].num);
  }
  cfg.depth = int64_t(c["depth"].num);
  cfg.batch = int64_t(c["batch"].num);
  if (c.has("ckpt")) cfg.checkpoint = c["ckpt"].str;
  if (c.has("opt")) cfg.optimizer = c["opt"].str;
  return cfg;
}

void expect_close(const std::string& what, int64_t ours, int64_t torch) {
  double tol = std::max(0.01 * std::fabs(double(torch)), 2.0 * 1048576.0);
  EXPECT_LE(std::fabs(double(ours - torch)), tol) << what << ": ours " << ours << " vs torch " << torch;
}

}  // namespace

TEST(engine_parity, PublishedParityExamples) {
  const auto& runs = reference()["parity_examples"]["runs"].arr;
  ASSERT_EQ(runs.size(), 4u);
  for (size_t i = 0; i < runs.size(); ++i) {
    ProtocolConfig cfg = config_from(runs[i]["config"]);
    ProtocolResult r = run_protocol(cfg);
    for (auto& [key, val] : runs[i]["torch"].obj)
      expect_close("run " + std::to_string(i) + " " + key, r.at(key), int64_t(val.num));
  }
}

TEST(engine_parity, PublishedParityExamplesAreExact) {
  // The mechanisms are modelled exactly; any drift is a regression worth seeing.
  const auto& runs = reference()["parity_examples"]["runs"].arr;
  for (size_t i = 0; i < runs.size(); ++i) {
    ProtocolResult r = run_protocol(config_from(runs[i]["config"]));
    for (auto& [key, val] : runs[i]["torch"].obj) EXPECT_EQ(r.at(key), int64_t(val.num)) << "run " << i << " " << key;
  }
}

TEST(engine_parity, SeedMlpExample) {
  const auto& ref = reference()["seed_mlp_example"]["results"];
  ProtocolResult r = run_seed_example();
  for (auto& [key, val] : ref.obj) {
    int64_t ours = key == "base" ? r.base : r.at(key);
    expect_close("seed " + key, ours, int64_t(val.num));
  }
}
