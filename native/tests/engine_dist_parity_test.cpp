// Data parallel on the simulated H100, against PyTorch 2.11 on two GPUs:
// - test/refs/dist_reference.json (2x H200, published): every launch's readings;
// - test/refs/measured/h100x2_dist_more.json (2x H100, ours).
// FSDP2 is deterministic and rank-symmetric in PyTorch: every rank's every reading must be
// exact. Printed per configuration: EXACT or the differences in MiB.
#include <gtest/gtest.h>

#include <cstdio>
#include <sstream>

#include "spec_util.h"

using namespace vramlab::engine;

namespace {

const SpecValue& load(const std::string& rel) {
  static std::map<std::string, SpecValue> cache;
  auto it = cache.find(rel);
  if (it == cache.end()) it = cache.emplace(rel, load_json_file(std::string(VRAMLAB_SOURCE_DIR) + "/" + rel)).first;
  return it->second;
}

// Every launch of every configuration of `kind`: (spec, launches of per-rank readings).
struct Launches {
  SpecValue spec;
  std::vector<const SpecValue*> ranks;  // each an array of per-rank reading objects
};
std::vector<Launches> configs(const std::string& kind) {
  std::vector<Launches> out;
  for (auto& r : load("test/refs/dist_reference.json")["runs"].items()) {
    if (r["spec"]["parallel"]["kind"].as_string("kind") != kind) continue;
    Launches l{r["spec"], {}};
    for (auto& launch : r["runs"].items()) l.ranks.push_back(&launch);
    out.push_back(l);
  }
  for (auto& r : load("test/refs/measured/h100x2_dist_more.json").items()) {
    if (r["spec"]["parallel"]["kind"].as_string("kind") != kind) continue;
    out.push_back(Launches{r["spec"], {&r["ranks"]}});
  }
  return out;
}

}  // namespace

TEST(DistParity, Fsdp2EveryRankExact) {
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
          EXPECT_EQ(ours, torch) << "rank " << k << " " << key;
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
