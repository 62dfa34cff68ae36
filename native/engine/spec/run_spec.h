#pragma once
// The experiment spec as the engine receives it: main/contract/spec.ts's validated shape,
// field for field and spelled the same. Defaults live in the contract alone; the reader
// (read_spec.cpp) takes every field from the spec it is given. Model and optimizer
// settings stay {kind, ...args}: each family and optimizer reads its own arguments.
#include <cstdint>
#include <string>
#include <vector>

#include "engine/spec/spec_value.h"
#include "engine/spec/spec_words.h"

namespace vramlab::engine {

// {kind, ...args} for a model family or an optimizer; args are read by name.
struct KindArgs {
  std::string kind;
  SpecValue args;  // the whole object, kind included
  int64_t i(const std::string& key) const;
  double f(const std::string& key) const;
  bool b(const std::string& key) const;
  const std::string& s(const std::string& key) const;
  std::vector<std::string> strings(const std::string& key) const;
  bool has(const std::string& key) const { return args.has(key); }
  std::string path = "spec";  // for error messages: "spec.model"
};

// "none" | "block" | "sqrt" | {"every": k}
struct CheckpointSpec {
  enum class Mode : uint8_t { None, Block, Sqrt, Every };
  Mode mode = Mode::None;
  int64_t every = 0;
};

// {"method": "full"} | {"method": "freeze", "blocks": k} | {"method": "lora", rank, alpha, targets}
struct FinetuneSpec {
  std::string method = "full";
  int64_t blocks = 0;
  int64_t rank = 0;
  double alpha = 0;
  std::vector<std::string> targets;
  double dropout = 0;  // lora_dropout (hf)
};

struct ShapeStep {
  int64_t batch = 0, seq = 0;
};

// Data parallel: {"kind": "ddp" | "fsdp2", "world", ...}; kind "" when the spec has none.
struct ParallelSpec {
  std::string kind;
  int64_t world = 1;
  double bucket_cap_mb = 25;              // ddp
  bool gradient_as_bucket_view = false;   // ddp
  bool reshard_after_forward = true;      // fsdp2
  std::string param_dtype, reduce_dtype;  // fsdp2 MixedPrecisionPolicy; "" = None
};

struct RunSpec {
  KindArgs model;
  int64_t batch = 0;
  int64_t iterations = 0;
  int64_t accum = 0;
  CheckpointSpec checkpoint;
  Precision precision = Precision::Fp32;  // autocast
  DType weights = DType::Float32;         // parameter storage
  KindArgs optimizer;
  bool set_to_none = true;
  RunMode mode = RunMode::Train;
  bool keep_loss_graph = true;
  LossKind loss = LossKind::Sum;
  FinetuneSpec finetune;
  std::vector<ShapeStep> shapes;  // empty: every iteration at (batch, model seq)
  int64_t prompt = 0, new_tokens = 0;
  CacheKind cache = CacheKind::Dynamic;  // generate
  int64_t empty_cache_every = 0;         // train: torch.cuda.empty_cache() after every n-th iteration
  std::string alloc_conf;
  std::string device;
  int64_t capacity = 0;  // bytes; 0: the device's
  bool history = false;
  ParallelSpec parallel;  // batch is per rank
};

// How a run is carried out, beyond what it measures: knobs for tools and tests.
struct RunOptions {
  std::string backend;            // "" = from the device (cuda:N -> cuda, else sim); or cpu
  std::string warmup = "linear";  // linear: nn.Linear fwd+bwd (published protocol) | matmul
  bool grad_scaler = false;       // fp16 training through torch.amp.GradScaler
  int64_t sample_every = 0;       // a memory sample every N allocations (0: none)
  uint64_t seed = 0;
};

// Reads a spec value (already validated by the contract) into a RunSpec. Throws
// std::invalid_argument naming the path of a missing or mistyped field.
RunSpec read_run_spec(const SpecValue& v);
// {backend?, warmup?, grad_scaler?, sample_every?, seed?}; absent keys keep RunOptions'.
RunOptions read_run_options(const SpecValue& v);
// The same spec back as a value (exports, logs).
SpecValue write_run_spec(const RunSpec& s);

const char* checkpoint_label(const CheckpointSpec& c, std::string& buf);

}  // namespace vramlab::engine
