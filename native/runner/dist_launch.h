#pragma once
// A real data-parallel job, one process per rank as torchrun starts them:
// - launch_ranks starts `world` processes (fork + exec of the given command lines) and
//   waits for them; a rank that fails ends the job (the others may wait in a collective
//   forever, so they are killed after a grace period);
// - in each process, run_rank_process joins the group and runs the spec as its rank:
//   rank 0 makes the group's unique id and publishes it in the job's directory (written
//   whole, then renamed into place), the others wait for it there; then the spec runs on
//   the rank's device (cuda:<rank> for a cuda: spec, through NCCL; a sim: spec runs the
//   same plumbing with a group that only counts) and the rank writes rank<r>.json there.
#include <string>
#include <vector>

#include "engine/experiment/experiment.h"
#include "engine/spec/spec_value.h"

namespace vramlab::runner {

// The device a rank runs on: cuda:N -> cuda:<rank>; a simulated device is every rank's.
std::string rank_device(const std::string& device, int rank);

// Runs in a rank process. Writes <dir>/rank<rank>.json ({rank, device, readings: [[key,
// bytes], ...], losses, params_fingerprint, id_hash, collectives, nccl} or {rank, error})
// and returns the process's exit status (0 on success).
int run_rank_process(const engine::RunSpec& spec, const engine::RunOptions& options, int rank, const std::string& dir,
                     double id_timeout_s = 120);

// The single-GPU run a job is compared with, in a process of its own: the spec as given
// (its `parallel` at world 1, or none) on cuda:0 (a sim: device: memory only), read back
// through a group of one (losses, final parameters); writes <dir>/rank0.json as a rank does.
int run_single_process(const engine::RunSpec& spec, const engine::RunOptions& options, const std::string& dir);

struct LaunchResult {
  std::vector<engine::SpecValue> ranks;  // each rank's rank<r>.json, in rank order
  std::string error;                     // empty when every rank exited 0 and wrote its file
};

// Starts one process per command line (rank r = argvs[r]) and waits up to timeout_s for all.
LaunchResult launch_ranks(const std::vector<std::vector<std::string>>& argvs, const std::string& dir, double timeout_s);

// A fresh private directory for one job's id and results (under $TMPDIR or /tmp).
std::string make_job_dir();

}  // namespace vramlab::runner
