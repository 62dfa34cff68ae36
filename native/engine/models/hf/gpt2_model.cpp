// GPT2LMHeadModel (transformers 5.17 modeling_gpt2.py): transformer.wte / wpe learned
// embeddings, blocks of LayerNorm -> GPT2Attention (Conv1D c_attn, SDPA, Conv1D c_proj) ->
// LayerNorm -> GPT2MLP (Conv1D c_fc, gelu_new, Conv1D c_proj), ln_f and an lm_head tied to
// wte. Dropout (embd/attn/resid_pdrop, 0.1 by default) is on in training: native_dropout
// keeps a bool mask per dropped tensor, and SDPA's dropout_p steers its backend choice.
// Forwards follow the Python line by line (a local lives until rebound or returned).
#include <cmath>
#include <functional>
#include <tuple>
#include <stdexcept>

#include "engine/autograd/node.h"
#include "engine/core/alloc_tag.h"
#include "engine/core/grad_mode.h"
#include "engine/models/hf/causal_lm.h"
#include "engine/models/hf/generation_masks.h"
#include "engine/models/hf/decoder.h"
#include "engine/models/hf/eager.h"
#include "engine/models/hf/modules.h"
#include "engine/models/transformer_common.h"
#include "engine/nn/checkpointing.h"
#include "engine/nn/embedding.h"
#include "engine/nn/layer_norm.h"
#include "engine/nn/lora.h"
#include "engine/ops/attention.h"
#include "engine/ops/dropout.h"
#include "engine/ops/ops.h"

namespace vramlab::engine::hf {

namespace {

// Dropout is on in training (model.train()); generation and inference run without grad.
bool training() { return GradMode::is_enabled(); }

// transformers.pytorch_utils.Conv1D(nf, nx): weight (nx, nf) = (in, out), bias zeros(nf);
// forward addmm(bias, x.view(-1, nx), weight).view(..., nf). A Linear to PEFT, which wraps it
// with fan_in_fan_out (the weight read as in x out).
class Conv1D : public Linear {
 public:
  Conv1D(int64_t nf, int64_t nx, DType dt) : Linear(make_weight(nx, nf, dt)) {
    bias = new_parameter({nf}, dt, "zeros");  // nn.Parameter(torch.zeros(nf))
    {
      NoGradGuard ng;
      fill_(bias, 0.0);
    }
    bias.requires_grad_(true);
    register_parameter("bias", bias);
  }
  std::string type_name() const override { return "Conv1D"; }
  Tensor forward(const Tensor& x) override {
    Shape out_shape(x.sizes().begin(), x.sizes().end() - 1);
    out_shape.push_back(weight.size(1));
    Tensor y = addmm(bias, x.view({-1, x.size(-1)}), weight);
    return y.view(out_shape);
  }

 private:
  // nn.Parameter(torch.empty(nx, nf)); nn.init.normal_(std=0.02)
  static Tensor make_weight(int64_t nx, int64_t nf, DType dt) {
    Tensor w = new_parameter({nx, nf}, dt, "empty");
    {
      NoGradGuard ng;
      normal_(w, 0.0, 0.02);
    }
    w.requires_grad_(true);
    return w;
  }
};

class Gpt2Attention : public Container {
 public:
  Gpt2Attention(const Arch& a, DType dt) : Container("GPT2Attention"), a_(a) {
    add("c_attn", std::make_shared<Conv1D>(3 * a.hidden, a.hidden, dt));
    add("c_proj", std::make_shared<Conv1D>(a.hidden, a.hidden, dt));
  }
  Tensor forward(const Tensor& h) override { return attend(h, Tensor(), nullptr, 0, 0); }
  // `mask`: eager attention's (B, 1, T, T) causal mask (undefined for sdpa). With a cache
  // (generate()), the keys/values of earlier positions join before attention.
  Tensor attend(const Tensor& h, const Tensor& mask, KvCache* cache, size_t layer, int64_t pos) {
    ModuleScope ms(path_id());
    CategoryScope cs(Category::Attention);
    const int64_t B = h.size(0), T = h.size(1), C = a_.hidden, H = a_.heads, D = a_.head_dim;
    // query, key, value = c_attn(hidden_states).split(split_size, dim=2); each
    // .view(B, T, -1, head_dim).transpose(1, 2): views of the one projection. One split
    // node, so backward cats the three gradients into one block (not three zeroed slices).
    // Key and value are viewed before the query (newer nodes go first in backward).
    Tensor q, k, v;
    {
      std::vector<Tensor> parts = split(call("c_attn", h), C, -1);
      k = parts[1].view({B, T, H, D}).transpose(1, 2);
      v = parts[2].view({B, T, H, D}).transpose(1, 2);
      q = parts[0].view({B, T, H, D}).transpose(1, 2);
    }
    if (cache) {
      // key_states, value_states = past_key_values.update(key_states, value_states, layer_idx)
      auto kv = cache->update(layer, k, v, pos);
      k = kv.first;
      v = kv.second;
    }
    Tensor o, weights;  // attn_output, attn_weights (eager's, held until this forward returns)
    if (a_.eager) {
      // GPT-2's eager_attention_forward: softmax in the scores' dtype, .type(value.dtype),
      // its output transposed as a view (the reshape below copies it)
      hf::EagerAttention e;
      e.scaling = 1.0 / std::sqrt(double(D));
      e.dropout = training() ? a_.attn_pdrop : 0.0;
      e.upcast = false;
      std::tie(o, weights) = eager_attention(q, k, v, mask, e, false);
    } else {
      // sdpa_attention_forward: causal without a mask, dropout=attn_dropout.p if training,
      // scaling head_dim ** -0.5; its output .transpose(1, 2).contiguous()
      o = scaled_dot_product_attention(q, k, v, T > 1, false, 1.0 / std::sqrt(double(D)),
                                       training() ? a_.attn_pdrop : 0.0);
      o = o.transpose(1, 2).contiguous();
    }
    o = o.reshape({B, T, C}).contiguous();
    o = call("c_proj", o);
    return dropout(o, a_.resid_pdrop, training());  // resid_dropout; c_proj's output freed
  }

 private:
  const Arch& a_;
};

class Gpt2Mlp : public Container {
 public:
  Gpt2Mlp(const Arch& a, DType dt) : Container("GPT2MLP"), a_(a) {
    add("c_fc", std::make_shared<Conv1D>(a.intermediate, a.hidden, dt));
    add("c_proj", std::make_shared<Conv1D>(a.hidden, a.intermediate, dt));
  }
  Tensor forward(const Tensor& x) override {
    CategoryScope cs(Category::Mlp);
    Tensor h = call("c_fc", x);
    h = act(h);
    h = call("c_proj", h);
    return dropout(h, a_.resid_pdrop, training());
  }

 private:
  Tensor act(const Tensor& x) const {
    if (a_.act == "gelu_new") return new_gelu(x);
    if (a_.act == "gelu_pytorch_tanh") return gelu(x, true);
    if (a_.act == "gelu") return gelu(x, false);
    if (a_.act == "silu") return silu(x);
    throw std::invalid_argument("hf: activation_function \"" + a_.act +
                                "\" is not supported (gelu_new, gelu, gelu_pytorch_tanh, silu)");
  }
  const Arch& a_;
};

class Gpt2Block : public Container {
 public:
  Gpt2Block(const Arch& a, DType dt) : Container("GPT2Block") {
    add("ln_1", std::make_shared<LayerNorm>(a.hidden, dt));
    add("attn", std::make_shared<Gpt2Attention>(a, dt));
    add("ln_2", std::make_shared<LayerNorm>(a.hidden, dt));
    add("mlp", std::make_shared<Gpt2Mlp>(a, dt));
  }
  Tensor forward(const Tensor& x) override { return run(x, Tensor(), nullptr, 0, 0); }
  Tensor run(const Tensor& x, const Tensor& mask, KvCache* cache, size_t layer, int64_t pos) {
    ModuleScope ms(path_id());
    // GPT2Block.forward's locals: hidden_states holds each norm's output until the residual
    // sum rebinds it, and at return CPython drops the rest in the order they were first
    // bound (residual, attn_output, feed_forward_hidden_states): declared here in reverse.
    Tensor ff, attn_output, residual;
    Tensor h = norm("ln_1", x);
    attn_output = std::static_pointer_cast<Gpt2Attention>(get("attn"))->attend(h, mask, cache, layer, pos);
    h = engine::add(attn_output, x);  // hidden_states = attn_output + residual
    residual = h;
    h = norm("ln_2", h);
    ff = call("mlp", h);
    h = engine::add(residual, ff);  // hidden_states = residual + feed_forward_hidden_states
    return h;
  }

 private:
  Tensor norm(const char* n, const Tensor& x) {
    CategoryScope cs(Category::Norm);
    return call(n, x);
  }
};

class Gpt2LMHeadModel : public CausalLM {
 public:
  Gpt2LMHeadModel(const KindArgs& args, DType dt) : CausalLM(args) {
    const Arch& a = arch_;
    if (a.hidden % a.heads != 0)
      throw std::invalid_argument(args.path + ".config: n_embd (" + std::to_string(a.hidden) +
                                  ") must be divisible by n_head (" + std::to_string(a.heads) + ")");
    auto transformer = std::make_shared<Container>("GPT2Model");
    wte_ = std::make_shared<Embedding>(a.vocab, a.hidden, dt);
    transformer->add("wte", wte_);
    wpe_ = std::make_shared<Embedding>(a.max_positions, a.hidden, dt);
    transformer->add("wpe", wpe_);
    auto list = std::make_shared<Container>("ModuleList");
    for (int64_t i = 0; i < a.layers; ++i) {
      blocks_.push_back(std::make_shared<Gpt2Block>(a, dt));
      list->add(std::to_string(i), blocks_.back());
    }
    transformer->add("h", list);
    ln_f_ = std::make_shared<LayerNorm>(a.hidden, dt);
    transformer->add("ln_f", ln_f_);
    register_module("transformer", transformer);
    make_lm_head(dt, wte_->weight);
  }

  Tensor forward(const Tensor& idx) override {
    check_length(idx.size(1), "n_positions");
    return head(transformer_forward(idx), idx);
  }

  // A cached forward outside generate() (the data tests): generate()'s inputs for `idx`.
  Tensor forward_cached(const Tensor& idx, KvCache& cache, int64_t pos) override {
    return forward_generate(generation_inputs(idx, pos), cache, pos);
  }

  // generate() with the dynamic cache, as for the Llama-shaped decoder: GPT2Model over the
  // new tokens with generate()'s position_ids, then lm_head on the last position only.
  Tensor forward_generate(const GenerateInputs& in, KvCache& cache, int64_t pos) override {
    if (arch_.eager)
      throw std::invalid_argument(
          "hf: generation with attn_implementation \"eager\" is not modelled yet (its per-step masks); use \"sdpa\"");
    check_length(pos + in.input_ids.size(1), "n_positions");
    Tensor h = transformer_cached(in, cache, pos);
    Tensor last = h.slice(1, h.size(1) - 1, h.size(1));
    h.reset();
    CategoryScope cs(Category::Logits);
    return (*lm_head_)(last);
  }

  void apply_finetune(const FinetuneSpec& f) override {
    adapted_ = f.method != "full";
    std::vector<std::shared_ptr<PeftLoraLinear>> wrapped;
    FinetunePlan plan;
    plan.depth = arch_.layers;
    plan.block_prefix = "transformer.h.";
    plan.always_frozen = {"transformer.wte", "transformer.wpe"};
    plan.lora_sites = [this](const std::vector<std::string>& targets) { return lora_sites(targets); };
    plan.wrap = [&](std::shared_ptr<Linear> base) {
      const bool conv = std::dynamic_pointer_cast<Conv1D>(base) != nullptr;
      wrapped.push_back(std::make_shared<PeftLoraLinear>(base, f.rank, f.alpha, f.dropout, conv));
      return wrapped.back();
    };
    plan.after = [&] {
      for (auto& w : wrapped) w->upcast();
    };
    apply_finetune_plan(*this, f, plan);
  }

 private:
  // PEFT's target matching over Conv1D (and Linear) modules: c_attn, c_proj, c_fc.
  std::vector<LoraSite> lora_sites(const std::vector<std::string>& targets) {
    std::vector<LoraSite> out;
    std::vector<bool> used(targets.size(), false);
    std::function<void(Module&)> walk = [&](Module& m) {
      for (auto& [name, child] : m.children()) {
        bool hit = false;
        for (size_t i = 0; i < targets.size(); ++i)
          if (targets[i] == name && std::dynamic_pointer_cast<Linear>(child)) hit = used[i] = true;
        if (hit)
          out.push_back({&m, name});
        else
          walk(*child);
      }
    };
    walk(*this);
    for (size_t i = 0; i < targets.size(); ++i)
      if (!used[i])
        throw std::invalid_argument(
            "LoRA target \"" + targets[i] +
            "\" names no Conv1D/Linear module of GPT2LMHeadModel (c_attn, c_proj, c_fc, lm_head)");
    return out;
  }

  // GPT2Model.forward: wte, positions, wpe, their sum, the mask probe, drop, the blocks, ln_f.
  Tensor transformer_forward(const Tensor& idx) {
    const int64_t B = idx.size(0), T = idx.size(1);
    CategoryScope cs(Category::Activation);
    Tensor inputs_embeds = (*wte_)(idx);
    // enable_input_require_grads() (with checkpointing and LoRA/freeze, as the protocol calls
    // it): wte's forward hook marks its output as needing grad, so the embedding dropout's mask
    // is kept for backward
    if (adapted_ && checkpoint_.mode != CheckpointSpec::Mode::None && training()) {
      inputs_embeds.requires_grad_(true);
      // ... and, a leaf now, it is held by its AccumulateGrad (with the .grad it gets in
      // backward) for as long as the graph lives, past this forward's return
      Tensor leaf = inputs_embeds;
      inputs_embeds = apply_post_backward_hook(inputs_embeds, [leaf] {});
    }
    Tensor position_ids;
    {
      // torch.arange(T) + past_seen_tokens, then unsqueeze(0)
      Tensor ar = arange(0, T);
      position_ids = positions_from(ar, 0).unsqueeze(0);
    }
    Tensor position_embeds = (*wpe_)(position_ids);
    Tensor x = add(inputs_embeds, position_embeds);
    packed_sequence_check(position_ids, B);  // create_causal_mask (sdpa, no padding: None)
    // eager: the mask materialised, in the input embeddings' dtype
    Tensor causal_mask = arch_.eager ? eager_causal_mask(B, T, inputs_embeds.dtype(), 0) : Tensor();
    x = dropout(x, arch_.embd_pdrop, training());
    // HF checkpoints partial(block.__call__, **kwargs): position_ids (and the mask) ride along.
    // The blocks rebind hidden_states (drop's output goes when the first block returns).
    std::vector<Tensor> extra{position_ids};
    if (causal_mask.defined()) extra.push_back(causal_mask);
    x = run_blocks(
        blocks_.size(), std::move(x), checkpoint_,
        [this](size_t i, const Tensor& h, const std::vector<Tensor>& ex) {
          return blocks_[i]->run(h, ex.size() > 1 ? ex[1] : Tensor(), nullptr, i, 0);
        },
        extra);
    extra.clear();
    Tensor out;
    {
      CategoryScope ncs(Category::Norm);
      out = (*ln_f_)(x);
    }
    x.reset();
    // CPython clears the frame's locals in slot order: inputs_embeds (a parameter) before
    // position_embeds
    inputs_embeds.reset();
    position_embeds.reset();
    return out;
  }

  // GPT2Model.forward under generate(): wte, wpe at generate()'s position_ids (batch, T),
  // their sum, the blocks with the cache (no mask: SDPA's is_causal), ln_f. No dropout (eval).
  Tensor transformer_cached(const GenerateInputs& in, KvCache& cache, int64_t pos) {
    const int64_t B = in.input_ids.size(0), T = in.input_ids.size(1);
    CategoryScope cs(Category::Activation);
    Tensor inputs_embeds = (*wte_)(in.input_ids);
    if (in.position_ids.has_data()) throw std::invalid_argument("hf: generation runs on the simulated device only");
    Tensor position_embeds = (*wpe_)(in.position_ids);
    Tensor x = add(inputs_embeds, position_embeds);
    hf::sdpa_mask_skipped(B, pos + T);  // create_causal_mask: SDPA's causal flag serves
    cache.copy_first = true;            // DynamicLayer: cat([empty, k]) copies the first keys/values
    for (size_t i = 0; i < blocks_.size(); ++i) x = blocks_[i]->run(x, Tensor(), &cache, i, pos);
    Tensor out;
    {
      CategoryScope ncs(Category::Norm);
      out = (*ln_f_)(x);
    }
    x.reset();
    return out;
  }

  std::shared_ptr<Embedding> wte_, wpe_;
  std::vector<std::shared_ptr<Gpt2Block>> blocks_;
  std::shared_ptr<LayerNorm> ln_f_;
  bool adapted_ = false;  // LoRA or freeze
};

}  // namespace

std::unique_ptr<Model> build_gpt2(const KindArgs& a, DType weights) {
  return std::make_unique<Gpt2LMHeadModel>(a, weights);
}

}  // namespace vramlab::engine::hf
