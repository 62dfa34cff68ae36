// The CUDA backend as the simulated device's twin, on a GPU machine (skipped elsewhere):
// - every measured configuration (test/refs/measured/*.json and the published
//   transformer references: the MLP families, transformers, fine-tuning, generation)
//   runs on cuda:0 and on the simulated preset of that GPU in one process; every
//   reading must be equal. With VRAMLAB_TWIN_OUT set, one JSON line per configuration
//   (spec, cuda, sim and the stored PyTorch readings) goes there for
//   bench/torch/compare_twin.py, which sets them beside PyTorch run in the same session;
// - both transformer families learn a synthetic task in 200 steps on the GPU.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>

#include "engine/autocast/autocast.h"
#include "engine/backends/backend.h"
#include "engine/ops/ops.h"
#include "engine/experiment/session.h"
#include "engine/models/family.h"
#include "engine/optim/optimizer.h"
#include "spec_util.h"

#ifdef VRAMLAB_HAVE_CUDA
#include "engine/backends/cuda/cuda_backend.h"
#endif

using namespace vramlab;
using namespace vramlab::engine;

namespace {

std::string sim_twin(std::string* why) {
  if (!make_cuda_backend(why)) return "";
  std::string name = open_device("cuda:0")->info().name;
  if (name.find("H200") != std::string::npos) return "sim:h200-141gb";
  if (name.find("H100") != std::string::npos) return "sim:h100-80gb";
  *why = "no simulated preset for " + name;
  return "";
}

SpecValue readings_of(const RunResult& r) {
  std::map<std::string, SpecValue> f;
  for (auto& [k, v] : r.readings) f[k] = SpecValue::number(double(v));
  return SpecValue::object(f);
}

}  // namespace

TEST(EngineCudaTwin, EveryMeasuredConfigurationReadsTheSameOnCudaAndSim) {
  std::string why;
  const std::string sim = sim_twin(&why);
  if (sim.empty()) GTEST_SKIP() << why;
  struct Source {
    const char* file;
    const char* section;  // "" for {runs: [...]}
    const char* warmup;   // when a run names none
  };
  const Source sources[] = {
      {"test/refs/measured/h200_protocol_matmul_warmup.json", "", "matmul"},
      {"test/refs/measured/h200_protocol_loss_matmul_warmup.json", "", "matmul"},
      {"test/refs/measured/h200_published_linear_warmup.json", "", "linear"},
      {"test/refs/measured/h100_transformers_train.json", "", "linear"},
      {"test/refs/measured/h100_transformers_finetune.json", "", "linear"},
      {"test/refs/transformer_reference.json", "transformers", "linear"},
      {"test/refs/transformer_reference.json", "finetune_and_generate", "linear"},
      {"test/refs/transformer_reference.json", "variable_shapes", "linear"},
  };
  std::ofstream out;
  if (const char* p = std::getenv("VRAMLAB_TWIN_OUT")) out.open(p);
  int equal = 0, differ = 0, failed = 0;
  for (const auto& src : sources) {
    SpecValue doc = load_json_file(std::string(VRAMLAB_SOURCE_DIR) + "/" + src.file);
    const auto& runs = *src.section ? doc[src.section].items() : doc["runs"].items();
    for (const SpecValue& run : runs) {
      if (!run.find("readings") || run.find("error")) continue;
      RunSpec spec = vramlab::spectest::spec(run["spec"]);
      RunOptions o;
      o.warmup = run.find("warmup") ? run["warmup"].as_string("warmup") : src.warmup;
      SCOPED_TRACE(std::string(src.file) + " " + run["spec"].to_json());
      RunResult c, s;
      try {
        spec.device = "cuda:0";
        c = run_experiment(spec, o);
        spec.device = sim;
        s = run_experiment(spec, o);
      } catch (const std::exception& e) {
        ADD_FAILURE() << e.what();
        ++failed;
        continue;
      }
      bool same = c.readings == s.readings && c.base == s.base;
      EXPECT_TRUE(same);
      if (!same)
        for (size_t i = 0; i < std::min(c.readings.size(), s.readings.size()); ++i)
          if (c.readings[i] != s.readings[i])
            std::printf("  differ %s %s: cuda %lld sim %lld\n", run["spec"].to_json().substr(0, 120).c_str(),
                        c.readings[i].first.c_str(), (long long)c.readings[i].second, (long long)s.readings[i].second);
      (same ? equal : differ)++;
      if (out)
        out << SpecValue::object({{"file", SpecValue::string(src.file)},
                                  {"warmup", SpecValue::string(o.warmup)},
                                  {"spec", run["spec"]},
                                  {"cuda", readings_of(c)},
                                  {"sim", readings_of(s)},
                                  {"stored", run["readings"]}})
                   .to_json()
            << "\n";
    }
  }
  std::printf("  twin on cuda:0 vs %s: %d equal, %d differ, %d failed (of %d)\n", sim.c_str(), equal, differ, failed,
              equal + differ + failed);
  EXPECT_GE(equal + differ, 80);
}

#ifdef VRAMLAB_HAVE_CUDA

// x[t+1] = (x[t] + 1) mod V from a random start: a deterministic next token to learn.
TEST(EngineCudaTransformer, BothFamiliesLearnASyntheticTaskIn200Steps) {
  std::string why;
  if (!make_cuda_backend(&why)) GTEST_SKIP() << why;
  const char* families[] = {
      R"({"model":{"kind":"gpt","vocab":16,"seq":32,"dim":64,"depth":2,"heads":4},"optimizer":{"kind":"adamw","lr":0.003}})",
      R"({"model":{"kind":"llama","vocab":16,"seq":32,"dim":64,"depth":2,"heads":4,"kv_heads":2,"ffn":128},"optimizer":{"kind":"adamw","lr":0.003}})"};
  for (const char* js : families)
    for (bool bf16 : {false, true}) {
      RunSpec spec = vramlab::spectest::spec(js);
      Session s = open_session("cuda:0", "cuda", "");
      ContextGuard guard(*s.ctx);
      s.ctx->manual_seed(7);
      auto model = build_model(spec.model);
      auto opt = make_optimizer(spec.optimizer, model->parameters());
      auto& be = static_cast<cuda::CudaBackend&>(s.ctx->backend());
      const int64_t B = 8, T = 32, V = 16;
      std::vector<long long> x(size_t(B * T)), y(size_t(B * T));
      uint64_t rng = 12345;
      double first = 0, last = 0;
      for (int step = 0; step < 200; ++step) {
        for (int64_t b = 0; b < B; ++b) {
          rng = rng * 6364136223846793005ull + 1442695040888963407ull;
          long long start = (long long)((rng >> 33) % uint64_t(V));
          for (int64_t t = 0; t < T; ++t) {
            x[size_t(b * T + t)] = (start + t) % V;
            y[size_t(b * T + t)] = (start + t + 1) % V;
          }
        }
        Batch batch;
        batch.input = empty({B, T}, DType::Int64);
        batch.target = empty({B, T}, DType::Int64);
        be.copy_from_host(batch.input, x.data(), x.size() * sizeof(long long));
        be.copy_from_host(batch.target, y.data(), y.size() * sizeof(long long));
        Tensor logits;
        if (bf16) {
          AutocastGuard ag(true, DType::BFloat16);
          logits = (*model)(batch.input);
        } else {
          logits = (*model)(batch.input);
        }
        Tensor loss = model->loss(logits, batch, "cross_entropy");
        logits = Tensor();
        const double v = loss.item();
        if (step < 5) first += v / 5;
        if (step >= 195) last += v / 5;
        loss.backward();
        opt->step();
        opt->zero_grad(true);
      }
      EXPECT_LT(last, first / 4) << js << (bf16 ? " bf16" : " fp32") << ": first " << first << " last " << last;
      std::printf("  %s %s: loss %.4f -> %.4f\n", spec.model.kind.c_str(), bf16 ? "bf16" : "fp32", first, last);
    }
}

#endif  // VRAMLAB_HAVE_CUDA
