#pragma once
// An experiment (engine/experiment) as a runner job: turns the engine's event hook into
// samples and phase markers, makes every engine event a cancel point, and reports an
// OOM as a result with the state the allocator was in when it failed.
#include "runner/job.h"
#include "runner/job_spec.h"

namespace vramlab::runner {

class ExperimentJob : public Job {
 public:
  // Validates what the engine would reject later (capacity vs the device, conflicting
  // settings) so a bad spec fails before the thread starts.
  ExperimentJob(const engine::RunSpec& spec, const engine::RunOptions& options);
  JobResult run(JobContext& ctx) override;

 private:
  engine::RunSpec spec_;
  engine::RunOptions options_;
  std::string alloc_conf_;  // the spec's, plus per_process_memory_fraction for `capacity`
  int64_t capacity_ = 0;    // bytes the run may use: the spec's capacity or the device total
  int64_t context_ = 0;     // the device's CUDA context and library handles (DeviceInfo::context)
  bool sim_clock_ = true;   // time axis: the sim's modelled time, or wall time on a real GPU
};

}  // namespace vramlab::runner
