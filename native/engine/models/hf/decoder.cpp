// The Hugging Face decoder written once (transformers 5.17, modeling_llama.py and the
// files derived from it), with the switches of hf::Arch for what an architecture changes.
// Each forward follows the modeling code line by line: a Python local lives until it is
// rebound or its function returns, an expression's temporaries until the op that took
// them has run, and elementwise results take their first operand's memory layout (which
// keeps q/k after rotary in the (B, T, H, D) layout of the projections, so SDPA's output
// is already contiguous after .transpose(1, 2), as in PyTorch).
#include "engine/models/hf/decoder.h"

#include <algorithm>
#include <cmath>
#include <tuple>
#include <stdexcept>

#include "engine/autocast/autocast.h"
#include "engine/core/alloc_tag.h"
#include "engine/core/grad_mode.h"
#include "engine/models/hf/causal_lm.h"
#include "engine/models/hf/eager.h"
#include "engine/models/hf/generation_masks.h"
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

// rotate_half(x) * sin + x * cos for x in (B, T, H, D) with tables (1, T, 1, D):
// q_embed = (q * cos) + (rotate_half(q) * sin). The modeling code applies it to the
// (B, H, T, D) views after .transpose(1, 2), so each product and rotate_half's slices are
// taken on those views here too: in backward both gradients of x then meet as fresh
// (B, H, T, D) tensors and add in place, and the sum reaches the projection's view backward
// contiguous in (B, H, T, D), which copies it. The sum itself is laid out (B, T, H, D), as
// PyTorch's TensorIterator lays out q * cos (its first operand decides).
Tensor apply_rotary(const Tensor& x, const Tensor& cos, const Tensor& sin) {
  const Tensor xt = x.transpose(1, 2), cos_t = cos.transpose(1, 2), sin_t = sin.transpose(1, 2);
  Tensor a = mul(xt, cos_t);
  Tensor b;
  {
    Tensor rot;
    {
      const int64_t D = x.size(-1);
      Tensor x1 = xt.slice(-1, 0, D / 2), x2 = xt.slice(-1, D / 2, D);
      Tensor n = neg(x2);
      rot = cat({n, x1}, -1);
    }
    b = mul(rot, sin_t);
  }
  // the sum's operands are released left first
  Tensor out = add(a.transpose(1, 2), b.transpose(1, 2));
  a.reset();
  b.reset();
  return out;
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
  Tensor attend(const Tensor& h, const Tensor& cos, const Tensor& sin, const Tensor& mask, KvCache* cache, size_t layer,
                int64_t pos, std::vector<Tensor>* cache_tensors = nullptr) {
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
      auto kv = a_.sliding_window > 0 && a_.sliding[layer] ? window_update(*cache, layer, k, v, cache_tensors)
                                                           : cache->update(layer, k, v, pos);
      k = kv.first;
      v = kv.second;
    }
    const double scale =
        a_.query_pre_attn_scalar > 0 ? 1.0 / std::sqrt(a_.query_pre_attn_scalar) : 1.0 / std::sqrt(double(D));
    Tensor o, weights;  // attn_output, attn_weights (eager's, held until this forward returns)
    if (a_.eager) {
      hf::EagerAttention e;
      e.scaling = scale;
      e.softcap = a_.attn_softcap;
      std::tie(o, weights) = hf::eager_attention(q, k, v, mask, e, true);
    } else if (mask.defined()) {
      // sdpa_attention_forward with a mask (a sliding window masking something): HF repeats
      // k and v itself (no enable_gqa), not causal; the copies go when it returns
      Tensor kr = hf::repeat_kv(k, H / KV), vr = hf::repeat_kv(v, H / KV);
      o = scaled_dot_product_attention_masked(q, kr, vr, B, scale);
      kr.reset();  // sdpa_attention_forward's locals in slot order: key, then value
      vr.reset();
      o = o.transpose(1, 2).contiguous();
    } else {
      // sdpa_attention_forward: GQA inside SDPA (no mask), causal when more than one query
      o = scaled_dot_product_attention(q, k, v, T > 1, H != KV, scale);
      o = o.transpose(1, 2).contiguous();
    }
    o = o.reshape({B, T, H * D}).contiguous();
    // query_states, key_states and value_states are locals of the attention's forward:
    // under checkpointing nothing saves them, yet they live until it returns, through o_proj,
    // and then go in slot order (query, key, value)
    o = call("o_proj", o);
    q.reset();
    k.reset();
    v.reset();
    return o;
  }

 private:
  // DynamicSlidingWindowLayer.update: its window as a device scalar at the first update
  // (lazy_initialization), the full keys/values cat'ed and returned, and a view of their last
  // window - 1 positions kept, which keeps the whole cat alive until the next step's.
  std::pair<Tensor, Tensor> window_update(KvCache& cache, size_t layer, const Tensor& k, const Tensor& v,
                                          std::vector<Tensor>* cache_tensors) {
    CategoryScope cs(Category::KvCache);
    KvCache::Layer& l = cache.layers.at(layer);
    if (!l.k.defined() && cache_tensors) cache_tensors->push_back(make_tensor({}, DType::Int64, "_to_copy"));
    Tensor fk = l.k.defined() ? cat({l.k, k}, 2) : cat({k}, 2);
    Tensor fv = l.v.defined() ? cat({l.v, v}, 2) : cat({v}, 2);
    const int64_t n = fk.size(2), keep = std::min(n, a_.sliding_window - 1);
    l.k = fk.slice(2, n - keep, n);
    l.v = fv.slice(2, n - keep, n);
    return {fk, fv};
  }

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
      g.reset();  // the product's operands are released left first
      u.reset();
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

  Tensor forward_layer(const Tensor& x, const Tensor& cos, const Tensor& sin, const Tensor& mask, KvCache* cache,
                       size_t layer, int64_t pos, std::vector<Tensor>* cache_tensors = nullptr) {
    // through the module's forward hooks (fully_shard on each decoder layer)
    return hooked(x,
                  [&](const Tensor& in) { return layer_body(in, cos, sin, mask, cache, layer, pos, cache_tensors); });
  }

 private:
  Tensor layer_body(const Tensor& x, const Tensor& cos, const Tensor& sin, const Tensor& mask, KvCache* cache,
                    size_t layer, int64_t pos, std::vector<Tensor>* cache_tensors) {
    auto attn = std::static_pointer_cast<HfAttention>(get("self_attn"));
    // residual = hidden_states; hidden_states = input_layernorm(hidden_states); self_attn; ...
    Tensor h = a_.norms == Arch::Norms::Post ? x : norm("input_layernorm", x);
    h = attn->attend(h, cos, sin, mask, cache, layer, pos, cache_tensors);
    if (a_.norms != Arch::Norms::Pre) h = norm("post_attention_layernorm", h);
    Tensor r = engine::add(x, h);
    h.reset();  // hidden_states = residual + hidden_states frees the attention output here
    h = a_.norms == Arch::Norms::Pre        ? norm("post_attention_layernorm", r)
        : a_.norms == Arch::Norms::Sandwich ? norm("pre_feedforward_layernorm", r)
                                            : r;
    h = call("mlp", h);
    if (a_.norms != Arch::Norms::Pre) h = norm("post_feedforward_layernorm", h);
    // hidden_states = residual + hidden_states frees the MLP's output, then the return the residual
    Tensor out = engine::add(r, h);
    h.reset();
    r.reset();
    return out;
  }

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

class HfCausalLM : public hf::CausalLM {
 public:
  HfCausalLM(const KindArgs& args, DType dt) : CausalLM(args), dt_(dt) {
    const Arch& a = arch_;
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
    // LlamaRotaryEmbedding: inv_freq from the rope type's init function and its clone;
    // Gemma-3's holds a pair per layer type present (sorted: full, then sliding)
    const bool any_full = std::find(a.sliding.begin(), a.sliding.end(), false) != a.sliding.end();
    if (!a.rope_per_type || any_full) {
      rotary_ = std::make_shared<hf::RotaryEmbedding>(a.rope, a.head_dim);
      model->add("rotary_emb", rotary_);
    }
    if (a.rope_per_type && std::find(a.sliding.begin(), a.sliding.end(), true) != a.sliding.end()) {
      rotary_sliding_ = std::make_shared<hf::RotaryEmbedding>(a.rope_sliding, a.head_dim);
      model->add("rotary_emb_sliding", rotary_sliding_);
    }
    register_module("model", model);
    make_lm_head(dt, embed_->weight);
  }

  Tensor forward(const Tensor& idx) override {
    check_length(idx.size(1), "max_position_embeddings");
    return head(model_forward(idx, nullptr, 0), idx);
  }

  // A cached forward outside generate() (the data tests): generate()'s inputs for `idx`.
  Tensor forward_cached(const Tensor& idx, KvCache& cache, int64_t pos) override {
    return forward_generate(hf::generation_inputs(idx, pos), cache, pos);
  }

  Tensor forward_generate(const hf::GenerateInputs& in, KvCache& cache, int64_t pos) override {
    // (Qwen2/3 without sliding layers call the causal mask function alone, as Llama does)
    const bool any_sliding = std::find(arch_.sliding.begin(), arch_.sliding.end(), true) != arch_.sliding.end();
    if (arch_.eager && (arch_.masks == Arch::Masks::Both || (arch_.masks == Arch::Masks::PerLayerType && any_sliding)))
      throw std::invalid_argument(
          "hf: generation with attn_implementation \"eager\" is modelled for one mask per model (Llama, Mistral, ...), "
          "not for " +
          arch_.name + "'s per-layer-type masks; use \"sdpa\"");
    hf::DecodeExpertsScope decode(pos > 0);  // generate() switches MoE experts after the prefill
    Tensor h = model_forward(in.input_ids, &cache, pos, &in);
    Tensor last = h.slice(1, h.size(1) - 1, h.size(1));
    h.reset();
    CategoryScope cs(Category::Logits);
    return (*lm_head_)(last);
  }

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
  Tensor model_forward(const Tensor& idx, KvCache* cache, int64_t past, const hf::GenerateInputs* gen = nullptr) {
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
      position_ids = gen->position_ids;  // generate()'s, (batch, T) int64
    } else {
      // torch.arange(T) + past_seen_tokens, then unsqueeze(0)
      Tensor ar = arange(0, T);
      position_ids = hf::positions_from(ar, past).unsqueeze(0);
    }
    if (!cache) hf::packed_sequence_check(position_ids, B);
    // eager attention's masks (create_causal_mask / create_sliding_window_causal_mask), in
    // the inputs' dtype; each mask function checks the position ids for packing first
    Tensor full_mask, sliding_mask;
    if (arch_.eager && cache) {
      // (with a sliding window the mask function gains the window's overlay: not modelled)
      if (arch_.sliding_window > 0)
        throw std::invalid_argument("hf: eager generation with a sliding window is not modelled yet; use \"sdpa\"");
      full_mask = hf::eager_generation_mask(B, T, past + T, emb.dtype());
    } else if (cache) {
      generation_masks(B, T, past, full_mask, sliding_mask);
    } else if (arch_.eager && !cache) {
      const bool any_sliding = std::find(arch_.sliding.begin(), arch_.sliding.end(), true) != arch_.sliding.end();
      if (arch_.masks == Arch::Masks::One) {
        full_mask = hf::eager_causal_mask(B, T, emb.dtype(), arch_.sliding_window);
      } else {
        full_mask = hf::eager_causal_mask(B, T, emb.dtype(), 0);
        if (arch_.masks == Arch::Masks::Both || any_sliding) {
          hf::packed_sequence_check(position_ids, B);
          sliding_mask = hf::eager_causal_mask(B, T, emb.dtype(), arch_.sliding_window);
        }
      }
    } else if (!cache && arch_.sliding_window > 0 && T >= arch_.sliding_window &&
               std::find(arch_.sliding.begin(), arch_.sliding.end(), true) != arch_.sliding.end()) {
      // sdpa: the causal mask is skipped (is_causal), the sliding one materialised once the
      // window masks something (_ignore_causal_mask_sdpa with local_size), kept boolean
      if (arch_.masks == Arch::Masks::One) {
        full_mask = hf::causal_bool_mask(B, T, arch_.sliding_window);
      } else {
        hf::packed_sequence_check(position_ids, B);
        sliding_mask = hf::causal_bool_mask(B, T, arch_.sliding_window);
      }
    }
    Tensor x = emb;
    // the rotary tables: one pair, or (Gemma-3) one per layer type present, each from its
    // own inv_freq (Python iterates set(layer_types), whose order varies by run: sorted here)
    Tensor c4, s4, c4_sliding, s4_sliding;
    auto tables = [&](hf::RotaryEmbedding& r, Tensor& c, Tensor& s) {
      Tensor cos, sin;
      r.update(past + T);  // @dynamic_rope_update
      hf::rotary_cos_sin(r.inv_freq(), position_ids, arch_.rope_float ? DType::Float32 : x.dtype(), arch_.rope_theta,
                         cos, sin, past);
      // (1, T, D) -> (1, T, 1, D): the tables against (B, T, H, D)
      c = cos.unsqueeze(2);
      s = sin.unsqueeze(2);
    };
    if (rotary_) tables(*rotary_, c4, s4);
    if (rotary_sliding_) tables(*rotary_sliding_, c4_sliding, s4_sliding);
    // which tables and mask layer i reads, as indices into the extras below
    std::vector<Tensor> extra;
    auto slot = [&](const Tensor& t) -> int {
      if (!t.defined()) return -1;
      extra.push_back(t);
      return int(extra.size()) - 1;
    };
    // in the order the model passes them to each layer (the checkpoint frame releases them so):
    // attention_mask, then position_ids and position_embeddings in the modeling file's order
    const int mf = slot(full_mask), ms = slot(sliding_mask);
    if (arch_.position_ids_first) slot(position_ids);
    // (the (cos, sin) tuple: CPython releases a tuple's items last first)
    const int sf = slot(s4);
    const int cf = slot(c4);
    const int ss = slot(s4_sliding);
    const int cs_ = slot(c4_sliding);
    if (!arch_.position_ids_first) slot(position_ids);
    const bool one_mask = arch_.masks == Arch::Masks::One;
    std::vector<Tensor>* cache_tensors = gen ? gen->cache_tensors : nullptr;
    auto layer_fn = [this, cf, sf, cs_, ss, mf, ms, one_mask, cache_tensors](
                        size_t i, const Tensor& h, const std::vector<Tensor>& ex, KvCache* kv, int64_t at) {
      const bool sliding = arch_.sliding[i];
      const bool own_tables = sliding ? cs_ >= 0 : cf >= 0;
      const int c = own_tables ? (sliding ? cs_ : cf) : (cf >= 0 ? cf : cs_);
      const int s = own_tables ? (sliding ? ss : sf) : (sf >= 0 ? sf : ss);
      const int m = one_mask || !sliding || ms < 0 ? mf : ms;
      return layers_[i]->forward_layer(h, ex[size_t(c)], ex[size_t(s)], m >= 0 ? ex[size_t(m)] : Tensor(), kv, i, at,
                                       kv ? cache_tensors : nullptr);
    };
    if (cache) cache->copy_first = true;  // DynamicLayer: cat([empty, k]) copies the first keys/values
    if (cache) {
      for (size_t i = 0; i < layers_.size(); ++i) x = layer_fn(i, x, extra, cache, past);
    } else {
      // HF checkpoints partial(layer.__call__, **kwargs): position_ids (and eager's masks)
      // ride along with the tables until each layer's recomputation (in backward: layer_fn by value)
      x = run_blocks(
          layers_.size(), x, checkpoint_,
          [layer_fn](size_t i, const Tensor& h, const std::vector<Tensor>& ex) {
            return layer_fn(i, h, ex, nullptr, 0);
          },
          extra);
    }
    extra.clear();
    CategoryScope cs(Category::Norm);
    Tensor out = (*norm_)(x);
    x.reset();
    if (arch_.masks == Arch::Masks::One) {
      // LlamaModel.forward's locals at return: position_ids, inputs_embeds, the mask(s)
      position_ids.reset();
      emb.reset();
      full_mask.reset();
      sliding_mask.reset();
    } else {
      // Qwen2/Qwen3/Gemma build mask_kwargs = {..., inputs_embeds, ..., position_ids} and
      // causal_mask_mapping: the masks go with the mapping, then the kwargs release
      // inputs_embeds before position_ids (PyTorch's trace of Qwen2)
      full_mask.reset();
      sliding_mask.reset();
      emb.reset();
      position_ids.reset();
    }
    return out;
  }

  // The mask functions the model calls under generate() with sdpa, in its order: the causal one
  // (SDPA's causal flag serves), the sliding-window one (materialised once the window masks
  // something: a DynamicSlidingWindowLayer's kv length and offset). Mistral-like models call the
  // sliding one alone and read it as their one mask.
  void generation_masks(int64_t B, int64_t T, int64_t past, Tensor& full_mask, Tensor& sliding_mask) const {
    const bool any_sliding = std::find(arch_.sliding.begin(), arch_.sliding.end(), true) != arch_.sliding.end();
    const bool window = arch_.sliding_window > 0 && any_sliding;
    const bool causal_call = arch_.masks != Arch::Masks::One || !window;
    const bool sliding_call = window;
    if (causal_call) hf::sdpa_mask_skipped(B, past + T);
    if (!sliding_call) return;
    const hf::WindowSizes w = hf::window_mask_sizes(past, T, arch_.sliding_window);
    if (w.kv < arch_.sliding_window) {
      hf::sdpa_mask_skipped(B, past + T);
      return;
    }
    Tensor m = hf::sdpa_sliding_mask(B, past + T, T, w.kv, w.offset);
    (arch_.masks == Arch::Masks::One ? full_mask : sliding_mask) = m;
  }

  DType dt_;
  std::shared_ptr<Embedding> embed_;
  std::vector<std::shared_ptr<HfLayer>> layers_;
  std::shared_ptr<RmsNorm> norm_;
  std::shared_ptr<hf::RotaryEmbedding> rotary_, rotary_sliding_;  // the second: Gemma-3's sliding layers'
  Tensor embed_scale_;
};

}  // namespace

std::unique_ptr<Model> build_hf(const KindArgs& a, DType weights) {
  // GPT-2 is not a Llama-shaped decoder (learned positions, LayerNorm, Conv1D, dropout): its own file
  if (hf::read_arch(a).gpt2) return hf::build_gpt2(a, weights);
  return std::make_unique<HfCausalLM>(a, weights);
}

}  // namespace vramlab::engine
