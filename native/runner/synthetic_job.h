#pragma once
// A timed stand-in job: `steps` steps of `step_ms` each, a phase marker pair and a memory
// sample per step, optional OOM or failure at a given step. It proves the worker thread,
// the event stream, backpressure and cancel without needing the tensor engine.
#include "runner/job.h"
#include "runner/job_spec.h"

namespace vramlab::runner {

class SyntheticJob : public Job {
 public:
  explicit SyntheticJob(const SyntheticSettings& settings);
  JobResult run(JobContext& ctx) override;

 private:
  SyntheticSettings spec_;
};

}  // namespace vramlab::runner
