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
constexpr const char* kNoteH100 =
    "measured on an H100 80GB HBM3 after a transformer training step (bench/torch/context_overhead.py, driver "
    "580.159.04, CUDA 13, PyTorch 2.11)";
constexpr const char* kNoteH200 =
    "measured on an H200 after a transformer training step (bench/torch/context_overhead.py, driver 580.159.04, "
    "CUDA 13, PyTorch 2.11)";
constexpr const char* kNoteEstimate =
    "estimated: the H100's measured 767 MiB (the context follows the driver and the loaded kernels more than the "
    "card); not measured on this card";
}  // namespace

const std::vector<SimPreset>& sim_presets() {
  // Totals are what cudaMemGetInfo reports (a little under the marketing size).
  static const std::vector<SimPreset> presets = {
      {"h200-141gb", "NVIDIA H200 141GB (simulated)", 143156 * MiB, kContextH200, true, kNoteH200, 4800, 67,
       989},  // measured
      {"h100-80gb", "NVIDIA H100 80GB (simulated)", 81079 * MiB, kContextH100, true, kNoteH100, 3350, 67,
       989},  // measured
      {"a100-80gb", "NVIDIA A100 80GB (simulated)", 81038 * MiB, kContextEstimate, false, kNoteEstimate, 2039, 19.5,
       312},
      {"a100-40gb", "NVIDIA A100 40GB (simulated)", 40338 * MiB, kContextEstimate, false, kNoteEstimate, 1555, 19.5,
       312},
      {"l4-24gb", "NVIDIA L4 24GB (simulated)", 22478 * MiB, kContextEstimate, false, kNoteEstimate, 300, 30, 121},
      {"rtx4090-24gb", "NVIDIA GeForce RTX 4090 24GB (simulated)", 24111 * MiB, kContextEstimate, false, kNoteEstimate,
       1008, 82.6, 165},
      {"t4-16gb", "NVIDIA Tesla T4 16GB (simulated)", 14931 * MiB, kContextEstimate, false, kNoteEstimate, 320, 8.1,
       65},
      // Totals below are published readings, not ours (docs/devices.md says where from);
      // PyTorch's OOM message rounds to 10 MiB. Rates: datasheet, dense tensor-core bf16
      // (the V100 has no bf16: its fp16 tensor rate).
      {"rtx3090-24gb", "NVIDIA GeForce RTX 3090 24GB (simulated)", 24268 * MiB, kContextEstimate, false, kNoteEstimate,
       936, 35.6, 71},
      {"a10g-24gb", "NVIDIA A10G 24GB (simulated)", 22733 * MiB, kContextEstimate, false, kNoteEstimate, 600, 31.2,
       125},
      {"a6000-48gb", "NVIDIA RTX A6000 48GB (simulated)", 48685 * MiB, kContextEstimate, false, kNoteEstimate, 768,
       38.7, 155},
      {"l40s-48gb", "NVIDIA L40S 48GB (simulated)", 45466 * MiB, kContextEstimate, false, kNoteEstimate, 864, 91.6,
       362},
      {"v100-16gb", "NVIDIA Tesla V100 16GB (simulated)", 16160 * MiB, kContextEstimate, false, kNoteEstimate, 900,
       15.7, 125},
      {"v100-32gb", "NVIDIA Tesla V100 32GB (simulated)", 32501 * MiB, kContextEstimate, false, kNoteEstimate, 900,
       15.7, 125},
  };
  return presets;
}

std::optional<SimPreset> find_sim_preset(const std::string& key) {
  for (const auto& p : sim_presets())
    if (key == p.key) return p;
  return std::nullopt;
}

}  // namespace vramlab
