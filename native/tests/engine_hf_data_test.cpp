// The Hugging Face models on a data backend (the CPU reference, whose kernels compute in
// double): grouped-query attention, dropout (with attention dropout), the MoE routing and
// every architecture's training step compute real values, with gradients that match
// central finite differences. (The cpu backend does not model CUDA: its memory readings
// are the efficient-attention layout without cuBLAS workspaces, so they are not compared
// with the simulated GPU here; engine_cuda_twin_test does that on cuda:0.)
#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "engine/core/grad_mode.h"
#include "engine/experiment/session.h"
#include "engine/models/family.h"
#include "engine/models/kv_cache.h"
#include "engine/ops/attention.h"
#include "engine/ops/dropout.h"
#include "engine/ops/ops.h"
#include "engine/optim/optimizer.h"
#include "hf_spec_util.h"

using namespace vramlab::engine;
using vramlab::spectest::hf_config;
using vramlab::spectest::num;

namespace {

Session cpu_session() { return open_session("sim:h100-80gb", "cpu", ""); }

Tensor input(const Shape& s) {
  Tensor t = randn(s, DType::Float64);
  t.requires_grad_(true);
  return t;
}

// d(sum f)/d(input) by autograd against central differences; `reseed` runs before every
// evaluation, so random masks repeat.
void gradcheck(const std::function<Tensor(const std::vector<Tensor>&)>& f, std::vector<Tensor> inputs,
               const std::function<void()>& reseed, double tol = 1e-6, double eps = 1e-6) {
  reseed();
  Tensor loss = sum(f(inputs));
  loss.backward();
  for (size_t i = 0; i < inputs.size(); ++i) {
    ASSERT_TRUE(inputs[i].grad().defined()) << "input " << i;
    auto analytic = inputs[i].grad().to_vector();
    double* data = static_cast<double*>(inputs[i].data_ptr());
    for (int64_t k = 0; k < inputs[i].numel(); ++k) {
      NoGradGuard ng;
      const double orig = data[k];
      data[k] = orig + eps;
      reseed();
      const double lp = sum(f(inputs)).item();
      data[k] = orig - eps;
      reseed();
      const double lm = sum(f(inputs)).item();
      data[k] = orig;
      const double numeric = (lp - lm) / (2 * eps);
      EXPECT_NEAR(analytic[size_t(k)], numeric, tol * std::max(1.0, std::fabs(numeric)))
          << "input " << i << " element " << k;
    }
  }
}

// A tiny config.json of `arch` (4 query heads over 2 kv heads, head dim 8).
SpecValue tiny(const std::string& arch, std::map<std::string, SpecValue> extra = {}) {
  std::map<std::string, SpecValue> f;
  if (arch == "GPT2LMHeadModel") {
    f = {{"vocab_size", num(24)},
         {"n_embd", num(32)},
         {"n_layer", num(2)},
         {"n_head", num(4)},
         {"n_positions", num(64)}};
  } else {
    f = {{"vocab_size", num(24)},
         {"hidden_size", num(32)},
         {"intermediate_size", num(48)},
         {"num_hidden_layers", num(2)},
         {"num_attention_heads", num(4)},
         {"num_key_value_heads", num(2)},
         {"head_dim", num(8)},
         {"max_position_embeddings", num(64)}};
    if (arch == "MixtralForCausalLM") f["num_local_experts"] = num(4);
    if (arch == "Qwen3MoeForCausalLM") {
      f["num_experts"] = num(4);
      f["num_experts_per_tok"] = num(2);
      f["moe_intermediate_size"] = num(24);
    }
    if (arch == "Gemma2ForCausalLM") f["query_pre_attn_scalar"] = num(8);
    if (arch == "Qwen2ForCausalLM") f["tie_word_embeddings"] = SpecValue::boolean(true);
  }
  for (auto& [k, v] : extra) f[k] = v;
  return hf_config(arch, SpecValue::object(f));
}

std::unique_ptr<Model> build(const std::string& arch, DType dt, int64_t seq) {
  KindArgs k;
  k.kind = "hf";
  k.path = "spec.model";
  k.args = SpecValue::object({{"kind", SpecValue::string("hf")},
                              {"config", tiny(arch)},
                              {"seq", num(double(seq))},
                              {"attn_implementation", SpecValue::string("sdpa")}});
  return build_model(k, dt);
}

// The model's own loss (labels = input_ids, shifted inside forward).
Tensor loss_of(Model& m, const Tensor& ids) {
  Tensor logits = m.forward(ids);
  Batch b;
  return m.loss(logits, b, LossKind::CrossEntropy);
}

// A fixed batch of token ids (a repeating pattern the model can fit).
Tensor token_batch(int64_t B, int64_t T, int64_t V) {
  Tensor ids = empty({B, T}, DType::Int64);
  int64_t* p = static_cast<int64_t*>(ids.data_ptr());
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < T; ++t) p[b * T + t] = (3 * b + 5 * t + (t * t) % 7) % V;
  return ids;
}

const char* kArchitectures[] = {"LlamaForCausalLM",   "Qwen2ForCausalLM",   "Gemma2ForCausalLM", "MixtralForCausalLM",
                                "GPT2LMHeadModel",    "Qwen3ForCausalLM",   "Phi3ForCausalLM",   "Olmo2ForCausalLM",
                                "MistralForCausalLM", "Qwen3MoeForCausalLM"};

}  // namespace

TEST(engine_hf_data, GroupedQueryAttentionEqualsRepeatedKeysAndItsGradientsMatch) {
  Session s = cpu_session();
  ContextGuard g(*s.ctx);
  s.ctx->manual_seed(3);
  Tensor q = input({2, 4, 5, 8}), k = input({2, 2, 5, 8}), v = input({2, 2, 5, 8});
  // repeat_kv by hand: query head h reads kv head h / 2
  auto rep = [](const Tensor& t) {
    Tensor h0 = t.slice(1, 0, 1), h1 = t.slice(1, 1, 2);
    return cat({h0, h0, h1, h1}, 1);
  };
  {
    NoGradGuard ng;
    auto a = scaled_dot_product_attention(q, k, v, true, true, 0.0).to_vector();
    auto b = scaled_dot_product_attention(q, rep(k), rep(v), true).to_vector();
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 1e-12) << i;
  }
  gradcheck([](const auto& x) { return scaled_dot_product_attention(x[0], x[1], x[2], true, true, 0.0); }, {q, k, v},
            [] {});
  gradcheck([](const auto& x) { return scaled_dot_product_attention(x[0], x[1], x[2], false, true, 0.0); },
            {input({1, 6, 3, 8}), input({1, 2, 4, 8}), input({1, 2, 4, 8})}, [] {});
}

TEST(engine_hf_data, DropoutMasksAreRealAndTheirGradientsMatch) {
  Session s = cpu_session();
  ContextGuard g(*s.ctx);
  s.ctx->manual_seed(5);
  {
    // a fraction p of the elements is zeroed, the rest scaled by 1 / (1 - p)
    Tensor x = full({100, 100}, 1.0, DType::Float64);
    auto y = dropout(x, 0.25, true).to_vector();
    int64_t dropped = 0;
    for (double e : y) {
      if (e == 0)
        ++dropped;
      else
        EXPECT_DOUBLE_EQ(e, 1.0 / 0.75);
    }
    EXPECT_NEAR(double(dropped) / 1e4, 0.25, 0.02);
  }
  auto reseed = [&] { s.ctx->manual_seed(11); };
  gradcheck([](const auto& x) { return dropout(x[0], 0.3, true); }, {input({4, 7})}, reseed);
  // attention dropout: the same keep decisions in the backward as in the forward
  gradcheck([](const auto& x) { return scaled_dot_product_attention(x[0], x[1], x[2], true, true, 0.0, 0.3); },
            {input({1, 4, 5, 8}), input({1, 2, 5, 8}), input({1, 2, 5, 8})}, reseed);
  {
    // p = 0.5 of a causal row is not all kept: the output differs from the undropped one
    reseed();
    NoGradGuard ng;
    Tensor q = randn({1, 2, 6, 8}, DType::Float64), k = randn({1, 2, 6, 8}, DType::Float64),
           v = randn({1, 2, 6, 8}, DType::Float64);
    auto a = scaled_dot_product_attention(q, k, v, true, false, 0.0, 0.5).to_vector();
    auto b = scaled_dot_product_attention(q, k, v, true, false, 0.0, 0.0).to_vector();
    double diff = 0;
    for (size_t i = 0; i < a.size(); ++i) diff += std::fabs(a[i] - b[i]);
    EXPECT_GT(diff, 1e-3);
  }
}

// Every architecture: a fixed batch, AdamW, 12 steps on the cpu backend; the loss is
// finite throughout and falls.
TEST(engine_hf_data, EveryArchitectureTrainsWithAFallingLoss) {
  for (const char* arch : kArchitectures) {
    SCOPED_TRACE(arch);
    Session s = cpu_session();
    ContextGuard g(*s.ctx);
    s.ctx->manual_seed(7);
    auto model = build(arch, DType::Float32, 12);
    KindArgs opt;
    opt.kind = "adamw";
    opt.args = merge_values(*vramlab::spectest::defaults()["optimizers"].find("adamw"),
                            SpecValue::object({{"lr", num(0.01)}}));
    auto optimizer = make_optimizer(opt, model->parameters());
    Tensor ids = token_batch(2, 12, 24);
    double first = 0, last = 0;
    for (int step = 0; step < 12; ++step) {
      Tensor loss = loss_of(*model, ids);
      const double v = loss.item();
      ASSERT_TRUE(std::isfinite(v)) << "step " << step;
      if (step == 0) first = v;
      last = v;
      loss.backward();
      optimizer->step();
      optimizer->zero_grad(true);
    }
    EXPECT_LT(last, 0.7 * first) << "first " << first << " last " << last;
    std::printf("  %-22s loss %.4f -> %.4f\n", arch, first, last);
  }
}

// Gradients of whole models (float64 weights) against central differences, for a few
// elements of every parameter. HF upcasts norms and logits to float32 inside, so the
// loss carries float32 rounding: a wider step (1e-2) and tolerance (5%) than the op
// checks, still far below what a wrong mask, head mapping or routing gradient gives.
TEST(engine_hf_data, ModelGradientsMatchFiniteDifferences) {
  for (const char* arch : {"LlamaForCausalLM", "Qwen2ForCausalLM", "Gemma2ForCausalLM", "MixtralForCausalLM",
                           "GPT2LMHeadModel", "Phi3ForCausalLM", "Olmo2ForCausalLM", "Qwen3MoeForCausalLM"}) {
    SCOPED_TRACE(arch);
    Session s = cpu_session();
    ContextGuard g(*s.ctx);
    s.ctx->manual_seed(9);
    auto model = build(arch, DType::Float64, 6);
    Tensor ids = token_batch(1, 6, 24);
    auto eval = [&] {
      s.ctx->manual_seed(21);  // the same dropout masks every time
      return loss_of(*model, ids);
    };
    Tensor loss = eval();
    loss.backward();
    int checked = 0;
    for (auto& [name, p] : model->named_parameters()) {
      ASSERT_TRUE(p.grad().defined()) << name;
      auto grad = p.grad().to_vector();
      double* data = static_cast<double*>(p.data_ptr());
      for (int64_t k : {int64_t(0), p.numel() / 2, p.numel() - 1}) {
        const double orig = data[k], eps = 1e-2;
        data[k] = orig + eps;
        const double lp = eval().item();
        data[k] = orig - eps;
        const double lm = eval().item();
        data[k] = orig;
        const double numeric = (lp - lm) / (2 * eps);
        EXPECT_NEAR(grad[size_t(k)], numeric, 5e-4 + 5e-2 * std::fabs(numeric)) << name << "[" << k << "]";
        ++checked;
      }
    }
    EXPECT_GT(checked, 20);
  }
}

// Generation on a data backend: the prompt through the cache, then one greedy token at
// position T; its logits equal those of a full forward over prompt + token (the cache's
// keys and values, and rotary tables that start at the past length, are right).
TEST(engine_hf_data, CachedDecodingEqualsAFullForward) {
  for (const char* arch : {"LlamaForCausalLM", "Qwen2ForCausalLM", "Olmo2ForCausalLM", "Phi3ForCausalLM"}) {
    SCOPED_TRACE(arch);
    Session s = cpu_session();
    ContextGuard g(*s.ctx);
    s.ctx->manual_seed(13);
    auto model = build(arch, DType::Float32, 8);
    NoGradGuard ng;
    const int64_t B = 2, T = 7, V = 24;
    Tensor ids = token_batch(B, T, V);
    KvCache cache(size_t(model->num_blocks()), false, T + 1);
    Tensor first = model->forward_cached(ids, cache, 0);  // (B, 1, V)
    Tensor next = argmax(first, true);                    // (B, 1, 1)
    Tensor step = model->forward_cached(next.view({B, 1}), cache, T);
    Tensor full = model->forward(cat({ids, next.view({B, 1})}, 1));  // (B, T + 1, V)
    auto a = step.to_vector(), b = full.slice(1, T, T + 1).to_vector();
    ASSERT_EQ(a.size(), b.size());
    double worst = 0;
    for (size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::fabs(a[i] - b[i]));
    EXPECT_LT(worst, 1e-4);
  }
}
