#pragma once
// A run's settings as the native side receives them: the validated experiment spec
// (main/contract/spec.ts), flattened by main/runner/native_job.ts. `kind` picks the job:
// "protocol" runs the engine's parity protocol; "synthetic" is a timed stand-in that
// exercises the worker, the event stream and cancel without the engine.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "runner/job.h"

namespace vramlab::runner {

struct JobSpec {
  std::string kind = "protocol";

  std::string model = "mlp";  // "mlp" | "residual"
  int64_t in = 1024, hidden = 2048, out = 10, dim = 512, depth = 2;
  int64_t batch = 256, iterations = 2, accum = 1;
  std::string checkpoint = "none";  // "none" | "block" | "sqrt" | "every"
  int64_t checkpoint_every = 0;
  std::string precision = "fp32";
  std::string optimizer = "adam";  // "none" | "sgd" | "adam" | "adamw"
  double lr = 1e-3, momentum = 0, weight_decay = 0;
  bool foreach = true;
  bool set_to_none = true;
  std::string mode = "train";  // "train" | "inference" | "loss_accumulation"
  bool keep_loss_graph = true;
  std::string loss = "sum";
  std::string alloc_conf;
  std::string device = "sim:h100-80gb";
  int64_t capacity = 0;  // bytes; 0 = the device's
  bool history = false;
  int64_t sample_every = 1;  // memory sample every N allocator calls

  // synthetic job only
  int64_t steps = 100;
  double step_ms = 1;
  int64_t oom_at = -1, throw_at = -1;
};

// Builds the job for `spec`; throws std::invalid_argument for settings it cannot run
// (before any thread starts, so a bad spec never begins a run).
std::unique_ptr<Job> make_job(const JobSpec& spec);

// The job kinds this build can run ("synthetic", and "protocol" once the engine is in).
std::vector<std::string> available_job_kinds();

}  // namespace vramlab::runner
