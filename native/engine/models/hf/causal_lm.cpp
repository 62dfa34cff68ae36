// The causal-LM head shared by the hf models (causal_lm.h).
#include "engine/models/hf/causal_lm.h"

#include <stdexcept>

#include "engine/core/alloc_tag.h"
#include "engine/models/hf/modules.h"
#include "engine/ops/common.h"
#include "engine/ops/ops.h"

namespace vramlab::engine::hf {

GenerateInputs generation_inputs(const Tensor& idx, int64_t pos) {
  const int64_t B = idx.size(0), T = idx.size(1);
  GenerateInputs in;
  in.input_ids = idx;
  in.position_ids = make_tensor({B, T}, DType::Int64, "cumsum");
  if (in.position_ids.has_data())
    for (int64_t b = 0; b < B; ++b) be().arange(in.position_ids.slice(0, b, b + 1).view({T}), double(pos));
  in.attention_mask = make_tensor({B, pos + T}, DType::Int64, "ones");
  return in;
}

CausalLM::CausalLM(const KindArgs& args) : arch_(read_arch(args)), seq_(args.i("seq")) {
  const std::string attn = args.s("attn_implementation");
  if (attn != "sdpa" && attn != "eager")
    throw std::invalid_argument(args.path + ".attn_implementation \"" + attn + "\" is not supported (sdpa, eager)");
  arch_.eager = attn == "eager";
  // transformers imports torchaudio.compliance.kaldi lazily while the model is built,
  // under torch.device("cuda"): its module-level EPSILON = torch.tensor(eps) lands on
  // the GPU and stays (a 4-byte float32 scalar; seen in the allocator's snapshot)
  CategoryScope cs(Category::Other);
  import_scalar_ = make_tensor({}, DType::Float32, "torch.tensor");
}

void CausalLM::make_lm_head(DType dt, const Tensor& embedding_weight) {
  lm_head_ = std::make_shared<Linear>(arch_.hidden, arch_.vocab, false, dt);
  if (arch_.tie) lm_head_ = std::make_shared<Linear>(embedding_weight);
  register_module("lm_head", lm_head_);
}

void CausalLM::check_length(int64_t T, const char* what) const {
  if (T > arch_.max_positions)
    throw std::invalid_argument("hf: " + std::to_string(T) + " tokens exceed " + what + " (" +
                                std::to_string(arch_.max_positions) + ")");
}

Tensor CausalLM::head(Tensor hidden, const Tensor& idx) {
  CategoryScope cs(Category::Logits);
  Tensor logits = (*lm_head_)(hidden);  // lm_head(hidden_states[:, slice(0, None), :])
  if (arch_.final_softcap > 0) {
    // logits = logits / cap; logits = torch.tanh(logits); logits = logits * cap
    logits = div(logits, arch_.final_softcap);
    logits = engine::tanh(logits);
    logits = mul(logits, arch_.final_softcap);
  }
  // the final hidden states are locals of the forward (outputs.last_hidden_state and
  // hidden_states): they go when it returns, after the loss
  loss_ = causal_lm_loss(logits, idx, arch_.vocab);
  hidden.reset();
  return logits;
}

Tensor CausalLM::make_input(int64_t batch, int64_t seq) { return randint({batch, seq > 0 ? seq : seq_}, arch_.vocab); }

Tensor CausalLM::loss(const Tensor&, const Batch&, LossKind) {
  Tensor l = std::move(loss_);
  loss_.reset();
  return l;
}

}  // namespace vramlab::engine::hf
