// Data parallel on Hugging Face models (the hf family) against PyTorch 2.11 on 2x H100:
// test/refs/measured/h100x2_hf_dist.json, taken with dist_hf.py (the model built as
// hf_protocol.py builds it, on the GPU, LoRA via peft, HF gradient checkpointing; then
// fully_shard on every decoder layer and the root, or DistributedDataParallel around it).
// Each launch is replayed on the simulated H100, every rank: FSDP2 (bf16 and fp32 weights,
// bf16 param_dtype with fp32 reduce, autocast, LoRA on fp32 and on bf16 weights whose fp32
// adapters make a mixed-dtype all-gather, checkpointing, no reshard, tied embeddings, an
// uneven vocabulary whose ranks differ) is deterministic in PyTorch and exact here, every
// reading. DDP after the bucket rebuild depends on NCCL's watchdog (see ddp.h): there each
// reading must lie inside the reported range; everything before the rebuild is exact.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <sstream>

#include "hf_spec_util.h"

using namespace vramlab::engine;

namespace {

const SpecValue& measured() { return vramlab::spectest::repo_json("test/refs/measured/h100x2_hf_dist.json"); }

// The protocol's spec, with its `parallel`, as ours on the simulated H100.
RunSpec dist_spec(const SpecValue& p) {
  auto f = vramlab::spectest::hf_spec(p, "sim:h100-80gb").fields();
  const SpecValue& pa = p["parallel"];
  const SpecValue* pd = vramlab::spectest::defaults()["parallel"].find(pa["kind"].as_string("parallel.kind"));
  f["parallel"] = merge_values(*pd, pa);
  return read_run_spec(SpecValue::object(f));
}

int64_t reading(const RunResult& r, size_t rank, const std::string& key) {
  for (auto& [k, v] : r.ranks.at(rank))
    if (k == key) return v;
  return -1;
}

}  // namespace

TEST(HfDistParity, EveryRankMatchesPyTorchOrInsideDdpRange) {
  int exact = 0, total = 0;
  for (auto& run : measured().items()) {
    const std::string name = run["name"].as_string("name");
    SCOPED_TRACE(name);
    const bool ddp = run["spec"]["parallel"]["kind"].as_string("kind") == "ddp";
    RunResult r = run_experiment(dist_spec(run["spec"]));
    auto range_of = [&](const std::string& key) -> const std::pair<int64_t, int64_t>* {
      for (auto& [k, lh] : r.ranges)
        if (k == key) return &lh;
      return nullptr;
    };
    const auto& ranks = run["ranks"].items();
    ASSERT_EQ(r.ranks.size(), ranks.size());
    // parameters as PyTorch counts them (a DTensor's numel is the whole parameter's)
    if (const SpecValue* meta = run.find("meta")) {
      EXPECT_EQ(r.num_parameters, meta->items().at(0)["total"].as_int("total"));
      EXPECT_EQ(r.trainable_parameters, meta->items().at(0)["trainable"].as_int("trainable"));
    }
    std::ostringstream line;
    bool all = true;
    for (size_t k = 0; k < ranks.size(); ++k)
      for (auto& [key, val] : ranks[k].fields()) {
        if (key == "built" || key == "build_peak") continue;  // before the wrap: not a lab reading
        const int64_t torch = val.as_int(key), ours = reading(r, k, key);
        const auto* lh = ddp ? range_of(key) : nullptr;
        if (lh) {
          EXPECT_GE(torch, lh->first) << "rank " << k << " " << key;
          EXPECT_LE(torch, lh->second) << "rank " << k << " " << key;
        } else {
          EXPECT_EQ(ours, torch) << "rank " << k << " " << key;
        }
        if (k == 0) {
          char buf[128] = "";
          if (lh)
            std::snprintf(buf, sizeof buf, " %s:[%+.3f,%+.3f]", key.c_str(), double(lh->first - torch) / 1048576.0,
                          double(lh->second - torch) / 1048576.0);
          else if (ours != torch)
            std::snprintf(buf, sizeof buf, " %s:%+.3fMiB", key.c_str(), double(ours - torch) / 1048576.0);
          if (!lh && ours != torch) all = false;
          line << buf;
        }
      }
    ++total;
    exact += all;
    std::printf("  %s %-28s%s\n", all ? "EXACT " : "off   ", name.c_str(), line.str().c_str());
  }
  std::printf("  hf data parallel: %d of %d launches exact (DDP: inside the range after the rebuild)\n", exact, total);
  EXPECT_EQ(total, 17);
}
