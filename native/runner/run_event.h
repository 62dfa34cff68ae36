#pragma once
// What a running job reports: memory samples, phase markers and allocator events while it
// goes, then one JobResult. Plain data, so the worker can queue it across threads.
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "engine/core/alloc_tag.h"

namespace vramlab::runner {

// Bytes per memory category, indexed by the engine's Category enum (main/contract/runs.ts
// CATEGORIES names them in the same order).
constexpr int kNumCategories = engine::kNumCategories;
using CategoryBytes = std::array<int64_t, kNumCategories>;

struct Sample {
  double t_ms = 0;
  int64_t allocated = 0, reserved = 0, active = 0, requested = 0;
  CategoryBytes by{};
};

struct Phase {
  double t_ms = 0;
  bool begin = true;
  std::string name;    // "iteration", "microbatch", "forward", "backward", "optimizer_step", "zero_grad", "module"
  std::string module;  // module path for "module" phases
  int64_t iteration = -1, micro_batch = -1;
};

struct AllocEvent {
  double t_ms = 0;
  std::string action;  // "alloc", "free_requested", "free_completed", "segment_alloc", "segment_free", "oom"
  uint64_t addr = 0;
  int64_t size = 0;        // requested bytes (alloc/free/oom), segment or range bytes otherwise
  int64_t block_size = 0;  // the allocator's block (alloc/free: rounded, remainder kept), 0 unknown
  int category = -1;       // index into the categories, -1 unknown
  std::string module;
  std::string op;  // engine op that allocated ("addmm"), "" unknown
};

using RunEvent = std::variant<Sample, Phase, AllocEvent>;

struct OomInfo {
  std::string message;  // PyTorch's text
  int64_t requested = 0, allocated = 0, reserved = 0, capacity = 0;
  CategoryBytes by{};
  std::string phase, module;
  int64_t iteration = -1;
};

struct JobResult {
  std::vector<std::pair<std::string, int64_t>> readings;  // protocol keys in order, bytes over baseline
  int64_t baseline = 0;
  int64_t peak_allocated = 0, peak_reserved = 0;  // absolute
  double sim_time_ms = -1;                        // < 0: not modelled
  int64_t num_parameters = 0, trainable_parameters = 0;
  std::string sdpa_backend;  // "" without attention
  int64_t context = 0;       // the device's bytes outside the allocator
  int64_t nccl = 0;          // NCCL's device memory per rank (data parallel), outside the allocator
  // data parallel: each rank's readings (rank 0's are `readings`)
  std::vector<std::vector<std::pair<std::string, int64_t>>> ranks;
  std::vector<int64_t> rank_class;  // the rank whose simulation rank r shares
  // [low, high] of readings PyTorch does not fix (DDP after its bucket rebuild)
  std::vector<std::pair<std::string, std::pair<int64_t, int64_t>>> ranges;
  std::optional<OomInfo> oom;
};

}  // namespace vramlab::runner
