#pragma once
// A file of hf_protocol.py measurements whose runs carry a tag (test/refs/measured/h100_hf_paths.json,
// h100_hf_generate.json): a run by its tag, replayed on the simulated H100, the readings that
// differ from PyTorch's, the exact check and the report that prints every run.
#include <gtest/gtest.h>

#include <cstdio>
#include <sstream>
#include <stdexcept>
#include <string>

#include "hf_spec_util.h"

namespace vramlab::spectest {

inline const engine::SpecValue& tagged_run(const engine::SpecValue& file, const std::string& tag) {
  for (const engine::SpecValue& run : file["runs"].items())
    if (run["spec"]["tag"].as_string("tag") == tag) return run;
  throw std::invalid_argument("no measured run tagged " + tag);
}

inline engine::RunResult replay_h100(const engine::SpecValue& run) {
  return engine::run_experiment(engine::read_run_spec(hf_spec(run["spec"], "sim:h100-80gb")));
}

// The readings that differ from PyTorch's, as " key:+bytes", "" when every one is exact.
inline std::string reading_diffs(const engine::SpecValue& run, const engine::RunResult& r) {
  std::ostringstream out;
  for (auto& [key, val] : run["readings"].fields()) {
    const int64_t d = r.at(key) - val.as_int(key);
    if (d != 0) out << " " << key << ":" << (d > 0 ? "+" : "") << d;
  }
  return out.str();
}

// Every reading and both parameter counts of the run tagged `tag`, byte for byte.
inline void expect_tagged_exact(const engine::SpecValue& file, const std::string& tag) {
  const engine::SpecValue& run = tagged_run(file, tag);
  SCOPED_TRACE(tag);
  engine::RunResult r = replay_h100(run);
  EXPECT_EQ(reading_diffs(run, r), "");
  EXPECT_EQ(r.num_parameters, run["total"].as_int("total"));
  EXPECT_EQ(r.trainable_parameters, run["trainable"].as_int("trainable"));
}

// Prints every run with its differences (bytes), exact or not, or the engine's refusal.
inline void report_tagged(const engine::SpecValue& file) {
  for (const engine::SpecValue& run : file["runs"].items()) {
    const std::string tag = run["spec"]["tag"].as_string("tag");
    try {
      const std::string d = reading_diffs(run, replay_h100(run));
      std::printf("  %s %s%s\n", d.empty() ? "EXACT " : "differ", tag.c_str(), d.c_str());
    } catch (const std::exception& e) {
      std::printf("  n/a    %s: %s\n", tag.c_str(), e.what());
    }
  }
}

}  // namespace vramlab::spectest
