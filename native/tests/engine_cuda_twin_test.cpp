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
#include <cstring>
#include <unistd.h>
#include <vector>
#include <fstream>

#include "engine/autocast/autocast.h"
#include "engine/backends/backend.h"
#include "engine/ops/ops.h"
#include "engine/experiment/session.h"
#include "engine/models/family.h"
#include "engine/optim/optimizer.h"
#include "hf_spec_util.h"
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

namespace {

struct TwinConfig {
  std::string file, warmup;
  SpecValue spec, stored;
};

// Every measured configuration with readings, in file order.
std::vector<TwinConfig> twin_configs() {
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
  std::vector<TwinConfig> out;
  // Hugging Face models (the measuring protocol's spec format, hf_protocol.py): Llama
  // (GQA), Qwen2 (biases, tied), GPT-2 (dropout), Mixtral (MoE routing), Gemma2, and
  // the other architectures, training and generation.
  for (const char* file : {"test/refs/hf_reference.json", "test/refs/measured/h100_hf_more.json"}) {
    SpecValue doc = load_json_file(std::string(VRAMLAB_SOURCE_DIR) + "/" + file);
    for (const SpecValue& run : doc["runs"].items()) {
      if (!run.find("readings") || run.find("error")) continue;
      // Gemma3's local rotary tables are computed on the simulated devices only
      if (run["spec"]["hf"]["arch"].as_string("arch") == "Gemma3ForCausalLM") continue;
      out.push_back({file, "linear", vramlab::spectest::hf_spec(run["spec"]), run["readings"]});
    }
  }
  for (const auto& src : sources) {
    SpecValue doc = load_json_file(std::string(VRAMLAB_SOURCE_DIR) + "/" + src.file);
    const auto& runs = *src.section ? doc[src.section].items() : doc["runs"].items();
    for (const SpecValue& run : runs) {
      if (!run.find("readings") || run.find("error")) continue;
      out.push_back({src.file, run.find("warmup") ? run["warmup"].as_string("warmup") : src.warmup, run["spec"],
                     run["readings"]});
    }
  }
  return out;
}

// One configuration on both devices, as one JSON line: {cuda, sim}, {error}, or {refused}
// when the simulated device refuses it with the same words (a case the lab does not model
// on any device, e.g. GQA on PyTorch's math fallback: not a difference of the twin).
std::string run_twin(const TwinConfig& t, const std::string& sim) {
  RunSpec spec = vramlab::spectest::spec(t.spec);
  RunOptions o;
  o.warmup = t.warmup;
  try {
    spec.device = "cuda:0";
    RunResult c = run_experiment(spec, o);
    spec.device = sim;
    RunResult s = run_experiment(spec, o);
    auto base = [](const RunResult& r) { return SpecValue::number(double(r.base)); };
    return SpecValue::object(
               {{"cuda", readings_of(c)}, {"sim", readings_of(s)}, {"cuda_base", base(c)}, {"sim_base", base(s)}})
        .to_json();
  } catch (const std::exception& e) {
    const std::string cuda_error = e.what();
    try {
      spec.device = sim;
      run_experiment(spec, o);
    } catch (const std::exception& s) {
      if (cuda_error == s.what()) return SpecValue::object({{"refused", SpecValue::string(cuda_error)}}).to_json();
    }
    return SpecValue::object({{"error", SpecValue::string(cuda_error)}}).to_json();
  }
}

constexpr const char* kTwinTest = "EngineCudaTwin.EveryMeasuredConfigurationReadsTheSameOnCudaAndSim";

}  // namespace

// Each configuration runs in a fresh child process, as PyTorch's protocol measures each
// one in a fresh process: the driver's virtual-address layout (which decides the
// allocator's best-fit ties between segments) is a fresh process's on both sides, and
// the simulated device models exactly that layout. Several children at once.
TEST(EngineCudaTwin, EveryMeasuredConfigurationReadsTheSameOnCudaAndSim) {
  std::string why;
  const std::string sim = sim_twin(&why);
  if (sim.empty()) GTEST_SKIP() << why;
  std::vector<TwinConfig> configs = twin_configs();
  if (const char* child = std::getenv("VRAMLAB_TWIN_CHILD")) {  // the child: one configuration
    std::printf("TWIN %s\n", run_twin(configs.at(std::stoul(child)), sim).c_str());
    return;
  }
  std::vector<std::string> lines(configs.size());
  const size_t parallel = 6;
  for (size_t first = 0; first < configs.size(); first += parallel) {
    std::vector<std::pair<size_t, FILE*>> kids;
    for (size_t i = first; i < std::min(configs.size(), first + parallel); ++i) {
      std::string cmd = "VRAMLAB_TWIN_CHILD=" + std::to_string(i) + " /proc/" + std::to_string(getpid()) +
                        "/exe --gtest_filter=" + kTwinTest + " 2>&1";
      kids.push_back({i, popen(cmd.c_str(), "r")});
    }
    for (auto& [i, f] : kids) {
      char buf[1 << 16];
      while (f && std::fgets(buf, sizeof buf, f))
        if (std::strncmp(buf, "TWIN ", 5) == 0) lines[i] = std::string(buf + 5);
      if (f) pclose(f);
    }
  }
  std::ofstream out;
  if (const char* p = std::getenv("VRAMLAB_TWIN_OUT")) out.open(p);
  int equal = 0, differ = 0, failed = 0, refused = 0, sim_only = 0;
  for (size_t i = 0; i < configs.size(); ++i) {
    const TwinConfig& t = configs[i];
    SCOPED_TRACE(t.file + " " + t.spec.to_json());
    if (lines[i].empty()) {
      ADD_FAILURE() << "child " << i << " gave no result";
      ++failed;
      continue;
    }
    SpecValue r = parse_json(lines[i]);
    if (r.find("refused")) {
      std::printf("  refused on both devices: %s\n", r["refused"].as_string("refused").c_str());
      ++refused;
      continue;
    }
    if (r.find("error")) {
      // a path the data backends do not compute yet, refused on cuda by name (listed, not hidden)
      const std::string e = r["error"].as_string("error");
      if (e.find("runs on the simulated device only") != std::string::npos) {
        std::printf("  simulated device only: %s\n", e.c_str());
        ++sim_only;
        continue;
      }
      ADD_FAILURE() << e;
      ++failed;
      continue;
    }
    bool same = r["cuda"].to_json() == r["sim"].to_json() && r["cuda_base"].to_json() == r["sim_base"].to_json();
    EXPECT_TRUE(same);
    if (!same)
      for (auto& [k, v] : r["cuda"].fields())
        if (v.to_json() != r["sim"][k].to_json())
          std::printf("  differ %s %s: cuda %s sim %s\n", t.spec.to_json().substr(0, 120).c_str(), k.c_str(),
                      v.to_json().c_str(), r["sim"][k].to_json().c_str());
    (same ? equal : differ)++;
    if (const SpecValue* hf = t.spec["model"].find("config"))
      std::printf("  hf %-22s %s: %s (peak cuda %s sim %s)\n",
                  (*hf)["architectures"].items().at(0).as_string("arch").c_str(), t.file.c_str(),
                  same ? "equal" : "DIFFER",
                  r["cuda"].find("it1_peak_fwd_bwd") ? r["cuda"]["it1_peak_fwd_bwd"].to_json().c_str() : "-",
                  r["sim"].find("it1_peak_fwd_bwd") ? r["sim"]["it1_peak_fwd_bwd"].to_json().c_str() : "-");
    if (out)
      out << SpecValue::object({{"file", SpecValue::string(t.file)},
                                {"warmup", SpecValue::string(t.warmup)},
                                {"spec", t.spec},
                                {"cuda", r["cuda"]},
                                {"sim", r["sim"]},
                                {"stored", t.stored}})
                 .to_json()
          << "\n";
  }
  std::printf(
      "  twin on cuda:0 vs %s, each in a fresh process: %d equal, %d differ, %d failed, %d refused by both, %d on the "
      "simulated device only (of %d)\n",
      sim.c_str(), equal, differ, failed, refused, sim_only, equal + differ + failed + refused + sim_only);
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
        Tensor loss = model->loss(logits, batch, LossKind::CrossEntropy);
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
