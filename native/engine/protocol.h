#pragma once
// The parity protocol of test/refs/README.md as a C++ driver: builds a device,
// allocator and model, runs the measured training (or inference / loss-accumulation)
// loop and returns memory_allocated() readings relative to the base, streaming phase
// markers and samples through an optional event hook.
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "engine/core/context.h"

namespace vramlab::engine {

struct ProtocolConfig {
  std::string model = "mlp";  // "mlp" | "residual"
  int64_t in = 1024, hidden = 2048, out = 10;  // mlp
  int64_t dim = 512;                           // residual
  int64_t depth = 2, batch = 256;
  int iterations = 2, accum = 1;
  std::string checkpoint = "none";  // "none" | "block" | "sqrt" | "every_k"
  int checkpoint_k = 2;
  std::string precision = "fp32";   // "fp32" | "tf32" | "fp16" | "bf16"
  std::string optimizer = "sgd";    // "none" | "sgd" | "adam" | "adamw"
  double lr = 1e-3, momentum = 0, weight_decay = -1;  // weight_decay < 0: the optimizer's default
  bool nesterov = false, foreach = true, set_to_none = true;
  std::string mode = "train";       // "train" | "inference" | "loss_accumulation"
  bool keep_loss_graph = false;     // loss_accumulation: total = total + loss
  // "sum": y.float().sum(); "mse": F.mse_loss(y.float(), randn(batch, out));
  // "cross_entropy": F.cross_entropy(y.float(), randint(0, out, (batch,))). Mean reduction;
  // the target is made right after the input (it counts in the "input" reading).
  std::string loss = "sum";
  int loss_steps = 10;
  std::string device = "sim:h200-141gb";
  std::string backend = "sim";      // "sim" | "cpu" | "cuda"
  std::string allocator_conf;       // PYTORCH_CUDA_ALLOC_CONF syntax
  uint64_t seed = 0;
  int64_t sample_every = 0;         // event samples every N allocations
  // What runs before base is read. "linear": an nn.Linear forward + backward (the
  // published protocol: the forward thread's 1 MiB cuBLASLt workspace already exists).
  // "matmul": a plain `a @ a` forward + backward (test/refs/measured/*matmul*): the
  // model's first Linear forward creates that workspace, after base.
  std::string warmup = "linear";
  // fp16 training with torch.amp.GradScaler (scale(loss).backward(), step, update).
  bool grad_scaler = false;
};

struct ProtocolResult {
  std::vector<std::pair<std::string, int64_t>> readings;  // in protocol order
  int64_t base = 0;
  int64_t num_parameters = 0;
  double modeled_time_ms = 0;  // sim time model over the measured loop
  std::string memory_summary;
  int64_t at(const std::string& key) const;  // throws std::out_of_range
};

ProtocolResult run_protocol(const ProtocolConfig& cfg, std::function<void(const EngineEvent&)> on_event = {});

// The seed example "Tracking GPU memory during training" (absolute readings): a plain
// matmul warm-up, the seed MLP, one forward, loss = y.sum(), backward.
ProtocolResult run_seed_example(const std::string& device = "sim:h200-141gb");

}  // namespace vramlab::engine
