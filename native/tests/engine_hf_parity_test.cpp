// The hf family (Hugging Face transformers 5.17 + peft 0.21 decoders built from their
// config.json) against PyTorch 2.11 on an H200: test/refs/hf_reference.json, measured
// with hf_protocol.py (random init, HF Trainer-style steps, generate() with the dynamic
// cache). Each published run is replayed on the simulated H200; the runs the engine
// models are held byte for byte, the rest are printed with their differences.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "device/device.h"
#include "hf_spec_util.h"

using namespace vramlab::engine;

namespace {

const SpecValue& load(const std::string& rel) { return vramlab::spectest::repo_json(rel); }
const SpecValue& reference() { return load("test/refs/hf_reference.json"); }
const SpecValue& measured() { return load("test/refs/measured/h100_hf_more.json"); }
const SpecValue& measured_moe() { return load("test/refs/measured/h100_hf_moe.json"); }

// The readings of run `i` of the reference that differ from the engine's, "" when exact.
std::string diffs(const SpecValue& run, const RunResult& r) {
  std::ostringstream out;
  for (auto& [key, val] : run["readings"].fields()) {
    const int64_t torch = val.as_int(key), ours = r.at(key);
    if (ours == torch) continue;
    char buf[128];
    std::snprintf(buf, sizeof buf, " %s:%+lld", key.c_str(), static_cast<long long>(ours - torch));
    out << buf;
  }
  return out.str();
}

RunResult replay(const SpecValue& run, const std::string& device = "sim:h200-141gb") {
  return run_experiment(read_run_spec(vramlab::spectest::hf_spec(run["spec"], device)));
}

void expect_within(size_t i, int64_t tolerance) {
  const SpecValue& run = reference()["runs"].items().at(i);
  SCOPED_TRACE(run["spec"].to_json().substr(0, 300));
  RunResult r = replay(run);
  for (auto& [key, val] : run["readings"].fields()) {
    if (tolerance == 0)
      EXPECT_EQ(r.at(key), val.as_int(key)) << key;
    else
      EXPECT_LE(std::llabs(r.at(key) - val.as_int(key)), tolerance) << key;
  }
  EXPECT_EQ(r.num_parameters, run["total"].as_int("total"));
  EXPECT_EQ(r.trainable_parameters, run["trainable"].as_int("trainable"));
}

// Prints every run of a reference file with its differences (bytes), exact or not.
void report(const SpecValue& file, const char* label, const std::string& device) {
  const auto& runs = file["runs"].items();
  for (size_t i = 0; i < runs.size(); ++i) {
    std::string d;
    try {
      d = diffs(runs[i], replay(runs[i], device));
      std::printf("  %s %s[%zu] %s%s\n", d.empty() ? "EXACT " : "differ", label, i,
                  runs[i]["spec"].to_json().substr(0, 120).c_str(), d.c_str());
    } catch (const std::exception& e) {
      std::printf("  n/a    %s[%zu] %s: %s\n", label, i, runs[i]["spec"]["hf"]["arch"].to_json().c_str(), e.what());
    }
  }
}

}  // namespace

TEST(engine_hf_parity, PublishedRunsReport) { report(reference(), "hf_reference", "sim:h200-141gb"); }
TEST(engine_hf_parity, MeasuredRunsReport) { report(measured(), "h100_hf_more", "sim:h100-80gb"); }
TEST(engine_hf_parity, MeasuredMoeRunsReport) { report(measured_moe(), "h100_hf_moe", "sim:h100-80gb"); }

// Llama (bf16 weights and autocast, AdamW) and Llama + PEFT LoRA on q_proj/v_proj: every
// reading byte for byte, and the parameter counts.
TEST(engine_hf_parity, LlamaTrainingIsExact) { expect_within(0, 0); }
TEST(engine_hf_parity, LlamaLoraTrainingIsExact) { expect_within(1, 0); }
// Mixtral (4 experts, top 2; bf16 weights and autocast, AdamW): the router, the sort by
// expert and the two grouped_mm of 5.17's default experts path, every reading exact.
TEST(engine_hf_parity, MixtralTrainingIsExact) { expect_within(4, 0); }
// Qwen2 (tied embeddings, q/k/v biases): every reading exact with the driver's takes in the
// address layout (device/driver_takes.h): the first scan's 4 MiB and the cuDNN handle's 8
// MiB decide which holes its 2 MiB segments find (it was 1,310,720 B low after the backward).
TEST(engine_hf_parity, Qwen2TiedTrainingIsExact) { expect_within(3, 0); }
// Llama generate() with the dynamic cache: params, input, peak_generate (the prefill's last
// MLP, with generate()'s own tensors and the copied cache), after_generate (the ids), reserved.
TEST(engine_hf_parity, LlamaGenerationIsExact) { expect_within(5, 0); }

// Our H100 measurements (h100_hf_more.json) the engine matches byte for byte: Qwen3 (tied,
// q/k norms), Mistral, Phi-3 (fused projections), OLMo2 (post-norms, float32 rotary), Gemma3
// text (sandwich norms, scaled embeddings), Gemma2 (soft-capped logits), Qwen3-MoE (grouped_mm
// experts), Llama with LoRA + gradient checkpointing, Llama with checkpointing alone (its
// reserved peak hangs on a 126 MiB segment's 2 MiB tail: the driver reserves whole 32 MiB
// units, va_layout.h), fp32 weights under bf16 autocast, LoRA on
// all seven projections, Qwen2 (tied, q/k/v biases) with LoRA, Llama generate(), GPT-2 with
// fp32 weights under bf16 autocast, Llama with fp32 weights (grouped-query attention in the
// math SDPA: the scaled query copied by matmul) and Llama without GQA. Mistral's and GQA-less Llama's reserved peaks
// hang on the rotary backward's layout: its gradients come out contiguous in (B, H, T, D), so each projection's view
// backward copies them (a small-pool block each at these sizes).
TEST(engine_hf_parity, MeasuredArchitecturesAreExact) {
  for (size_t i : {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}) {
    const SpecValue& run = measured()["runs"].items().at(i);
    SCOPED_TRACE(run["spec"]["hf"]["arch"].to_json());
    RunResult r = replay(run, "sim:h100-80gb");
    EXPECT_EQ(diffs(run, r), "");
    EXPECT_EQ(r.num_parameters, run["total"].as_int("total"));
    EXPECT_EQ(r.trainable_parameters, run["trainable"].as_int("trainable"));
  }
}

// Llama-3-8B LoRA r16 + checkpointing at batch 1 (h100_hf_llama3_8b.json): every reading
// exact at three lengths, and under a 24 GB card's cap the same answer as PyTorch at every
// measured length: 3584 tokens fit (reserved peak exact), 3840 run out in iteration 1's
// backward with PyTorch's message, 4224 and 4256 fit, 4312 runs out. The cap answer hangs on fragmentation, so on the
// attention's q/k/v living until its forward returns: freed before o_proj, the lab fitted 3840 and said 4279 was the
// limit.
namespace {
const SpecValue& llama3_8b() { return load("test/refs/measured/h100_hf_llama3_8b.json"); }

RunResult capped(const SpecValue& protocol_spec, int64_t seq, int64_t cap) {
  auto p = protocol_spec.fields();
  p["seq"] = SpecValue::number(double(seq));
  auto f = vramlab::spectest::hf_spec(SpecValue::object(p), "sim:h100-80gb").fields();
  char frac[64];
  // as the runner turns a capacity into PyTorch's fraction of the card's total
  const double total = double(vramlab::open_device("sim:h100-80gb")->info().total);
  std::snprintf(frac, sizeof frac, "per_process_memory_fraction:%.17f", double(cap) / total);
  f["alloc_conf"] = SpecValue::string(frac);
  return run_experiment(read_run_spec(SpecValue::object(f)));
}
}  // namespace

TEST(engine_hf_parity, Llama3_8bLoraCheckpointedIsExactAtEveryLength) {
  for (const SpecValue& run : llama3_8b()["runs"].items()) {
    SCOPED_TRACE(run["spec"]["seq"].to_json());
    EXPECT_EQ(diffs(run, replay(run, "sim:h100-80gb")), "");
  }
}

TEST(engine_hf_parity, Llama3_8bUnderA24GBCapFitsAndRunsOutWherePyTorchDoes) {
  const SpecValue& spec = llama3_8b()["runs"].items().at(0)["spec"];
  const auto& cases = llama3_8b()["capped"].items();
  RunResult fits = capped(spec, cases[0]["seq"].as_int("seq"), cases[0]["cap"].as_int("cap"));
  EXPECT_EQ(diffs(cases[0], fits), "");
  try {
    capped(spec, cases[1]["seq"].as_int("seq"), cases[1]["cap"].as_int("cap"));
    ADD_FAILURE() << "3840 tokens fitted under the cap; PyTorch ran out";
  } catch (const OutOfMemoryError& e) {  // the engine's, carrying the allocator's message
    const std::string msg = e.what();
    EXPECT_NE(msg.find("Tried to allocate 1.84 GiB"), std::string::npos) << msg;
    EXPECT_NE(msg.find("19.84 GiB is allocated by PyTorch, and 2.18 GiB is reserved"), std::string::npos) << msg;
  }
  // Longer fits again (fragmentation is not monotone in the length): 4224 tokens, reserved exact.
  RunResult longer = capped(spec, cases[2]["seq"].as_int("seq"), cases[2]["cap"].as_int("cap"));
  EXPECT_EQ(longer.at("reserved_peak"), cases[2]["reserved_peak"].as_int("reserved_peak"));
  // 4256 tokens fit with every reading exact, and 4312 run out as in PyTorch: its longest
  // length lies between 4256 and 4271. Both hang on the small pool (the rotary backward's
  // gradients copied by the projections' view backward).
  EXPECT_EQ(diffs(cases[3], capped(spec, cases[3]["seq"].as_int("seq"), cases[3]["cap"].as_int("cap"))), "");
  try {
    capped(spec, cases[4]["seq"].as_int("seq"), cases[4]["cap"].as_int("cap"));
    ADD_FAILURE() << "4312 tokens fitted under the cap; PyTorch ran out";
  } catch (const OutOfMemoryError& e) {
    EXPECT_NE(std::string(e.what()).find("Tried to allocate 2.06 GiB"), std::string::npos) << e.what();
  }
}

// PyTorch's longest length under the same cap, measured length by length (the file's "longest"):
// 3968 fits while 3720 and 4096 run out, and 4257..4259 fit while 4260..4271 run out. The lab
// gives the same verdict at every one of them, every reading exact where it fits and the same
// request where it runs out, so the longest length is 4259 in both.
TEST(engine_hf_parity, Llama3_8bLongestLengthUnderA24GBCapIsPyTorchs) {
  const SpecValue& spec = llama3_8b()["runs"].items().at(0)["spec"];
  for (const SpecValue& c : llama3_8b()["longest"].items()) {
    const int64_t seq = c["seq"].as_int("seq");
    SCOPED_TRACE(seq);
    if (const SpecValue* oom = c.find("oom")) {
      try {
        capped(spec, seq, c["cap"].as_int("cap"));
        ADD_FAILURE() << seq << " tokens fitted under the cap; PyTorch ran out";
      } catch (const OutOfMemoryError& e) {  // "CUDA out of memory. Tried to allocate X GiB."
        EXPECT_NE(std::string(e.what()).find(oom->as_string("oom")), std::string::npos) << e.what();
      }
    } else {
      EXPECT_EQ(diffs(c, capped(spec, seq, c["cap"].as_int("cap"))), "");
    }
  }
}

// Our H100 measurements of the mixture-of-experts models (h100_hf_moe.json), every training
// reading byte for byte: Mixtral at 8192 routed tokens (CUB's radix sort instead of the
// in-place small sort), fp32 weights without and under bf16 autocast (grouped_mm's mm loop,
// no cutlass buffers), Mixtral with LoRA on q/v (frozen experts save no activations),
// Qwen3-MoE (bf16 routing weights), with norm_topk_prob and a dense layer (mlp_only_layers),
// and with LoRA on the attention plus gradient checkpointing.
TEST(engine_hf_parity, MeasuredMixtureOfExpertsTrainingIsExact) {
  for (size_t i : {0, 1, 2, 3, 4, 5, 6, 7}) {
    const SpecValue& run = measured_moe()["runs"].items().at(i);
    SCOPED_TRACE(run["spec"].to_json().substr(0, 300));
    RunResult r = replay(run, "sim:h100-80gb");
    EXPECT_EQ(diffs(run, r), "");
    EXPECT_EQ(r.num_parameters, run["total"].as_int("total"));
    EXPECT_EQ(r.trainable_parameters, run["trainable"].as_int("trainable"));
  }
}

// Mixtral generate(): the prefill's grouped_mm and the decoding steps' batched_mm (each token
// gathers its experts' weights: the peak, with generate()'s float32 next-token logits of the
// step before, the grown ids, mask and position_ids held beside it). Every reading exact.
TEST(engine_hf_parity, MeasuredMixtralGenerationIsExact) {
  const SpecValue& run = measured_moe()["runs"].items().at(8);
  EXPECT_EQ(diffs(run, replay(run, "sim:h100-80gb")), "");
}

// Published [3] (Qwen2, tied embeddings) is the one published run not exact on the simulated
// layout. Its PyTorch trace (test/refs/measured/traces/h100_qwen2_ref3.json.gz) and the
// engine's run now make the same allocations and free the same blocks in the same order; replayed
// at the segment addresses the driver gave that process (h100_hf_addresses.json), every
// reading is exact. What remains is where the driver puts segments (lazy module loading's
// takes from the same heap), not the engine's order.
TEST(engine_hf_parity, PublishedQwen2IsExactAtTheDriversRecordedAddresses) {
  const SpecValue& run = load("test/refs/measured/h100_hf_addresses.json")["runs"].items().at(0);
  const SpecValue& pub = reference()["runs"].items().at(size_t(run["published"].as_int("published")));
  EXPECT_EQ(pub["spec"].to_json(), run["spec"].to_json());
  // the traced H100 process read exactly the published (H200) readings
  for (auto& [key, val] : pub["readings"].fields()) EXPECT_EQ(run["readings"][key].as_int(key), val.as_int(key)) << key;
  std::vector<uintptr_t> addresses;
  for (auto& a : run["segment_addresses"].items())
    addresses.push_back(std::stoull(a.as_string("address"), nullptr, 16));
  RunResult at =
      run_experiment_at_addresses(read_run_spec(vramlab::spectest::hf_spec(run["spec"], "sim:h100-80gb")), addresses);
  EXPECT_EQ(diffs(run, at), "");
}
