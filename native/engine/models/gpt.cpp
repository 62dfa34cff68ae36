// gpt: GPT-2 style (nanoGPT's layout). Token + learned position embeddings, pre-LayerNorm
// blocks with a fused qkv Linear, causal scaled-dot-product attention and an output
// projection, a GELU(tanh) MLP of width 4*dim, a final LayerNorm and an lm_head tied
// to the token embedding. Each forward mirrors the reference Python line by line, so
// temporaries live exactly as long as Python's locals and expression values do.
#include <stdexcept>

#include "engine/core/alloc_tag.h"
#include "engine/models/family.h"
#include "engine/models/transformer_common.h"
#include "engine/nn/activation.h"
#include "engine/nn/checkpointing.h"
#include "engine/nn/embedding.h"
#include "engine/nn/layer_norm.h"
#include "engine/nn/lora.h"
#include "engine/ops/attention.h"
#include "engine/ops/ops.h"

namespace vramlab::engine {

namespace {

class GptAttn : public Module {
 public:
  GptAttn(int64_t C, int64_t H) : H_(H) {
    c_attn = std::make_shared<Linear>(C, 3 * C);
    c_proj = std::make_shared<Linear>(C, C);
    register_module("c_attn", c_attn);
    register_module("c_proj", c_proj);
  }
  std::string type_name() const override { return "GptAttn"; }

  Tensor forward(const Tensor& x) override {
    CategoryScope cs(Category::Attention);
    const int64_t B = x.size(0), T = x.size(1), C = x.size(2), D = C / H_;
    Tensor q, k, v;
    {
      auto qkv = split((*child("c_attn"))(x), C, 2);
      q = qkv[0].view({B, T, H_, D}).transpose(1, 2);
      k = qkv[1].view({B, T, H_, D}).transpose(1, 2);
      v = qkv[2].view({B, T, H_, D}).transpose(1, 2);
    }
    Tensor y = scaled_dot_product_attention(q, k, v, true);
    y = y.transpose(1, 2).contiguous().view({B, T, C});
    return (*child("c_proj"))(y);
  }

  // gpt_attn_step: the same with the layer's KV cache.
  Tensor forward_cached(const Tensor& x, KvCache& cache, size_t layer, int64_t pos) {
    CategoryScope cs(Category::Attention);
    ModuleScope ms(path_id());
    const int64_t B = x.size(0), T = x.size(1), C = x.size(2), D = C / H_;
    Tensor q, k, v;
    {
      auto qkv = split((*child("c_attn"))(x), C, 2);
      q = qkv[0].view({B, T, H_, D}).transpose(1, 2);
      k = qkv[1].view({B, T, H_, D}).transpose(1, 2);
      v = qkv[2].view({B, T, H_, D}).transpose(1, 2);
    }
    auto kv = cache.update(layer, k, v, pos);
    k = kv.first;
    v = kv.second;
    Tensor y = scaled_dot_product_attention(q, k, v, T > 1);
    return (*child("c_proj"))(y.transpose(1, 2).contiguous().view({B, T, C}));
  }

  std::shared_ptr<Module> child(const std::string& n) const {
    for (auto& [cn, c] : children_)
      if (cn == n) return c;
    throw std::logic_error("no " + n);
  }
  std::shared_ptr<Linear> c_attn, c_proj;

 private:
  int64_t H_;
};

class GptBlock : public Module {
 public:
  GptBlock(int64_t C, int64_t H) {
    ln_1 = std::make_shared<LayerNorm>(C);
    attn = std::make_shared<GptAttn>(C, H);
    ln_2 = std::make_shared<LayerNorm>(C);
    auto fc = std::make_shared<Linear>(C, 4 * C);
    auto gelu = std::make_shared<GELU>(true);
    auto proj = std::make_shared<Linear>(4 * C, C);
    register_module("ln_1", ln_1);
    register_module("attn", attn);
    register_module("ln_2", ln_2);
    register_module("c_fc", fc);
    register_module("gelu", gelu);
    register_module("c_proj", proj);
  }
  std::string type_name() const override { return "GptBlock"; }

  Tensor forward(const Tensor& x_in) override {
    // x = x + attn(ln_1(x)); return x + c_proj(gelu(c_fc(ln_2(x))))
    Tensor x;
    {
      Tensor a = (*attn)(norm(ln_1, x_in));
      x = add(x_in, a);
    }
    return add(x, mlp(x));
  }

  // x is gpt_forward_cached's loop variable: each `x = x + ...` frees the old value there.
  void forward_cached(Tensor& x, KvCache& cache, size_t layer, int64_t pos) {
    ModuleScope ms(path_id());
    {
      Tensor a = attn->forward_cached(norm(ln_1, x), cache, layer, pos);
      x = add(x, a);
    }
    x = add(x, mlp(x));
  }

  std::shared_ptr<Module> child(const std::string& n) const {
    for (auto& [cn, c] : children_)
      if (cn == n) return c;
    throw std::logic_error("no " + n);
  }
  std::shared_ptr<LayerNorm> ln_1, ln_2;
  std::shared_ptr<GptAttn> attn;

 private:
  static Tensor norm(const std::shared_ptr<LayerNorm>& ln, const Tensor& x) {
    CategoryScope cs(Category::Norm);
    return (*ln)(x);
  }
  Tensor mlp(const Tensor& x) {
    Tensor h = norm(ln_2, x);
    CategoryScope cs(Category::Mlp);
    Tensor f = (*child("c_fc"))(h);
    h.reset();
    Tensor g = (*child("gelu"))(f);
    f.reset();
    return (*child("c_proj"))(g);
  }
};

class Gpt : public Model {
 public:
  explicit Gpt(const KindArgs& a)
      : V_(a.i("vocab")), T_(a.i("seq")), C_(a.i("dim")), L_(a.i("depth")), H_(a.i("heads")) {
    if (C_ % H_ != 0)
      throw std::invalid_argument("gpt: dim (" + std::to_string(C_) + ") must be divisible by heads (" +
                                  std::to_string(H_) + ")");
    wte_ = std::make_shared<Embedding>(V_, C_);
    wpe_ = std::make_shared<Embedding>(T_, C_);
    register_module("wte", wte_);
    register_module("wpe", wpe_);
    for (int64_t i = 0; i < L_; ++i) blocks_.push_back(std::make_shared<GptBlock>(C_, H_));
    auto list = std::make_shared<BlockList>();
    for (auto& b : blocks_) list->add(b);
    register_module("blocks", list);
    ln_f_ = std::make_shared<LayerNorm>(C_);
    register_module("ln_f", ln_f_);
    lm_head_ = std::make_shared<Linear>(wte_->weight);  // tied: lm_head.weight = wte.weight
    register_module("lm_head", lm_head_);
  }
  std::string type_name() const override { return "gpt"; }

  Tensor forward(const Tensor& idx) override {
    const int64_t T = idx.size(1);
    if (T > T_)
      throw std::invalid_argument("gpt: sequence of " + std::to_string(T) +
                                  " tokens is longer than the position table (seq " + std::to_string(T_) + ")");
    Tensor pos = arange(0, T);
    Tensor x;
    {
      Tensor te = (*wte_)(idx), pe = (*wpe_)(pos);
      x = add(te, pe);
    }
    x = run_blocks(size_t(L_), x, checkpoint_,
                   [this](size_t i, const Tensor& h, const std::vector<Tensor>&) { return (*blocks_[i])(h); });
    Tensor h;
    {
      CategoryScope cs(Category::Norm);
      h = (*ln_f_)(x);
    }
    CategoryScope cs(Category::Logits);
    return (*lm_head_)(h);
  }

  Tensor forward_cached(const Tensor& idx, KvCache& cache, int64_t pos) override {
    const int64_t T = idx.size(1);
    if (pos + T > T_)
      throw std::invalid_argument("gpt: generating past position " + std::to_string(T_) +
                                  " (the position table holds seq = " + std::to_string(T_) + ")");
    Tensor x;
    {
      Tensor te = (*wte_)(idx), pe = (*wpe_)(arange(pos, pos + T));
      x = add(te, pe);
    }
    for (size_t i = 0; i < blocks_.size(); ++i) blocks_[i]->forward_cached(x, cache, i, pos);
    Tensor last = x.slice(1, x.size(1) - 1, x.size(1));  // x[:, -1:, :]
    Tensor h;
    {
      CategoryScope cs(Category::Norm);
      h = (*ln_f_)(last);
    }
    CategoryScope cs(Category::Logits);
    return (*lm_head_)(h);
  }

  Tensor make_input(int64_t batch, int64_t seq) override { return randint({batch, seq > 0 ? seq : T_}, V_); }
  Tensor make_target(int64_t batch, int64_t seq, LossKind) override { return randint({batch, seq > 0 ? seq : T_}, V_); }
  Tensor loss(const Tensor& y, const Batch& b, LossKind) override { return lm_loss(y, b); }
  bool can_generate() const override { return true; }
  int64_t vocab() const override { return V_; }
  int64_t num_blocks() const override { return L_; }

  void apply_finetune(const FinetuneSpec& f) override {
    FinetunePlan plan;
    plan.depth = L_;
    plan.block_prefix = "blocks.";
    plan.always_frozen = {"wte", "wpe"};
    plan.lora_sites = [this](const std::vector<std::string>& targets) {
      std::vector<LoraSite> sites;
      for (auto& b : blocks_)
        for (const std::string& t : targets) {
          if (t == "attn" || t == "proj")
            sites.push_back({b->attn.get(), t == "attn" ? "c_attn" : "c_proj"});
          else if (t == "fc" || t == "mlp_proj")
            sites.push_back({b.get(), t == "fc" ? "c_fc" : "c_proj"});
          else
            throw std::invalid_argument("gpt LoRA targets are attn, proj, fc, mlp_proj (got \"" + t + "\")");
        }
      return sites;
    };
    plan.wrap = [&f](std::shared_ptr<Linear> base) { return std::make_shared<LoRALinear>(base, f.rank, f.alpha); };
    apply_finetune_plan(*this, f, plan);
  }

 private:
  // nn.ModuleList: children "0", "1", ... (parameter names "blocks.3.ln_1.weight").
  class BlockList : public Module {
   public:
    std::string type_name() const override { return "ModuleList"; }
    void add(std::shared_ptr<Module> m) { register_module(std::to_string(children_.size()), std::move(m)); }
  };

  int64_t V_, T_, C_, L_, H_;
  std::shared_ptr<Embedding> wte_, wpe_;
  std::vector<std::shared_ptr<GptBlock>> blocks_;
  std::shared_ptr<LayerNorm> ln_f_;
  std::shared_ptr<Linear> lm_head_;
};

}  // namespace

std::unique_ptr<Model> build_gpt(const KindArgs& a) { return std::make_unique<Gpt>(a); }

}  // namespace vramlab::engine
