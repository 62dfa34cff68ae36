#pragma once
// The measured loop of each mode, over the state they share: the run's allocator, the
// base readings, autocast and the reading log.
#include "engine/backends/allocator_memory.h"
#include "engine/experiment/experiment.h"
#include "engine/models/model.h"

namespace vramlab::engine {

struct Measure {
  EngineContext& ctx;
  AllocatorMemory& mem;
  const RunSpec& spec;
  const RunOptions& options;
  RunResult& r;
  int64_t rbase = 0, base_device_alloc = 0, base_device_free = 0;
  bool low = false;
  DType low_dtype = DType::BFloat16;
  // FSDP2: the optimizer steps the sharded parameters, not the model's
  const std::vector<Tensor>* optimizer_params = nullptr;
  ProcessGroup* group = nullptr;  // a real job's rank: losses are read back

  int64_t allocated() const { return mem.memory_allocated() - r.base; }
  int64_t peak() const { return mem.max_memory_allocated() - r.base; }
  int64_t reserved_peak() const { return int64_t(mem.allocator().max_memory_reserved()) - rbase; }
  void read(const std::string& key, int64_t value);
  // y = model(x), under autocast for fp16/bf16 precision.
  Tensor forward(Model& m, const Tensor& x);
};

void run_train(Measure& m, Model& model);
void run_inference(Measure& m, Model& model);
void run_loss_accumulation(Measure& m, Model& model);
void run_generate(Measure& m, Model& model);
// Hugging Face generate() on the hf family (hf_generate.cpp), run by run_generate.
void run_hf_generate(Measure& m, Model& model);

}  // namespace vramlab::engine
