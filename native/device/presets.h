#pragma once
// Simulated GPU presets: capacity as the CUDA driver reports it and the rates the
// sim time model uses (datasheet leads, dense).
#include <optional>
#include <string>
#include <vector>
#include "device/device.h"

namespace vramlab {

struct SimPreset {
  const char* key;  // id suffix after "sim:"
  const char* name;
  uint64_t total;  // bytes, cudaMemGetInfo's total on the real card
  // Bytes a training process holds on the card outside PyTorch's allocator once a step has
  // run (CUDA context, cuBLAS/cuBLASLt handles, autograd's device thread, attention
  // kernels): what nvidia-smi shows beyond memory_reserved(). The allocator gets total - context.
  uint64_t context;
  bool context_measured;     // on this card (else estimated)
  const char* context_note;  // how: the measurement, or what the estimate stands on
  double mem_bandwidth_gbs;
  double fp32_tflops;
  double bf16_tflops;
};

const std::vector<SimPreset>& sim_presets();
std::optional<SimPreset> find_sim_preset(const std::string& key);

}  // namespace vramlab
