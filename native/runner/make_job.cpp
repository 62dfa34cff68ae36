#include <stdexcept>

#include "runner/experiment_job.h"
#include "runner/job_spec.h"
#include "runner/synthetic_job.h"

namespace vramlab::runner {

std::unique_ptr<Job> make_job(const JobRequest& r) {
  if (r.kind == "synthetic") return std::make_unique<SyntheticJob>(r.synthetic);
  if (r.kind == "experiment") return std::make_unique<ExperimentJob>(r.spec, r.options);
  throw std::invalid_argument("unknown job kind \"" + r.kind + "\" (expected \"experiment\" or \"synthetic\")");
}

std::vector<std::string> available_job_kinds() { return {"synthetic", "experiment"}; }

}  // namespace vramlab::runner
