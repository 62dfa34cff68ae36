#pragma once
// One experiment, as the parity protocols run it (../shared/refs/torch_protocol.py and
// torch_protocol_finetune.py): a device and allocator, a warm-up that creates the cuBLAS
// workspaces, then the model, its input and the measured loop of the spec's mode
// (train, inference, loss_accumulation, generate). Readings are memory_allocated()
// (reserved for reserved_*) relative to the base read after the warm-up.
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "engine/core/context.h"
#include "engine/spec/run_spec.h"

namespace vramlab::engine {

struct RunResult {
  std::vector<std::pair<std::string, int64_t>> readings;  // in protocol order
  int64_t base = 0;
  int64_t num_parameters = 0, trainable_parameters = 0;
  double modeled_time_ms = 0;  // sim time model over the measured loop
  std::string sdpa_backend;    // the attention backend the transformer ran ("" without attention)
  std::string memory_summary;
  int64_t at(const std::string& key) const;  // throws std::out_of_range
  // Data parallel (spec.parallel): every rank's readings, rank 0's also in `readings`.
  // Ranks PyTorch treats alike are simulated once (rank_class[r]: the rank simulated for r).
  std::vector<std::vector<std::pair<std::string, int64_t>>> ranks;
  std::vector<int64_t> rank_class;
  // Readings PyTorch does not fix (DDP after its bucket rebuild): [low, high] per key, in
  // reading order; every reading not listed is exact.
  std::vector<std::pair<std::string, std::pair<int64_t, int64_t>>> ranges;
  // NCCL's device memory per rank outside the caching allocator (held on the simulated
  // device beside the CUDA context, so it counts in what fits); 0 on one GPU.
  int64_t nccl = 0;
  // A rank of a real job (run_experiment's group): each micro-batch's loss as the device
  // computed it, and a hash of the final parameters' bytes (ProcessGroup::fingerprint).
  std::vector<double> losses;
  uint64_t params_fingerprint = 0;
};

// Everything about a spec that can be refused without running it (values, the family's
// arguments, fine-tuning targets): throws std::invalid_argument naming the field.
void check_run_spec(const RunSpec& spec);

class ProcessGroup;

// With a group, the run is that rank's of a real data-parallel job (runner/dist_launch.h),
// its collectives through the group, its losses and final parameters read back (a spec
// without `parallel` too: one process's run to compare with); without, ranks are simulated.
RunResult run_experiment(const RunSpec& spec, const RunOptions& options = {},
                         std::function<void(const EngineEvent&)> on_event = {}, ProcessGroup* group = nullptr);

// The same run with the simulated device handing out `segment_addresses` (a recorded
// run's cudaMalloc addresses, in order; PyTorch's trace of the same protocol) instead of
// its address layout's: best-fit ties between equal free blocks then break as they did in
// that process. Every rank simulated uses the same list.
RunResult run_experiment_at_addresses(const RunSpec& spec, const std::vector<uintptr_t>& segment_addresses,
                                      const RunOptions& options = {});

// The seed example "Tracking GPU memory during training" (absolute readings): a plain
// matmul warm-up, the seed MLP, one forward, loss = y.sum(), backward.
RunResult run_seed_example(const std::string& device = "sim:h200-141gb");

}  // namespace vramlab::engine
