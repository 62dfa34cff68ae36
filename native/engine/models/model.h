#pragma once
// What a model family gives the experiment driver: the module tree (parameters in
// PyTorch's order), the batch the protocol feeds it, its loss, and — for the families
// that have them — fine-tuning (frozen blocks, LoRA) and KV-cache generation.
// A family is one file in this folder plus one line in registry.cpp.
#include <memory>
#include <string>
#include <vector>

#include "engine/models/kv_cache.h"
#include "engine/nn/module.h"
#include "engine/spec/run_spec.h"

namespace vramlab::engine {

struct Batch {
  Tensor input, target;
};

class Model : public Module {
 public:
  // The input and the loss target, made right after the model (both count in the
  // "input" reading), input first. seq <= 0: the family's own length.
  Batch make_batch(int64_t batch, int64_t seq, LossKind loss) {
    Batch b;
    b.input = make_input(batch, seq);
    b.target = make_target(batch, seq, loss);
    return b;
  }
  virtual Tensor make_input(int64_t batch, int64_t seq) = 0;
  virtual Tensor make_target(int64_t batch, int64_t seq, LossKind loss) = 0;
  // loss_of(y) as the protocol computes it, outside autocast.
  virtual Tensor loss(const Tensor& y, const Batch& batch, LossKind loss) = 0;
  // Hugging Face models compute their own loss inside forward (labels=input_ids); loss()
  // then hands that loss over, and the step uses it as is (no / accum for accum = 1).
  virtual bool loss_in_forward() const { return false; }
  // That loss before loss() hands it over (undefined otherwise): a forward hook on the
  // model sees it as part of the output (fully_shard's pre-backward hook goes on it too).
  virtual Tensor forward_loss() const { return Tensor(); }
  virtual void set_checkpoint(const CheckpointSpec& c) { checkpoint_ = c; }
  // Fine-tuning beyond "full": the families without it refuse.
  virtual void apply_finetune(const FinetuneSpec& f);
  // KV-cache generation: logits of the last position for `idx` (batch, T) at `pos`.
  virtual bool can_generate() const { return false; }
  // Hugging Face generate(): readings peak_generate and after_generate with the returned
  // ids (batch, prompt + new_tokens) still held, as hf_protocol.py reads them.
  virtual bool hf_generate() const { return false; }
  virtual Tensor forward_cached(const Tensor& idx, KvCache& cache, int64_t pos);
  virtual int64_t vocab() const { return 0; }
  virtual int64_t num_blocks() const { return 0; }

 protected:
  CheckpointSpec checkpoint_;
};

// Builds the family named by spec.model.kind from its arguments (validated by the
// contract; the builder re-checks what would otherwise fail deep in the engine).
std::unique_ptr<Model> build_model(const KindArgs& model);
// The same with the weights in `weights`: built directly in that dtype by the families
// that do so (hf: torch.set_default_dtype), else built in float32 and converted (model.to).
std::unique_ptr<Model> build_model(const KindArgs& model, DType weights);
// The family kinds this build knows, in registration order.
std::vector<std::string> model_family_kinds();

}  // namespace vramlab::engine
