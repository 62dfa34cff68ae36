// The Hugging Face decoder written once (transformers 5.17, modeling_llama.py and the
// files derived from it), with the switches of hf::Arch for what an architecture changes.
// Each forward follows the modeling code line by line: a Python local lives until it is
// rebound or its function returns, an expression's temporaries until the op that took
// them has run, and elementwise results take their first operand's memory layout (which
// keeps q/k after rotary in the (B, T, H, D) layout of the projections, so SDPA's output
// is already contiguous after .transpose(1, 2), as in PyTorch).
#include "engine/models/hf/decoder.h"

#include <cmath>
#include <stdexcept>

#include "engine/autocast/autocast.h"
#include "engine/core/alloc_tag.h"
#include "engine/core/grad_mode.h"
#include "engine/models/hf/modules.h"
#include "engine/models/hf/moe.h"
#include "engine/models/hf/rope.h"
#include "engine/models/transformer_common.h"
#include "engine/nn/checkpointing.h"
#include "engine/nn/embedding.h"
#include "engine/nn/lora.h"
#include "engine/ops/attention.h"
#include "engine/ops/common.h"
#include "engine/ops/ops.h"

namespace vramlab::engine {

namespace {

using hf::Arch;
using hf::Container;
using hf::RmsNorm;

hf::NormStyle norm_style(const Arch& a) {
  return a.gemma_norm ? hf::NormStyle::Gemma : a.olmo_norm ? hf::NormStyle::Olmo : hf::NormStyle::Llama;
}

// rotate_half(x) * sin + x * cos on (B, T, H, D) with tables (1, T, 1, D):
// q_embed = (q * cos) + (rotate_half(q) * sin).
Tensor apply_rotary(const Tensor& x, const Tensor& cos, const Tensor& sin) {
  Tensor a = mul(x, cos);
  Tensor b;
  {
    Tensor rot;
    {
      const int64_t D = x.size(-1);
      Tensor x1 = x.slice(-1, 0, D / 2), x2 = x.slice(-1, D / 2, D);
      Tensor n = neg(x2);
      rot = cat({n, x1}, -1);
    }
    b = mul(rot, sin);
  }
  return add(a, b);
}

class HfAttention : public Container {
 public:
  HfAttention(const Arch& a, DType dt) : Container("Attention"), a_(a) {
    const int64_t C = a.hidden, H = a.heads, KV = a.kv_heads, D = a.head_dim;
    if (a.gpt2) {
      add("c_attn", std::make_shared<Linear>(C, 3 * C, true, dt));
      add("c_proj", std::make_shared<Linear>(C, C, true, dt));
      return;
    }
    if (a.fused_qkv) {
      add("o_proj", std::make_shared<Linear>(H * D, C, a.o_bias, dt));
      add("qkv_proj", std::make_shared<Linear>(C, (H + 2 * KV) * D, a.q_bias, dt));
      return;
    }
    add("q_proj", std::make_shared<Linear>(C, H * D, a.q_bias, dt));
    add("k_proj", std::make_shared<Linear>(C, KV * D, a.k_bias, dt));
    add("v_proj", std::make_shared<Linear>(C, KV * D, a.v_bias, dt));
    add("o_proj", std::make_shared<Linear>(H * D, C, a.o_bias, dt));
    if (a.qk_norm == Arch::QkNorm::PerHead) {
      add("q_norm", std::make_shared<RmsNorm>(D, a.norm_eps, dt, norm_style(a)));
      add("k_norm", std::make_shared<RmsNorm>(D, a.norm_eps, dt, norm_style(a)));
    } else if (a.qk_norm == Arch::QkNorm::Full) {
      add("q_norm", std::make_shared<RmsNorm>(H * D, a.norm_eps, dt, norm_style(a)));
      add("k_norm", std::make_shared<RmsNorm>(KV * D, a.norm_eps, dt, norm_style(a)));
    }
  }

  // (B, T, C) -> (B, T, C); cos/sin (1, T, 1, D) in the hidden states' dtype. With a
  // cache, keys/values of earlier positions join before attention.
  Tensor attend(const Tensor& h, const Tensor& cos, const Tensor& sin, KvCache* cache, size_t layer, int64_t pos) {
    ModuleScope ms(path_id());
    CategoryScope cs(Category::Attention);
    const int64_t B = h.size(0), T = h.size(1), H = a_.heads, KV = a_.kv_heads, D = a_.head_dim;
    // q, k, v in (B, T, heads, D): the views before .transpose(1, 2)
    Tensor q, k, v;
    if (a_.fused_qkv) {
      Tensor qkv = call("qkv_proj", h);
      q = qkv.slice(-1, 0, H * D).view({B, T, H, D});
      k = qkv.slice(-1, H * D, (H + KV) * D).view({B, T, KV, D});
      v = qkv.slice(-1, (H + KV) * D, (H + 2 * KV) * D).view({B, T, KV, D});
    } else if (a_.qk_norm == Arch::QkNorm::Full) {
      q = call("q_norm", call("q_proj", h)).view({B, T, H, D});
      k = call("k_norm", call("k_proj", h)).view({B, T, KV, D});
      v = call("v_proj", h).view({B, T, KV, D});
    } else if (a_.qk_norm == Arch::QkNorm::PerHead) {
      q = call("q_norm", call("q_proj", h).view({B, T, H, D}));
      k = call("k_norm", call("k_proj", h).view({B, T, KV, D}));
      v = call("v_proj", h).view({B, T, KV, D});
    } else {
      q = call("q_proj", h).view({B, T, H, D});
      k = call("k_proj", h).view({B, T, KV, D});
      v = call("v_proj", h).view({B, T, KV, D});
    }
    {
      // query_states, key_states = apply_rotary_pos_emb(...): both computed, then rebound
      auto rotate = [&](const Tensor& t) {
        Tensor e = apply_rotary(t, cos, sin).transpose(1, 2);
        return a_.rope_cat_copy ? e.contiguous() : e;
      };
      Tensor qe = rotate(q);
      Tensor ke = rotate(k);
      if (a_.rope_float) {
        // return q_embed.to(q_type), k_embed.to(k_type): the float32 results go at return
        Tensor q16 = qe.to(q.dtype()), k16 = ke.to(k.dtype());
        q = q16;
        k = k16;
      } else {
        q = qe;
        k = ke;
      }
    }
    v = v.transpose(1, 2);
    if (cache) {
      auto kv = cache->update(layer, k, v, pos);
      k = kv.first;
      v = kv.second;
    }
    // sdpa_attention_forward: GQA inside SDPA (no mask), causal when more than one query
    const double scale =
        a_.query_pre_attn_scalar > 0 ? 1.0 / std::sqrt(a_.query_pre_attn_scalar) : 1.0 / std::sqrt(double(D));
    Tensor o = scaled_dot_product_attention(q, k, v, T > 1, H != KV, scale);
    o = o.transpose(1, 2).contiguous();
    o = o.reshape({B, T, H * D}).contiguous();
    // query_states, key_states and value_states are locals of the attention's forward:
    // under checkpointing nothing saves them, yet they live until it returns, through o_proj.
    return call("o_proj", o);
  }

 private:
  const Arch& a_;
};

class HfMlp : public Container {
 public:
  HfMlp(const Arch& a, DType dt) : Container("MLP"), a_(a) {
    if (a.fused_gate_up) {
      add("gate_up_proj", std::make_shared<Linear>(a.hidden, 2 * a.intermediate, false, dt));
      add("down_proj", std::make_shared<Linear>(a.intermediate, a.hidden, false, dt));
      return;
    }
    add("gate_proj", std::make_shared<Linear>(a.hidden, a.intermediate, a.mlp_bias, dt));
    add("up_proj", std::make_shared<Linear>(a.hidden, a.intermediate, a.mlp_bias, dt));
    add("down_proj", std::make_shared<Linear>(a.intermediate, a.hidden, a.mlp_bias, dt));
  }
  Tensor forward(const Tensor& x) override {
    CategoryScope cs(Category::Mlp);
    if (a_.fused_gate_up) {
      // up_states = gate_up_proj(x); gate, up_states = chunk(2); up_states = up_states * act(gate)
      Tensor gu = call("gate_up_proj", x);
      const int64_t I = a_.intermediate;
      Tensor gate = gu.slice(-1, 0, I), up = gu.slice(-1, I, 2 * I);
      gu.reset();
      Tensor p;
      {
        Tensor g = act(gate);
        p = mul(up, g);
      }
      up.reset();
      gate.reset();
      return call("down_proj", p);
    }
    // down_proj(act_fn(gate_proj(x)) * up_proj(x))
    Tensor p;
    {
      Tensor g = act(call("gate_proj", x));
      Tensor u = call("up_proj", x);
      p = mul(g, u);
    }
    return call("down_proj", p);
  }

 private:
  Tensor act(const Tensor& x) const {
    if (a_.act == "silu") return silu(x);
    if (a_.act == "gelu_pytorch_tanh") return gelu(x, true);
    if (a_.act == "gelu_new") return hf::new_gelu(x);
    if (a_.act == "gelu") return gelu(x, false);
    throw std::invalid_argument("hf: activation \"" + a_.act +
                                "\" is not supported (silu, gelu, gelu_new, gelu_pytorch_tanh)");
  }
  const Arch& a_;
};

class HfLayer : public Container {
 public:
  HfLayer(const Arch& a, DType dt, size_t index) : Container("DecoderLayer"), a_(a) {
    const int64_t C = a.hidden;
    auto norm = [&] { return std::make_shared<RmsNorm>(C, a.norm_eps, dt, norm_style(a)); };
    add("self_attn", std::make_shared<HfAttention>(a, dt));
    if (a.sparse[index])
      add("mlp", hf::make_moe_block(a, dt));  // moe.cpp
    else
      add("mlp", std::make_shared<HfMlp>(a, dt));
    if (a.norms != Arch::Norms::Post) add("input_layernorm", norm());
    add("post_attention_layernorm", norm());
    if (a.norms == Arch::Norms::Sandwich) add("pre_feedforward_layernorm", norm());
    if (a.norms != Arch::Norms::Pre) add("post_feedforward_layernorm", norm());
  }

  Tensor forward_layer(const Tensor& x, const Tensor& cos, const Tensor& sin, KvCache* cache, size_t layer,
                       int64_t pos) {
    ModuleScope ms(path_id());
    if (a_.sliding[layer] && a_.sliding_window > 0 && pos + x.size(1) >= a_.sliding_window)
      throw std::invalid_argument("hf: " + std::to_string(pos + x.size(1)) + " positions reach the sliding window (" +
                                  std::to_string(a_.sliding_window) +
                                  "): its attention mask is not modelled yet (sequences shorter than the window are)");
    auto attn = std::static_pointer_cast<HfAttention>(get("self_attn"));
    // residual = hidden_states; hidden_states = input_layernorm(hidden_states); self_attn; ...
    Tensor h = a_.norms == Arch::Norms::Post ? x : norm("input_layernorm", x);
    h = attn->attend(h, cos, sin, cache, layer, pos);
    if (a_.norms != Arch::Norms::Pre) h = norm("post_attention_layernorm", h);
    Tensor r = engine::add(x, h);
    h.reset();  // hidden_states = residual + hidden_states frees the attention output here
    h = a_.norms == Arch::Norms::Pre        ? norm("post_attention_layernorm", r)
        : a_.norms == Arch::Norms::Sandwich ? norm("pre_feedforward_layernorm", r)
                                            : r;
    h = call("mlp", h);
    if (a_.norms != Arch::Norms::Pre) h = norm("post_feedforward_layernorm", h);
    return engine::add(r, h);
  }

 private:
  Tensor norm(const char* n, const Tensor& x) {
    CategoryScope cs(Category::Norm);
    return call(n, x);
  }
  const Arch& a_;
};

// PEFT's target matching: every nn.Linear whose module name is a target (its full name
// ends with ".target"), in model.named_modules() order.
void collect_sites(Module& m, const std::vector<std::string>& targets, std::vector<LoraSite>& out,
                   std::vector<bool>& used) {
  for (auto& [name, child] : m.children()) {
    bool hit = false;
    for (size_t i = 0; i < targets.size(); ++i)
      if (targets[i] == name && std::dynamic_pointer_cast<Linear>(child)) {
        hit = true;
        used[i] = true;
      }
    if (hit)
      out.push_back({&m, name});
    else
      collect_sites(*child, targets, out, used);
  }
}

std::vector<LoraSite> peft_sites(Module& root, const std::vector<std::string>& targets) {
  std::vector<LoraSite> out;
  std::vector<bool> used(targets.size(), false);
  collect_sites(root, targets, out, used);
  for (size_t i = 0; i < targets.size(); ++i)
    if (!used[i])
      throw std::invalid_argument("LoRA target \"" + targets[i] + "\" names no Linear module of " + root.type_name() +
                                  " (HF module names such as q_proj, v_proj, gate_proj)");
  return out;
}

class HfCausalLM : public Model {
 public:
  HfCausalLM(const KindArgs& args, DType dt) : arch_(hf::read_arch(args)), seq_(args.i("seq")), dt_(dt) {
    const std::string attn = args.s("attn_implementation");
    if (attn != "sdpa")
      throw std::invalid_argument(args.path + ".attn_implementation \"" + attn +
                                  "\" is not modelled yet (only \"sdpa\")");
    const Arch& a = arch_;
    {
      // transformers imports torchaudio.compliance.kaldi lazily while the model is built,
      // under torch.device("cuda"): its module-level EPSILON = torch.tensor(eps) lands on
      // the GPU and stays (a 4-byte float32 scalar; seen in the allocator's snapshot)
      CategoryScope cs(Category::Other);
      import_scalar_ = make_tensor({}, DType::Float32, "torch.tensor");
    }
    auto model = std::make_shared<Container>("Model");
    embed_ = std::make_shared<Embedding>(a.vocab, a.hidden, dt);
    model->add("embed_tokens", embed_);
    if (a.embed_scale) {
      // Gemma's ScaledWordEmbedding: embed_scale = nn.Buffer(torch.tensor(sqrt(hidden)))
      CategoryScope cs(Category::Other);
      embed_scale_ = make_tensor({}, dt, "torch.tensor");
      model->add_buffer("embed_tokens.embed_scale", embed_scale_);
    }
    auto list = std::make_shared<Container>("ModuleList");
    for (int64_t i = 0; i < a.layers; ++i) {
      layers_.push_back(std::make_shared<HfLayer>(a, dt, size_t(i)));
      list->add(std::to_string(i), layers_.back());
    }
    model->add("layers", list);
    norm_ = std::make_shared<RmsNorm>(a.hidden, a.norm_eps, dt, norm_style(a));
    model->add("norm", norm_);
    // LlamaRotaryEmbedding: inv_freq from the rope type's init function and its clone
    rotary_ = std::make_shared<hf::RotaryEmbedding>(a.rope, a.head_dim);
    model->add("rotary_emb", rotary_);
    register_module("model", model);
    // nn.Linear(hidden, vocab) is made with its own weight either way; post_init's
    // tie_weights() then points it at embed_tokens.weight and the weight made is freed
    lm_head_ = std::make_shared<Linear>(a.hidden, a.vocab, false, dt);
    if (a.tie) lm_head_ = std::make_shared<Linear>(embed_->weight);
    register_module("lm_head", lm_head_);
  }
  std::string type_name() const override { return arch_.name; }

  Tensor forward(const Tensor& idx) override {
    const int64_t T = idx.size(1);
    if (T > arch_.max_positions)
      throw std::invalid_argument("hf: " + std::to_string(T) + " tokens exceed max_position_embeddings (" +
                                  std::to_string(arch_.max_positions) + ")");
    Tensor logits;
    {
      Tensor h = model_forward(idx, nullptr, 0);
      CategoryScope cs(Category::Logits);
      logits = (*lm_head_)(h);  // lm_head(hidden_states[:, slice(0, None), :])
      if (arch_.final_softcap > 0) {
        // logits = logits / cap; logits = torch.tanh(logits); logits = logits * cap
        logits = div(logits, arch_.final_softcap);
        logits = engine::tanh(logits);
        logits = mul(logits, arch_.final_softcap);
      }
    }
    {
      CategoryScope cs(Category::Logits);
      loss_ = hf::causal_lm_loss(logits, idx, arch_.vocab);
    }
    return logits;
  }

  Tensor forward_cached(const Tensor& idx, KvCache& cache, int64_t pos) override {
    hf::DecodeExpertsScope decode(pos > 0);  // generate() switches MoE experts after the prefill
    Tensor h = model_forward(idx, &cache, pos);
    Tensor last = h.slice(1, h.size(1) - 1, h.size(1));
    h.reset();
    CategoryScope cs(Category::Logits);
    return (*lm_head_)(last);
  }

  Tensor make_input(int64_t batch, int64_t seq) override { return randint({batch, seq > 0 ? seq : seq_}, arch_.vocab); }
  // labels=input_ids: the model shifts them itself, nothing more is allocated
  Tensor make_target(int64_t, int64_t, LossKind) override { return Tensor(); }
  bool loss_in_forward() const override { return true; }
  Tensor loss(const Tensor&, const Batch&, LossKind) override {
    Tensor l = std::move(loss_);
    loss_.reset();
    return l;
  }
  bool can_generate() const override { return true; }
  bool hf_generate() const override { return true; }
  int64_t vocab() const override { return arch_.vocab; }
  int64_t num_blocks() const override { return arch_.layers; }

  void apply_finetune(const FinetuneSpec& f) override {
    std::vector<std::shared_ptr<PeftLoraLinear>> wrapped;
    FinetunePlan plan;
    plan.depth = arch_.layers;
    plan.block_prefix = "model.layers.";
    plan.always_frozen = {"model.embed_tokens"};
    plan.lora_sites = [this](const std::vector<std::string>& targets) { return peft_sites(*this, targets); };
    plan.wrap = [&](std::shared_ptr<Linear> base) {
      wrapped.push_back(std::make_shared<PeftLoraLinear>(base, f.rank, f.alpha, f.dropout));
      return wrapped.back();
    };
    // get_peft_model's autocast_adapter_dtype: half adapters upcast to float32, in module order
    plan.after = [&] {
      for (auto& w : wrapped) w->upcast();
    };
    apply_finetune_plan(*this, f, plan);
  }

 private:
  // LlamaModel.forward: embeddings, position ids, rotary tables, the layers, the norm.
  Tensor model_forward(const Tensor& idx, KvCache* cache, int64_t past) {
    const int64_t B = idx.size(0), T = idx.size(1);
    if (idx.has_data() && arch_.rope.type != "default")
      throw std::invalid_argument("hf: rope type \"" + arch_.rope.type +
                                  "\" runs on the simulated devices only (the data backends compute the default "
                                  "rotary tables)");
    if (idx.has_data() && arch_.name == "Gemma3ForCausalLM")
      throw std::invalid_argument(
          "hf: Gemma3ForCausalLM runs on the simulated devices only (its sliding layers' local rotary tables are not "
          "computed on the data backends)");
    Tensor emb;
    {
      CategoryScope cs(Category::Activation);
      emb = (*embed_)(idx);
      // Gemma: super().forward(input_ids) * self.embed_scale (the unscaled rows freed)
      if (arch_.embed_scale) emb = mul(emb, std::sqrt(double(arch_.hidden)));
    }
    Tensor position_ids;
    if (cache) {
      // generate() passes position_ids from the attention mask (cumsum - 1): (batch, T) int64
      position_ids = make_tensor({B, T}, DType::Int64, "cumsum");
      if (position_ids.has_data())  // no padding: past, past + 1, ... in every row
        for (int64_t b = 0; b < B; ++b) be().arange(position_ids.slice(0, b, b + 1).view({T}), double(past));
    } else {
      // torch.arange(T) + past_seen_tokens, then unsqueeze(0)
      Tensor ar = arange(0, T);
      position_ids = hf::positions_from(ar, past).unsqueeze(0);
    }
    if (!cache) hf::packed_sequence_check(position_ids, B);
    Tensor x = emb;
    Tensor cos, sin;
    rotary_->update(past + T);  // @dynamic_rope_update
    hf::rotary_cos_sin(rotary_->inv_freq(), position_ids, arch_.rope_float ? DType::Float32 : x.dtype(),
                       arch_.rope_theta, cos, sin, past);
    // (1, T, D) -> (1, T, 1, D): the tables against (B, T, H, D)
    Tensor c4 = cos.unsqueeze(2), s4 = sin.unsqueeze(2);
    if (cache) cache->copy_first = true;  // DynamicLayer: cat([empty, k]) copies the first keys/values
    if (cache) {
      for (size_t i = 0; i < layers_.size(); ++i) x = layers_[i]->forward_layer(x, c4, s4, cache, i, past);
    } else {
      x = run_blocks(layers_.size(), x, checkpoint_,
                     [this](size_t i, const Tensor& h, const std::vector<Tensor>& ex) {
                       return layers_[i]->forward_layer(h, ex[0], ex[1], nullptr, i, 0);
                     },
                     // HF checkpoints partial(layer.__call__, **kwargs): position_ids rides
                     // along with the tables until each layer's recomputation
                     {c4, s4, position_ids});
    }
    CategoryScope cs(Category::Norm);
    Tensor out = (*norm_)(x);
    x.reset();
    position_ids.reset();
    emb.reset();
    return out;
  }

  Arch arch_;
  int64_t seq_;
  DType dt_;
  std::shared_ptr<Embedding> embed_;
  std::vector<std::shared_ptr<HfLayer>> layers_;
  std::shared_ptr<RmsNorm> norm_;
  std::shared_ptr<Linear> lm_head_;
  std::shared_ptr<hf::RotaryEmbedding> rotary_;
  Tensor import_scalar_, embed_scale_;
  Tensor loss_;
};

}  // namespace

std::unique_ptr<Model> build_hf(const KindArgs& a, DType weights) {
  // GPT-2 is not a Llama-shaped decoder (learned positions, LayerNorm, Conv1D, dropout): its own file
  if (hf::read_arch(a).gpt2) return hf::build_gpt2(a, weights);
  return std::make_unique<HfCausalLM>(a, weights);
}

}  // namespace vramlab::engine
