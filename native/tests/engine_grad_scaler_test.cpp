// torch.amp.GradScaler semantics on the CPU backend (real values), and its device
// memory in the protocol on the sim backend.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "engine/core/grad_mode.h"
#include "engine/models/family.h"
#include "engine/nn/nn.h"
#include "engine/ops/ops.h"
#include "engine/optim/grad_scaler.h"
#include "engine/optim/optimizer.h"
#include "spec_util.h"
#include "engine_test_util.h"

using namespace vramlab::engine;
using vramlab::enginetest::EngineSession;

namespace {

// loss = sum(lin(x)) scaled, backward; returns the parameters' values before the step.
std::vector<double> backward_scaled(GradScaler& s, Linear& lin, const Tensor& x) {
  Tensor loss = sum(lin(x));
  s.scale(loss).backward();
  return lin.weight.to_vector();
}

}  // namespace

TEST(engine_grad_scaler, ScalesLossAndUnscalesGrads) {
  EngineSession es(true);
  Linear lin(3, 2);
  Tensor x = randn({4, 3});
  // Reference gradient without scaling.
  sum(lin(x)).backward();
  std::vector<double> ref = lin.weight.grad().to_vector();
  lin.zero_grad();

  GradScaler s;
  Tensor loss = sum(lin(x));
  Tensor scaled = s.scale(loss);
  EXPECT_DOUBLE_EQ(scaled.item(), loss.item() * 65536.0);
  scaled.backward();
  std::vector<double> g = lin.weight.grad().to_vector();
  for (size_t i = 0; i < g.size(); ++i) EXPECT_NEAR(g[i], ref[i] * 65536.0, 1e-6 * std::fabs(ref[i] * 65536.0) + 1e-6);
  SGD opt(lin.parameters(), SGDOptions{});
  s.unscale_(opt);
  EXPECT_FALSE(s.found_inf());
  g = lin.weight.grad().to_vector();
  for (size_t i = 0; i < g.size(); ++i) EXPECT_NEAR(g[i], ref[i], 1e-6);
  EXPECT_THROW(s.unscale_(opt), std::runtime_error);  // twice before update()
}

TEST(engine_grad_scaler, InfGradientSkipsStepAndHalvesScale) {
  EngineSession es(true);
  Linear lin(3, 2);
  Tensor x = randn({4, 3});
  SGD opt(lin.parameters(), SGDOptions{});
  GradScaler s;
  std::vector<double> before = backward_scaled(s, lin, x);
  {
    NoGradGuard ng;
    Tensor g = lin.bias.grad();
    fill_(g, std::numeric_limits<double>::infinity());
  }
  EXPECT_FALSE(s.step(opt));
  EXPECT_TRUE(s.found_inf());
  EXPECT_EQ(lin.weight.to_vector(), before);  // parameters untouched
  s.update();
  EXPECT_DOUBLE_EQ(s.get_scale(), 32768.0);
  EXPECT_EQ(s.growth_tracker(), 0);

  // A finite step afterwards goes through and counts towards growth.
  opt.zero_grad();
  before = backward_scaled(s, lin, x);
  EXPECT_TRUE(s.step(opt));
  EXPECT_NE(lin.weight.to_vector(), before);
  s.update();
  EXPECT_DOUBLE_EQ(s.get_scale(), 32768.0);
  EXPECT_EQ(s.growth_tracker(), 1);
}

TEST(engine_grad_scaler, GrowsAfterGrowthIntervalCleanSteps) {
  EngineSession es(true);
  Linear lin(2, 2);
  Tensor x = randn({3, 2});
  SGD opt(lin.parameters(), SGDOptions{});
  GradScalerOptions o;
  o.growth_interval = 3;
  GradScaler s(o);
  for (int i = 0; i < 3; ++i) {
    opt.zero_grad();
    backward_scaled(s, lin, x);
    EXPECT_TRUE(s.step(opt));
    s.update();
    EXPECT_DOUBLE_EQ(s.get_scale(), i < 2 ? 65536.0 : 131072.0) << "after step " << i;
  }
  EXPECT_EQ(s.growth_tracker(), 0);
}

TEST(engine_grad_scaler, DefaultsAreTorchs) {
  GradScalerOptions o;
  EXPECT_EQ(o.init_scale, 65536.0);
  EXPECT_EQ(o.growth_factor, 2.0);
  EXPECT_EQ(o.backoff_factor, 0.5);
  EXPECT_EQ(o.growth_interval, 2000);
  EXPECT_THROW(GradScaler(GradScalerOptions{1.0, 1.0, 0.5, 10}), std::invalid_argument);
}

TEST(engine_grad_scaler, ProtocolMemory) {
  // Scale and growth tracker stay on the device from the first scale(); the scaled loss
  // and found_inf are transient; everything else reads as without a scaler.
  RunSpec c = vramlab::spectest::spec(R"({"precision":"fp16","optimizer":"adam","device":"sim:h200-141gb"})");
  RunOptions o;
  RunResult plain = run_experiment(c, o);
  o.grad_scaler = true;
  RunResult scaled = run_experiment(c, o);
  EXPECT_EQ(scaled.at("after_forward"), plain.at("after_forward"));
  for (const char* k : {"it0_after_backward", "it0_after_zero_grad", "it1_after_backward", "it1_after_zero_grad"})
    EXPECT_EQ(scaled.at(k), plain.at(k) + 2 * 512) << k;
  EXPECT_GE(scaled.at("it1_peak_step"), plain.at("it1_peak_step") + 2 * 512);

  c.precision = Precision::Bf16;
  EXPECT_THROW(run_experiment(c, o), std::invalid_argument);
  c = vramlab::spectest::spec(R"({"precision":"fp16","optimizer":"none"})");
  EXPECT_THROW(run_experiment(c, o), std::invalid_argument);
}
