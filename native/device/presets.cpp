#include "device/presets.h"

namespace vramlab {

namespace { constexpr uint64_t MiB = 1ull << 20; }

const std::vector<SimPreset>& sim_presets() {
  // Totals are what cudaMemGetInfo reports (a little under the marketing size).
  static const std::vector<SimPreset> presets = {
      {"h200-141gb", "NVIDIA H200 141GB (simulated)", 143156 * MiB, 4800, 67, 989},
      {"h100-80gb", "NVIDIA H100 80GB (simulated)", 81079 * MiB, 3350, 67, 989},
      {"a100-80gb", "NVIDIA A100 80GB (simulated)", 81038 * MiB, 2039, 19.5, 312},
      {"a100-40gb", "NVIDIA A100 40GB (simulated)", 40338 * MiB, 1555, 19.5, 312},
      {"l4-24gb", "NVIDIA L4 24GB (simulated)", 22478 * MiB, 300, 30, 121},
      {"rtx4090-24gb", "NVIDIA GeForce RTX 4090 24GB (simulated)", 24111 * MiB, 1008, 82.6, 165},
      {"t4-16gb", "NVIDIA Tesla T4 16GB (simulated)", 14931 * MiB, 320, 8.1, 65},
  };
  return presets;
}

std::optional<SimPreset> find_sim_preset(const std::string& key) {
  for (const auto& p : sim_presets())
    if (key == p.key) return p;
  return std::nullopt;
}

}  // namespace vramlab
