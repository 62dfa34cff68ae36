// Data parallel on the simulated H100, against PyTorch 2.11 on two GPUs:
// - test/refs/dist_reference.json (2x H200, published): every launch's readings;
// - test/refs/measured/h100x2_dist_more.json and h100x2_ddp.json (2x H100, ours).
// FSDP2 is deterministic and rank-symmetric in PyTorch: every configuration must be exact
// on every rank, every reading, but one: Llama with a bf16 param_dtype, whose forward peak
// is 1 MiB low because the driver lays segments out differently in a process that runs
// NCCL (DdpAndFsdpExactAtTheDriversRecordedAddresses holds it exact at that launch's own
// addresses). Printed per configuration: EXACT or the differences in MiB. A reference
// launch that PyTorch itself failed ("error") is skipped here: the published checkpointed
// Llama run fails in PyTorch with a CheckpointError (our H100 launch too), and in the
// simulation (Fsdp2CastInputsUnderCheckpointingFailLikePyTorch). Its one published launch
// that ran equals the simulation without checkpointing in all 12 readings: not explained.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <sstream>
#include <stdexcept>

#include "spec_util.h"

using namespace vramlab::engine;

namespace {

const SpecValue& load(const std::string& rel) { return vramlab::spectest::repo_json(rel); }

// Every launch of every configuration of `kind`: (spec, launches of per-rank readings).
struct Launches {
  SpecValue spec;
  std::vector<const SpecValue*> ranks;  // each an array of per-rank reading objects
};
std::vector<Launches> configs(const std::string& kind) {
  std::vector<Launches> out;
  for (auto& r : load("test/refs/dist_reference.json")["runs"].items()) {
    if (r["spec"]["parallel"]["kind"].as_string("kind") != kind || r.find("error")) continue;
    Launches l{r["spec"], {}};
    for (auto& launch : r["runs"].items()) l.ranks.push_back(&launch);
    out.push_back(l);
  }
  for (const char* f : {"test/refs/measured/h100x2_dist_more.json", "test/refs/measured/h100x2_ddp.json"})
    for (auto& r : load(f).items()) {
      if (r["spec"]["parallel"]["kind"].as_string("kind") != kind) continue;
      out.push_back(Launches{r["spec"], {&r["ranks"]}});
    }
  return out;
}

}  // namespace

TEST(DistParity, Fsdp2EveryRankMatchesPyTorch) {
  int exact = 0, total = 0;
  for (auto& c : configs("fsdp2")) {
    SCOPED_TRACE(c.spec.to_json());
    RunResult r = run_experiment(vramlab::spectest::spec(c.spec));
    std::ostringstream diffs;
    bool all = true;
    for (const SpecValue* launch : c.ranks) {
      const auto& ranks = launch->items();
      ASSERT_EQ(r.ranks.size(), ranks.size());
      for (size_t k = 0; k < ranks.size(); ++k)
        for (auto& [key, val] : ranks[k].fields()) {
          int64_t ours = -1;
          for (auto& [ok, ov] : r.ranks[k])
            if (ok == key) ours = ov;
          const int64_t torch = val.as_int(key);
          EXPECT_EQ(ours, torch) << "rank " << k << " " << key;  // NCCL's layout included (va_layout.h)
          if (ours != torch && k == 0 && launch == c.ranks.front()) {
            all = false;
            char buf[96];
            std::snprintf(buf, sizeof buf, " %s:%+.3fMiB", key.c_str(), double(ours - torch) / 1048576.0);
            diffs << buf;
          }
        }
    }
    ++total;
    exact += all;
    std::printf("  %s %s%s\n", all ? "EXACT " : "off   ", c.spec.to_json().substr(0, 170).c_str(), diffs.str().c_str());
  }
  std::printf("  fsdp2: %d of %d configurations exact on every rank\n", exact, total);
}

// torch.chunk splits 8192 rows over 3 ranks as 2731, 2731, 2730: every rank allocates the
// padded 2731-row shard, but the optimizer's state follows the unpadded local tensor, so
// rank 2 is simulated on its own and holds less after its first step; ranks 0 and 1 are one.
TEST(DistParity, Fsdp2UnevenShardsMakeRanksDiffer) {
  RunResult r = run_experiment(vramlab::spectest::spec(
      std::string(R"({"model":{"kind":"gpt","vocab":8192,"seq":64,"dim":96,"depth":2,"heads":4},"batch":2,)"
                  R"("optimizer":"adamw","parallel":{"kind":"fsdp2","world":3}})")));
  ASSERT_EQ(r.ranks.size(), 3u);
  EXPECT_EQ(r.rank_class, (std::vector<int64_t>{0, 0, 2}));
  auto at = [&](int k, const std::string& key) {
    for (auto& [n, v] : r.ranks[size_t(k)])
      if (n == key) return v;
    return int64_t(-1);
  };
  EXPECT_EQ(at(0, "params"), at(2, "params"));  // padded shards on every rank
  EXPECT_EQ(at(0, "it0_after_zero_grad"), at(1, "it0_after_zero_grad"));
  EXPECT_LT(at(2, "it0_after_zero_grad"), at(0, "it0_after_zero_grad"));
}

// World 8 with dims that split evenly: one simulation stands for all eight ranks.
TEST(DistParity, Fsdp2SymmetricRanksSimulatedOnce) {
  RunResult r = run_experiment(vramlab::spectest::spec(
      std::string(R"({"model":{"kind":"gpt","vocab":8192,"seq":64,"dim":128,"depth":2,"heads":4},"batch":2,)"
                  R"("optimizer":"adamw","parallel":{"kind":"fsdp2","world":8}})")));
  ASSERT_EQ(r.ranks.size(), 8u);
  for (int64_t c : r.rank_class) EXPECT_EQ(c, 0);
  for (auto& rk : r.ranks) EXPECT_EQ(rk, r.readings);
  EXPECT_EQ(r.nccl, int64_t(846) << 20);
}

// DDP: every rank runs one program, so one simulation stands for all. Before the bucket
// rebuild (construction, the one-bucket first backward, the first step) PyTorch is
// deterministic: those readings must equal every rank of every launch. After it, when
// NCCL's watchdog frees the first iteration's buckets is timing (launches differ by the
// bucket's size, on one rank or both, for one iteration or more): each reading must lie
// inside the range the simulation reports (released at once .. held past the last
// reading), and a reading outside `ranges` must be exact. Held to that exactly:
// gradient_as_bucket_view (the AccumulateGrad gradients freed into the buckets) and the
// published GPT-2 124M bf16 run. With separate .grad tensors on the smaller models a block
// of the first backward or optimizer step lands in another free block of the pool, 1 to 4
// MiB apart: the driver placed the segments of PyTorch's NCCL process in another order than
// the simulated device's layout (a fresh single-GPU process's), and the allocator breaks
// ties between equal free blocks by address. At the launch's recorded addresses the first
// iteration is exact (DdpAndFsdpExactAtTheDriversRecordedAddresses); here, within 4 MiB
// (reserved: one 20 MiB segment).
TEST(DistParity, DdpFirstIterationExactLaterInsideRange) {
  int total = 0, exact_configs = 0;
  const double tol = 4.0 * 1048576.0;
  for (auto& c : configs("ddp")) {
    SCOPED_TRACE(c.spec.to_json());
    const bool as_view = c.spec["parallel"].find("gradient_as_bucket_view") &&
                         c.spec["parallel"]["gradient_as_bucket_view"].as_bool("gradient_as_bucket_view");
    const bool gpt2_124m = c.spec["model"]["vocab"].as_int("vocab") == 50304;
    const bool exact = as_view || gpt2_124m;
    RunResult r = run_experiment(vramlab::spectest::spec(c.spec));
    auto range_of = [&](const std::string& key) -> const std::pair<int64_t, int64_t>* {
      for (auto& [k, lh] : r.ranges)
        if (k == key) return &lh;
      return nullptr;
    };
    std::ostringstream line;
    for (const SpecValue* launch : c.ranks) {
      const auto& ranks = launch->items();
      ASSERT_EQ(r.ranks.size(), ranks.size());
      for (size_t k = 0; k < ranks.size(); ++k)
        for (auto& [key, val] : ranks[k].fields()) {
          const int64_t torch = val.as_int(key);
          int64_t ours = -1;
          for (auto& [ok, ov] : r.ranks[k])
            if (ok == key) ours = ov;
          const auto* lh = range_of(key);
          // reserved moves by whole segments: where a block lands decides whether a 20 MiB
          // segment is cut
          const bool before_rebuild = key != "reserved_peak" && (key.rfind("it", 0) != 0 || key.rfind("it0_", 0) == 0);
          // before the rebuild exact everywhere (NCCL's address layout included: va_layout.h)
          const double slack = exact || before_rebuild ? 0.0 : key == "reserved_peak" ? 20.0 * 1048576.0 : tol;
          if (before_rebuild) {
            EXPECT_EQ(lh, nullptr) << key << " is deterministic in PyTorch";
          }
          if (lh) {
            EXPECT_GE(double(torch), double(lh->first) - slack) << "rank " << k << " " << key;
            EXPECT_LE(double(torch), double(lh->second) + slack) << "rank " << k << " " << key;
          } else {
            EXPECT_LE(std::abs(double(ours - torch)), slack) << "rank " << k << " " << key << ": ours " << ours;
          }
          if (launch == c.ranks.front() && k == 0) {
            char buf[128];
            if (lh)
              std::snprintf(buf, sizeof buf, " %s:[%+.2f,%+.2f]", key.c_str(), double(lh->first - torch) / 1048576.0,
                            double(lh->second - torch) / 1048576.0);
            else if (ours != torch)
              std::snprintf(buf, sizeof buf, " %s:%+.3f", key.c_str(), double(ours - torch) / 1048576.0);
            else
              buf[0] = 0;
            line << buf;
          }
        }
    }
    ++total;
    exact_configs += exact;
    std::printf("  %s %s\n   %s\n", exact ? "EXACT " : "<=4MiB", c.spec.to_json().substr(0, 200).c_str(),
                line.str().c_str());
  }
  std::printf("  ddp: %d configurations, %d held exact\n", total, exact_configs);
  EXPECT_GE(total, 14);
}

// The published checkpointed Llama run with a bf16 param_dtype fails in PyTorch (one
// published launch and our H100 launch: CheckpointError on the rotary tables, bf16 saved in
// the forward, fp32 recomputed): fully_shard's pre-forward casts the block's inputs, but a
// recomputation returns before the cast. The simulation fails the same way, in the first
// backward's recomputation of the last block.
TEST(DistParity, Fsdp2CastInputsUnderCheckpointingFailLikePyTorch) {
  for (auto& r : load("test/refs/dist_reference.json")["runs"].items()) {
    if (!r.find("error")) continue;
    try {
      run_experiment(vramlab::spectest::spec(r["spec"]));
      ADD_FAILURE() << "ran: " << r["spec"].to_json();
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find("CheckpointError"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("blocks.7"), std::string::npos) << e.what();
    }
  }
}

// The rebuild's range is the first buckets' size: held, they add exactly that after the
// rebuild; world 8 is the same single program (no rank differs).
TEST(DistParity, DdpRangeIsTheFirstBucketsAndRanksAreOne) {
  RunResult r = run_experiment(vramlab::spectest::spec(
      std::string(R"({"model":{"kind":"gpt","vocab":8192,"seq":64,"dim":128,"depth":2,"heads":4},"batch":2,)"
                  R"("optimizer":"adamw","iterations":3,"parallel":{"kind":"ddp","world":8,"bucket_cap_mb":1,)"
                  R"("gradient_as_bucket_view":true}})")));
  ASSERT_EQ(r.ranks.size(), 8u);
  for (int64_t c : r.rank_class) EXPECT_EQ(c, 0);
  for (auto& rk : r.ranks) EXPECT_EQ(rk, r.readings);
  // params = the model's blocks + one flat bucket of every parameter (4 bytes each)
  int64_t numel = 0;
  {
    RunResult one = run_experiment(vramlab::spectest::spec(std::string(
        R"({"model":{"kind":"gpt","vocab":8192,"seq":64,"dim":128,"depth":2,"heads":4},"batch":2,"optimizer":"adamw"})")));
    numel = one.trainable_parameters;
    EXPECT_EQ(r.at("params") - one.at("params"), (numel * 4 + 511) / 512 * 512);
  }
  bool any = false;
  for (auto& [k, lh] : r.ranges) {
    EXPECT_TRUE(k.rfind("it1_", 0) == 0 || k.rfind("it2_", 0) == 0 || k == "reserved_peak") << k;
    if (k.find("after_zero_grad") != std::string::npos) {
      EXPECT_EQ(lh.second - lh.first, (numel * 4 + 511) / 512 * 512) << k;
      any = true;
    }
  }
  EXPECT_TRUE(any);
}

// The engine's allocation sequence without the address layout in the way: each traced
// launch (test/refs/measured/h100x2_dist_addresses.json) simulated with the simulated device
// handing out the addresses the driver gave that launch's rank 0, in order. DDP's first
// iteration (published runs 6 and 8: 4 and 1 MiB off under the layout) and every FSDP2
// reading (run 4: 1 MiB off) must equal the launch's rank 0 to the byte.
TEST(DistParity, DdpAndFsdpExactAtTheDriversRecordedAddresses) {
  const SpecValue& f = load("test/refs/measured/h100x2_dist_addresses.json");
  int checked = 0;
  for (auto& run : f["runs"].items()) {
    SCOPED_TRACE(run["spec"].to_json());
    std::vector<uintptr_t> addresses;
    for (auto& a : run["segment_addresses"].items())
      addresses.push_back(std::stoull(a.as_string("address"), nullptr, 16));
    const bool ddp = run["spec"]["parallel"]["kind"].as_string("kind") == "ddp";
    // DDP after the bucket rebuild depends on NCCL's watchdog (a range, tested above)
    auto deterministic = [&](const std::string& key) {
      return !ddp || (key != "reserved_peak" && (key.rfind("it", 0) != 0 || key.rfind("it0_", 0) == 0));
    };
    // the traced launch is the published configuration, and agrees with its first launch
    const SpecValue& pub =
        load("test/refs/dist_reference.json")["runs"].items()[size_t(run["published"].as_int("published"))];
    EXPECT_EQ(pub["spec"].to_json(), run["spec"].to_json());
    for (auto& [key, val] : pub["runs"].items()[0].items()[0].fields())
      if (deterministic(key)) EXPECT_EQ(run["readings"][key].as_int(key), val.as_int(key)) << key;
    RunResult at = run_experiment_at_addresses(vramlab::spectest::spec(run["spec"]), addresses);
    RunResult layout = run_experiment(vramlab::spectest::spec(run["spec"]));
    bool layout_exact = true;
    for (auto& [key, val] : run["readings"].fields()) {
      if (!deterministic(key)) continue;
      EXPECT_EQ(at.at(key), val.as_int(key)) << key;
      layout_exact = layout_exact && layout.at(key) == val.as_int(key);
      ++checked;
    }
    EXPECT_TRUE(layout_exact) << "the simulated layout (NCCL's included) gives the recorded launch's readings";
    std::printf("  %s at the recorded addresses; under the simulated layout %s\n",
                ::testing::Test::HasFailure() ? "off  " : "EXACT", layout_exact ? "exact too" : "not exact");
  }
  EXPECT_GE(checked, 20);
}
