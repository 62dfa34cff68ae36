// Finite-difference gradient checks in float64 on the CPU backend: every op and both
// model families, with and without checkpointing.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>

#include "engine/checkpoint/checkpoint.h"
#include "engine/core/grad_mode.h"
#include "engine/models/family.h"
#include "engine/nn/nn.h"
#include "engine/ops/ops.h"
#include "engine_test_util.h"
#include "engine/ops/attention.h"
#include "spec_util.h"

using namespace vramlab::engine;
using vramlab::enginetest::EngineSession;

namespace {

using Fn = std::function<Tensor(const std::vector<Tensor>&)>;

Tensor input(const Shape& s) {
  Tensor t = randn(s, DType::Float64);
  t.requires_grad_(true);
  return t;
}

double scalar_of(const Tensor& t) { return t.item(); }

// Compares d(sum f)/d(input) from autograd with central differences.
void gradcheck(const Fn& f, std::vector<Tensor> inputs, double tol = 1e-6, double eps = 1e-6) {
  for (auto& t : inputs) t.set_grad(Tensor());
  Tensor out = f(inputs);
  Tensor loss = out.dim() == 0 ? out : sum(out);
  loss.backward();
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].requires_grad()) continue;
    ASSERT_TRUE(inputs[i].grad().defined()) << "input " << i << " got no gradient";
    auto analytic = inputs[i].grad().to_vector();
    double* data = static_cast<double*>(inputs[i].data_ptr());
    ASSERT_TRUE(inputs[i].is_contiguous());
    for (int64_t k = 0; k < inputs[i].numel(); ++k) {
      NoGradGuard ng;
      double orig = data[k];
      data[k] = orig + eps;
      Tensor o1 = f(inputs);
      double lp = scalar_of(o1.dim() == 0 ? o1 : sum(o1));
      data[k] = orig - eps;
      Tensor o2 = f(inputs);
      double lm = scalar_of(o2.dim() == 0 ? o2 : sum(o2));
      data[k] = orig;
      double numeric = (lp - lm) / (2 * eps);
      EXPECT_NEAR(analytic[size_t(k)], numeric, tol * std::max(1.0, std::fabs(numeric)))
          << "input " << i << " element " << k;
    }
  }
}

class engine_gradcheck : public ::testing::Test {
 protected:
  EngineSession s{true};
  void SetUp() override { s.ctx->manual_seed(1234); }
};

}  // namespace

TEST_F(engine_gradcheck, Linear) {
  gradcheck([](const auto& v) { return linear(v[0], v[1], v[2]); }, {input({5, 4}), input({3, 4}), input({3})});
  gradcheck([](const auto& v) { return linear(v[0], v[1]); }, {input({5, 4}), input({3, 4})});
  gradcheck([](const auto& v) { return linear(v[0], v[1], v[2]); }, {input({2, 3, 4}), input({3, 4}), input({3})});
}

TEST_F(engine_gradcheck, MatmulAndMm) {
  gradcheck([](const auto& v) { return mm(v[0], v[1]); }, {input({3, 4}), input({4, 2})});
  gradcheck([](const auto& v) { return matmul(v[0], v[1]); }, {input({2, 3, 4}), input({4, 2})});
  // Column-major operands take the other mm backward branch.
  gradcheck([](const auto& v) { return mm(v[0].t(), v[1].t()); }, {input({4, 3}), input({2, 4})});
  gradcheck([](const auto& v) { return addmm(v[0], v[1], v[2]); }, {input({2}), input({3, 4}), input({4, 2})});
}

TEST_F(engine_gradcheck, Activations) {
  gradcheck([](const auto& v) { return relu(v[0]); }, {input({4, 5})});
  gradcheck([](const auto& v) { return gelu(v[0]); }, {input({4, 5})});
  gradcheck([](const auto& v) { return gelu(v[0], true); }, {input({4, 5})});
}

TEST_F(engine_gradcheck, ArithmeticWithBroadcasting) {
  gradcheck([](const auto& v) { return add(v[0], v[1], 2.5); }, {input({3, 4}), input({4})});
  gradcheck([](const auto& v) { return sub(v[0], v[1]); }, {input({3, 1}), input({1, 4})});
  gradcheck([](const auto& v) { return mul(v[0], v[1]); }, {input({2, 3, 4}), input({3, 1})});
  Tensor d = input({3, 4});
  {
    NoGradGuard ng;
    add_(d, 3.0);  // keep the divisor away from zero
  }
  gradcheck([](const auto& v) { return div(v[0], v[1]); }, {input({3, 4}), d});
  gradcheck([](const auto& v) { return div(mul(add(v[0], 1.5), -2.0), 4.0); }, {input({3, 2})});
  gradcheck([](const auto& v) { return neg(v[0]); }, {input({3})});
}

TEST_F(engine_gradcheck, Reductions) {
  gradcheck([](const auto& v) { return sum(v[0]); }, {input({3, 4})});
  gradcheck([](const auto& v) { return mul(sum(v[0], {1}), v[1]); }, {input({3, 4}), input({3})});
  gradcheck([](const auto& v) { return mul(sum(v[0], {0, 2}, true), v[1]); }, {input({2, 3, 4}), input({1, 3, 1})});
  gradcheck([](const auto& v) { return mean(v[0]); }, {input({3, 4})});
  gradcheck([](const auto& v) { return mul(mean(v[0], {0}), v[1]); }, {input({3, 4}), input({4})});
}

TEST_F(engine_gradcheck, Losses) {
  gradcheck([](const auto& v) { return mse_loss(v[0], v[1]); }, {input({4, 3}), input({4, 3})});
  gradcheck([](const auto& v) { return mse_loss(v[0], v[1], Reduction::Sum); }, {input({4, 3}), input({4, 3})});
  Tensor target = randint({5}, 4);
  gradcheck([target](const auto& v) { return cross_entropy(v[0], target); }, {input({5, 4})});
  gradcheck([target](const auto& v) { return cross_entropy(v[0], target, Reduction::Sum); }, {input({5, 4})});
  gradcheck([](const auto& v) { return mul(log_softmax(v[0], 1), v[1]); }, {input({3, 4}), input({3, 4})});
}

TEST_F(engine_gradcheck, ViewsAndCopies) {
  gradcheck([](const auto& v) { return mul(v[0].view({4, 3}), v[1]); }, {input({3, 4}), input({4, 3})});
  gradcheck([](const auto& v) { return mul(v[0].t().reshape({12}), v[1]); }, {input({3, 4}), input({12})});
  gradcheck([](const auto& v) { return mul(v[0].transpose(0, 2), v[1]); }, {input({2, 3, 4}), input({4, 3, 2})});
  gradcheck([](const auto& v) { return mul(v[0].expand({3, 4}), v[1]); }, {input({1, 4}), input({3, 4})});
  gradcheck([](const auto& v) { return mul(v[0].slice(1, 1, 3), v[1]); }, {input({3, 4}), input({3, 2})});
  gradcheck([](const auto& v) { return mul(v[0].unsqueeze(1), v[1]); }, {input({3}), input({3, 2})});
  gradcheck([](const auto& v) { return mul(v[0].clone(), v[1].contiguous()); }, {input({3}), input({3})});
}

TEST_F(engine_gradcheck, CastsCarryGradientsBackToTheSourceDtype) {
  // d/dx sum(x.to(f32) * c) = c, delivered in x's dtype (ToCopyBackward0).
  Tensor x = input({3, 2});
  Tensor c = randn({3, 2}, DType::Float32);
  sum(mul(x.to(DType::Float32), c)).backward();
  ASSERT_EQ(x.grad().dtype(), DType::Float64);
  auto g = x.grad().to_vector();
  auto cv = c.to_vector();
  for (size_t k = 0; k < g.size(); ++k) EXPECT_DOUBLE_EQ(g[k], cv[k]);
  Tensor h = x.to(DType::BFloat16);
  EXPECT_EQ(h.dtype(), DType::BFloat16);
  EXPECT_TRUE(x.to(DType::Float64).is_same(x));  // same dtype: no copy
}

TEST_F(engine_gradcheck, MlpModel) {
  auto model = make_mlp(4, 5, 2, 3, DType::Float64);
  auto params = model->parameters();
  std::vector<Tensor> inputs{input({3, 4})};
  for (auto& p : params) inputs.push_back(p);
  gradcheck([&](const auto& v) { return (*model)(v[0]); }, inputs);
}

TEST_F(engine_gradcheck, ResidualModelWithAndWithoutCheckpointing) {
  using M = CheckpointSpec::Mode;
  for (auto mode : {M::None, M::Block, M::Sqrt, M::Every}) {
    auto seq = make_residual(3, 4, DType::Float64);
    CheckpointedSequential model(seq, CheckpointSpec{mode, 2});
    std::vector<Tensor> inputs{input({2, 3})};
    for (auto& p : seq->parameters()) inputs.push_back(p);
    gradcheck([&](const auto& v) { return model(v[0]); }, inputs);
  }
}

TEST_F(engine_gradcheck, CheckpointMatchesPlainGradients) {
  auto seq = make_residual(4, 3, DType::Float64);
  Tensor x = input({2, 4});
  sum(seq->forward(x)).backward();
  std::vector<std::vector<double>> plain;
  for (auto& p : seq->parameters()) {
    plain.push_back(p.grad().to_vector());
    p.set_grad(Tensor());
  }
  auto xg = x.grad().to_vector();
  x.set_grad(Tensor());
  CheckpointedSequential ck(seq, CheckpointSpec{CheckpointSpec::Mode::Block, 0});
  sum(ck.forward(x)).backward();
  auto ps = seq->parameters();
  for (size_t i = 0; i < ps.size(); ++i) {
    auto g = ps[i].grad().to_vector();
    for (size_t k = 0; k < g.size(); ++k) EXPECT_NEAR(g[k], plain[i][k], 1e-12);
  }
  auto xg2 = x.grad().to_vector();
  for (size_t k = 0; k < xg.size(); ++k) EXPECT_NEAR(xg2[k], xg[k], 1e-12);
}

// ---- transformer ops and families ----

TEST_F(engine_gradcheck, EmbeddingWithRepeatedIndices) {
  Tensor idx = randint({2, 5}, 4);  // 10 lookups into 4 rows: rows repeat
  gradcheck([idx](const auto& v) { return embedding(v[0], idx); }, {input({4, 3})});
}

TEST_F(engine_gradcheck, LayerNormAndTheRmsNormChain) {
  gradcheck([](const auto& v) { return layer_norm(v[0], v[1], v[2], 1e-5); }, {input({3, 5}), input({5}), input({5})});
  gradcheck([](const auto& v) { return layer_norm(v[0], v[1], v[2], 1e-5); },
            {input({2, 3, 4}), input({4}), input({4})});
  // RMSNorm as written: x * rsqrt(mean(x^2, -1, keepdim) + eps) * weight
  gradcheck(
      [](const auto& v) {
        Tensor ms = mean(pow(v[0], 2.0), {-1}, true);
        return mul(mul(v[0], rsqrt(add(ms, 1e-6))), v[1]);
      },
      {input({3, 6}), input({6})});
}

TEST_F(engine_gradcheck, GeluTanhSiluAndSwiGlu) {
  gradcheck([](const auto& v) { return gelu(v[0], true); }, {input({3, 4})});
  gradcheck([](const auto& v) { return silu(v[0]); }, {input({3, 4})});
  gradcheck([](const auto& v) { return mul(silu(v[0]), v[1]); }, {input({3, 4}), input({3, 4})});
}

TEST_F(engine_gradcheck, RotaryHalvesCatAndRepeatInterleave) {
  // rotate_half: cat(-x2, x1) of the two halves of the last dim
  gradcheck(
      [](const auto& v) {
        auto halves = split(v[0], 2, -1);
        return mul(cat({neg(halves[1]), halves[0]}, -1), v[1]);
      },
      {input({2, 3, 4}), input({2, 3, 4})});
  gradcheck([](const auto& v) { return repeat_interleave(v[0], 3, 1); }, {input({2, 2, 3, 4})});
}

TEST_F(engine_gradcheck, CausalScaledDotProductAttention) {
  // (B, H, S, D) = (1, 2, 3, 4): q, k and v all get gradients
  gradcheck([](const auto& v) { return scaled_dot_product_attention(v[0], v[1], v[2], true); },
            {input({1, 2, 3, 4}), input({1, 2, 3, 4}), input({1, 2, 3, 4})});
  gradcheck([](const auto& v) { return scaled_dot_product_attention(v[0], v[1], v[2], false); },
            {input({2, 1, 3, 4}), input({2, 1, 3, 4}), input({2, 1, 3, 4})});
}

namespace {

// The family's loss on a tiny batch, its parameters in float64, checked against every
// parameter; llama's RMSNorm computes in fp32 as written, hence its looser check.
void check_family(const std::string& spec_json, const CheckpointSpec& ckpt, double tol, double eps) {
  RunSpec spec = vramlab::spectest::spec(spec_json);
  auto model = build_model(spec.model);
  model->to_dtype(DType::Float64);
  model->set_checkpoint(ckpt);
  Batch b = model->make_batch(2, 0, LossKind::CrossEntropy);
  std::vector<Tensor> params = model->parameters();
  gradcheck(
      [&](const std::vector<Tensor>&) {
        Tensor y = (*model)(b.input);
        return model->loss(y, b, LossKind::CrossEntropy);
      },
      params, tol, eps);
}

}  // namespace

TEST_F(engine_gradcheck, GptWithAndWithoutCheckpointing) {
  const char* spec = R"({"model":{"kind":"gpt","vocab":7,"seq":5,"dim":8,"depth":2,"heads":2}})";
  check_family(spec, {CheckpointSpec::Mode::None, 0}, 1e-6, 1e-6);
  check_family(spec, {CheckpointSpec::Mode::Block, 0}, 1e-6, 1e-6);
}

TEST_F(engine_gradcheck, LlamaWithAndWithoutCheckpointing) {
  const char* spec =
      R"({"model":{"kind":"llama","vocab":7,"seq":5,"dim":8,"depth":2,"heads":2,"kv_heads":1,"ffn":12}})";
  check_family(spec, {CheckpointSpec::Mode::None, 0}, 2e-2, 1e-3);
  check_family(spec, {CheckpointSpec::Mode::Every, 1}, 2e-2, 1e-3);
}

namespace {

// Fine-tuning on a tiny model in float64: the gradients of the trainable parameters match
// finite differences and the frozen ones get none. LoRA's B starts at zero, which would
// leave A's gradient zero, so every trainable parameter gets random values first.
void check_finetune(const std::string& spec_json, double tol, double eps, size_t want_trainable) {
  RunSpec spec = vramlab::spectest::spec(spec_json);
  auto model = build_model(spec.model);
  model->apply_finetune(spec.finetune);
  model->to_dtype(DType::Float64);
  std::vector<Tensor> params = model->parameters();
  std::mt19937 rng(7);
  std::normal_distribution<double> normal(0.0, 0.5);
  size_t trainable = 0;
  for (auto& p : params) {
    if (!p.requires_grad()) continue;
    ++trainable;
    double* d = static_cast<double*>(p.data_ptr());
    for (int64_t k = 0; k < p.numel(); ++k) d[k] = normal(rng);
  }
  EXPECT_EQ(trainable, want_trainable);
  Batch b = model->make_batch(2, 0, LossKind::CrossEntropy);
  gradcheck(
      [&](const std::vector<Tensor>&) {
        Tensor y = (*model)(b.input);
        return model->loss(y, b, LossKind::CrossEntropy);
      },
      params, tol, eps);
  for (auto& p : params)
    if (!p.requires_grad()) EXPECT_FALSE(p.grad().defined()) << "a frozen parameter got a gradient";
}

}  // namespace

TEST_F(engine_gradcheck, GptLoraAndFrozenBlocks) {
  // LoRA on c_attn and c_fc of 2 blocks: 4 adapters x (A, B).
  check_finetune(R"({"model":{"kind":"gpt","vocab":7,"seq":5,"dim":8,"depth":2,"heads":2},
                     "finetune":{"method":"lora","rank":2,"alpha":4,"targets":["attn","fc"]}})",
                 1e-6, 1e-6, 8);
  // wte, wpe and block 0 frozen: block 1 (12 tensors) and the final norm (2) train.
  check_finetune(R"({"model":{"kind":"gpt","vocab":7,"seq":5,"dim":8,"depth":2,"heads":2},
                     "finetune":{"method":"freeze","blocks":1}})",
                 1e-6, 1e-6, 14);
}

TEST_F(engine_gradcheck, LlamaLoraAndFrozenBlocks) {
  check_finetune(R"({"model":{"kind":"llama","vocab":7,"seq":5,"dim":8,"depth":2,"heads":2,"kv_heads":1,"ffn":12},
                     "finetune":{"method":"lora","rank":2,"alpha":4,"targets":["q","v","down"]}})",
                 2e-2, 1e-3, 12);
  // tok and block 0 frozen: block 1 (9 tensors), the final norm and the output head train.
  check_finetune(R"({"model":{"kind":"llama","vocab":7,"seq":5,"dim":8,"depth":2,"heads":2,"kv_heads":1,"ffn":12},
                     "finetune":{"method":"freeze","blocks":1}})",
                 2e-2, 1e-3, 11);
}
