// Parity with our own PyTorch measurements (test/refs/measured/h200_protocol_matmul_warmup.json
// and h200_protocol_loss_matmul_warmup.json for the mse / cross_entropy losses, taken by
// bench/torch/protocol.py with a plain-matmul warm-up): every run on the sim device,
// with the same warm-up, within the tolerance max(1%, 2 MiB). Prints one line per run
// (EXACT / within / OFF and the differences) so drift shows before it fails.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "engine/protocol.h"
#include "engine_json.h"

using namespace vramlab::engine;
namespace tj = vramlab::testjson;

namespace {

const tj::Value& measured() {
  static tj::Value v =
      tj::load_file(std::string(VRAMLAB_SOURCE_DIR) + "/test/refs/measured/h200_protocol_matmul_warmup.json");
  return v;
}

const tj::Value& measured_losses() {
  static tj::Value v =
      tj::load_file(std::string(VRAMLAB_SOURCE_DIR) + "/test/refs/measured/h200_protocol_loss_matmul_warmup.json");
  return v;
}

// The experiment-spec keys with bench/torch/protocol.py's defaults.
ProtocolConfig config_from_spec(const tj::Value& s, const std::string& warmup) {
  ProtocolConfig c;
  c.warmup = warmup;
  const tj::Value& m = s["model"];
  c.model = m["kind"].str;
  if (c.model == "mlp") {
    c.in = int64_t(m["in"].num);
    c.hidden = int64_t(m["hidden"].num);
    c.out = int64_t(m["out"].num);
  } else {
    c.dim = int64_t(m["dim"].num);
  }
  c.depth = int64_t(m["depth"].num);
  if (s.has("batch")) c.batch = int64_t(s["batch"].num);
  if (s.has("mode")) c.mode = s["mode"].str;
  bool loss_acc = c.mode == "loss_accumulation";
  c.iterations = s.has("iterations") ? int(s["iterations"].num) : (loss_acc ? 10 : 2);
  c.loss_steps = c.iterations;
  if (s.has("accum")) c.accum = int(s["accum"].num);
  if (s.has("checkpoint")) {
    const tj::Value& ck = s["checkpoint"];
    if (ck.kind == tj::Value::Object) {
      c.checkpoint = "every_k";
      c.checkpoint_k = int(ck["every"].num);
    } else {
      c.checkpoint = ck.str;
    }
  }
  if (s.has("precision")) c.precision = s["precision"].str;
  if (s.has("optimizer")) {
    const tj::Value& o = s["optimizer"];
    if (o.kind == tj::Value::Object) {
      c.optimizer = o["kind"].str;
      if (o.has("lr")) c.lr = o["lr"].num;
      if (o.has("foreach") && o["foreach"].kind == tj::Value::Bool) c.foreach = o["foreach"].b;
    } else {
      c.optimizer = o.str;
    }
  }
  c.set_to_none = s.has("set_to_none") ? s["set_to_none"].b : true;
  c.keep_loss_graph = s.has("keep_loss_graph") ? s["keep_loss_graph"].b : true;
  if (s.has("loss")) c.loss = s["loss"].str;
  return c;
}

std::string describe(const tj::Value& s) {
  const tj::Value& m = s["model"];
  std::ostringstream o;
  o << m["kind"].str << ":";
  if (m["kind"].str == "mlp") o << m["in"].num << "-" << m["hidden"].num << "x" << m["depth"].num;
  else o << m["dim"].num << "x" << m["depth"].num;
  for (auto& [k, v] : s.obj) {
    if (k == "model") continue;
    o << " " << k << "=";
    if (v.kind == tj::Value::Number) o << v.num;
    else if (v.kind == tj::Value::String) o << v.str;
    else if (v.kind == tj::Value::Bool) o << (v.b ? "true" : "false");
    else if (v.kind == tj::Value::Object) {
      o << "{";
      for (auto& [k2, v2] : v.obj)
        o << k2 << ":" << (v2.kind == tj::Value::String ? v2.str : v2.kind == tj::Value::Bool ? (v2.b ? "true" : "false")
                                                                                            : std::to_string(v2.num))
          << ",";
      o << "}";
    }
  }
  return o.str();
}

double tolerance(int64_t torch) { return std::max(0.01 * std::fabs(double(torch)), 2.0 * 1048576.0); }

// Runs every configuration of `runs`, printing one line each; fails a reading outside the tolerance.
void expect_within_tolerance(const std::vector<tj::Value>& runs) {
  int exact = 0, within = 0, off = 0;
  for (size_t i = 0; i < runs.size(); ++i) {
    const tj::Value& run = runs[i];
    ASSERT_TRUE(run.has("readings") && run["readings"].kind == tj::Value::Object) << "run " << i << " has no readings";
    ProtocolConfig cfg = config_from_spec(run["spec"], run.has("warmup") ? run["warmup"].str : "matmul");
    ProtocolResult r = run_protocol(cfg);
    std::ostringstream diffs;
    bool run_off = false, run_exact = true;
    for (auto& [key, val] : run["readings"].obj) {
      int64_t torch = int64_t(val.num), ours = r.at(key);
      if (ours == torch) continue;
      run_exact = false;
      bool bad = std::fabs(double(ours - torch)) > tolerance(torch);
      run_off = run_off || bad;
      char buf[96];
      std::snprintf(buf, sizeof buf, " %s:%+.3fMiB%s", key.c_str(), double(ours - torch) / 1048576.0, bad ? "!" : "");
      diffs << buf;
      EXPECT_LE(std::fabs(double(ours - torch)), tolerance(torch))
          << describe(run["spec"]) << " " << key << ": ours " << ours << " vs torch " << torch;
    }
    const char* verdict = run_off ? "OFF   " : run_exact ? "EXACT " : "within";
    (run_off ? off : run_exact ? exact : within)++;
    std::printf("  %s %s%s\n", verdict, describe(run["spec"]).c_str(), diffs.str().c_str());
  }
  std::printf("  measured parity: %d exact, %d within, %d off of %zu\n", exact, within, off, runs.size());
}

void expect_exact(const std::vector<tj::Value>& runs) {
  for (const auto& run : runs) {
    ProtocolResult r = run_protocol(config_from_spec(run["spec"], run.has("warmup") ? run["warmup"].str : "matmul"));
    for (auto& [key, val] : run["readings"].obj) EXPECT_EQ(r.at(key), int64_t(val.num)) << describe(run["spec"]) << " " << key;
  }
}

}  // namespace

TEST(engine_measured_parity, MatmulWarmupRunsWithinTolerance) {
  const auto& runs = measured()["runs"].arr;
  ASSERT_GE(runs.size(), 35u);
  expect_within_tolerance(runs);
}

TEST(engine_measured_parity, MatmulWarmupRunsAreExact) {
  // Every mechanism behind these readings is modelled; a drift of even 512 bytes is a
  // regression worth seeing.
  expect_exact(measured()["runs"].arr);
}

TEST(engine_measured_parity, LossRunsWithinTolerance) {
  // mse (the target and the saved fp32 output) and cross_entropy (int64 labels, saved
  // log-probs and total_weight), fp32 / bf16 / accumulation / checkpointing / loss graph.
  const auto& runs = measured_losses()["runs"].arr;
  ASSERT_GE(runs.size(), 9u);
  expect_within_tolerance(runs);
}

TEST(engine_measured_parity, LossRunsAreExact) { expect_exact(measured_losses()["runs"].arr); }

TEST(engine_measured_parity, LinearWarmupIsOneMiBBelowFromAfterForward) {
  // The published protocol's warm-up creates the forward thread's cuBLASLt workspace
  // before base, so every reading from after_forward on is 1 MiB lower.
  const auto& spec = measured()["runs"].arr.at(0)["spec"];
  ProtocolResult mm = run_protocol(config_from_spec(spec, "matmul"));
  ProtocolResult lin = run_protocol(config_from_spec(spec, "linear"));
  for (auto& [key, v] : mm.readings) {
    int64_t expect = key == "params" || key == "input" ? v : v - (int64_t(1) << 20);
    EXPECT_EQ(lin.at(key), expect) << key;
  }
  ProtocolConfig bad;
  bad.warmup = "conv";
  EXPECT_THROW(run_protocol(bad), std::invalid_argument);
  bad = ProtocolConfig{};
  bad.loss = "hinge";
  EXPECT_THROW(run_protocol(bad), std::invalid_argument);
}

TEST(engine_measured_parity, KeptLossGraphsHoldWhatDerivativesYamlSaves) {
  // Sizes the measurements lack (odd batch and width, so block rounding shows). Against
  // "sum" (SumBackward0 saves only sizes), each kept graph also holds: mse_loss's saved
  // input (the fp32 y); cross_entropy's saved log_softmax result plus nll_loss's 0-d
  // total_weight. The target counts once, in "input".
  auto round512 = [](int64_t b) { return (b + 511) / 512 * 512; };
  ProtocolConfig c;
  c.warmup = "matmul";
  c.in = 300;
  c.hidden = 700;
  c.out = 7;
  c.batch = 100;
  c.mode = "loss_accumulation";
  c.keep_loss_graph = true;
  c.loss_steps = 5;
  c.loss = "sum";
  ProtocolResult sum = run_protocol(c);
  c.loss = "mse";
  ProtocolResult mse = run_protocol(c);
  c.loss = "cross_entropy";
  ProtocolResult ce = run_protocol(c);
  const int64_t y = round512(100 * 7 * 4);
  EXPECT_EQ(mse.at("input") - sum.at("input"), y);
  EXPECT_EQ(ce.at("input") - sum.at("input"), round512(100 * 8));
  EXPECT_EQ(mse.at("after_loop") - sum.at("after_loop"), y + 5 * y);
  EXPECT_EQ(ce.at("after_loop") - sum.at("after_loop"), round512(100 * 8) + 5 * (y + 512));
}
