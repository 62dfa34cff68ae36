#include "device/presets.h"

namespace vramlab {

namespace {
constexpr uint64_t MiB = 1ull << 20;

// Device memory outside PyTorch's allocator, (total - free) - memory_reserved(), after a
// transformer training step (context + cuBLAS + cuBLASLt + backward + SDPA kernels), measured
// by bench/torch/context_overhead.py on an H100 80GB HBM3 (driver 580.159.04, CUDA 13,
// PyTorch 2.11): 619 MiB context, 685 with cuBLAS, 749 with cuBLASLt and a backward, 767
// with SDPA forward+backward. The last stage is the figure: the most a step needs.
constexpr uint64_t kContextH100 = 767 * MiB;
// The same script on an H200 (driver 580.159.04, CUDA 13, PyTorch 2.11): 618.8, 684.8,
// 748.8 and 766.8 MiB; the last stage in bytes.
constexpr uint64_t kContextH200 = 804061184;
// Not measured yet: the H100 figure, as an estimate. The context's size follows the driver
// and the loaded kernels more than the card, so the H100's is the best guess for each.
constexpr uint64_t kContextEstimate = kContextH100;
}  // namespace

const std::vector<SimPreset>& sim_presets() {
  // Totals are what cudaMemGetInfo reports (a little under the marketing size).
  static const std::vector<SimPreset> presets = {
      {"h200-141gb", "NVIDIA H200 141GB (simulated)", 143156 * MiB, kContextH200, 4800, 67, 989},  // measured
      {"h100-80gb", "NVIDIA H100 80GB (simulated)", 81079 * MiB, kContextH100, 3350, 67, 989},     // measured
      {"a100-80gb", "NVIDIA A100 80GB (simulated)", 81038 * MiB, kContextEstimate, 2039, 19.5, 312},
      {"a100-40gb", "NVIDIA A100 40GB (simulated)", 40338 * MiB, kContextEstimate, 1555, 19.5, 312},
      {"l4-24gb", "NVIDIA L4 24GB (simulated)", 22478 * MiB, kContextEstimate, 300, 30, 121},
      {"rtx4090-24gb", "NVIDIA GeForce RTX 4090 24GB (simulated)", 24111 * MiB, kContextEstimate, 1008, 82.6, 165},
      {"t4-16gb", "NVIDIA Tesla T4 16GB (simulated)", 14931 * MiB, kContextEstimate, 320, 8.1, 65},
  };
  return presets;
}

std::optional<SimPreset> find_sim_preset(const std::string& key) {
  for (const auto& p : sim_presets())
    if (key == p.key) return p;
  return std::nullopt;
}

}  // namespace vramlab
