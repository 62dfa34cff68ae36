#pragma once
// What startRun hands the runner: the job kind, the experiment spec as the contract
// validated it (read once, by engine/spec/read_spec.cpp), how to run it, and the
// settings of the engine-free synthetic job that exercises the worker and event stream.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/spec/run_spec.h"
#include "runner/job.h"

namespace vramlab::runner {

struct SyntheticSettings {
  int64_t steps = 100;
  double step_ms = 1;
  int64_t oom_at = -1, throw_at = -1;
  int64_t capacity = 0;  // bytes reported with a synthetic OOM; 0: 80 GiB
};

struct JobRequest {
  std::string kind = "experiment";  // "experiment" | "synthetic"
  engine::RunSpec spec;             // experiment jobs
  engine::RunOptions options;
  SyntheticSettings synthetic;
};

// Builds the job; throws std::invalid_argument for settings it cannot run (before any
// thread starts, so a bad spec never begins a run).
std::unique_ptr<Job> make_job(const JobRequest& request);

// The job kinds this build can run.
std::vector<std::string> available_job_kinds();

}  // namespace vramlab::runner
