#pragma once
// What every Hugging Face *ForCausalLM / *LMHeadModel here shares (decoder.cpp, gpt2_model.cpp):
// the config read into an Arch, the length check, the lm_head made with its own weight and
// then tied by post_init, and the loss computed inside forward from labels=input_ids
// (ForCausalLMLoss) and handed to the runner by loss().
#include <memory>
#include <string>
#include <vector>

#include "engine/models/hf/arch.h"
#include "engine/models/model.h"
#include "engine/nn/linear.h"

namespace vramlab::engine::hf {

// What generate() passes the model each step (prepare_inputs_for_generation): input_ids and
// position_ids (batch, T) int64, and its 2-D attention mask of ones (batch, pos + T) int64.
struct GenerateInputs {
  Tensor input_ids, position_ids, attention_mask;
  // what the cache's layers hold beside their keys and values, alive as long as the cache
  // (DynamicSlidingWindowLayer's window as a device scalar); null outside generate()
  std::vector<Tensor>* cache_tensors = nullptr;
};

// generate()'s inputs for `idx` (batch, T) at `pos` without padding: position_ids pos, pos + 1,
// ... in every row, the mask (batch, pos + T). For a cached forward outside generate().
GenerateInputs generation_inputs(const Tensor& idx, int64_t pos);

class CausalLM : public Model {
 public:
  std::string type_name() const override { return arch_.name; }
  Tensor make_input(int64_t batch, int64_t seq) override;
  // labels=input_ids: the model shifts them itself, nothing more is allocated
  Tensor make_target(int64_t, int64_t, LossKind) override { return Tensor(); }
  bool loss_in_forward() const override { return true; }
  Tensor loss(const Tensor&, const Batch&, LossKind) override;
  // the loss forward computed, before loss() hands it out (FSDP2's root hooks it)
  Tensor forward_loss() const override { return loss_; }
  int64_t vocab() const override { return arch_.vocab; }
  int64_t num_blocks() const override { return arch_.layers; }
  bool can_generate() const override { return true; }
  bool hf_generate() const override { return true; }
  // The model call of generate() (run_hf_generate) at `pos` with the dynamic cache: the logits
  // of the last position (batch, 1, vocab).
  virtual Tensor forward_generate(const GenerateInputs& in, KvCache& cache, int64_t pos) = 0;
  // generation_config.bos_token_id is set (from the config): one more token tensor in generate()
  bool generation_bos() const { return arch_.bos_token; }

 protected:
  // Reads the config and attn_implementation; allocates the scalar the import leaves behind.
  explicit CausalLM(const KindArgs& args);
  // nn.Linear(hidden, vocab, bias=False) made with its own weight either way; post_init's
  // tie_weights() then points it at the embedding's weight and the weight made is freed.
  void make_lm_head(DType dt, const Tensor& embedding_weight);
  // Refuses more tokens than the positions the model has (`what` names the config field).
  void check_length(int64_t T, const char* what) const;
  // lm_head over the final hidden states (soft-capped when the arch caps its logits), then
  // the loss from the logits and labels=input_ids, kept for loss(); returns the logits.
  Tensor head(Tensor hidden, const Tensor& idx);

  Arch arch_;
  int64_t seq_;
  std::shared_ptr<Linear> lm_head_;

 private:
  Tensor import_scalar_, loss_;
};

}  // namespace vramlab::engine::hf
