#include <stdexcept>

#include "runner/job_spec.h"
#include "runner/protocol_job.h"
#include "runner/synthetic_job.h"

namespace vramlab::runner {

std::unique_ptr<Job> make_job(const JobSpec& spec) {
  if (spec.kind == "synthetic") return std::make_unique<SyntheticJob>(spec);
  if (spec.kind == "protocol") return std::make_unique<ProtocolJob>(spec);
  throw std::invalid_argument("unknown job kind \"" + spec.kind + "\" (expected \"protocol\" or \"synthetic\")");
}

std::vector<std::string> available_job_kinds() { return {"synthetic", "protocol"}; }

}  // namespace vramlab::runner
