// llama: token embedding, RMSNorm computed in float32 as the reference writes it,
// rotary embeddings on q and k, grouped-query attention (k and v repeated to the query
// heads with repeat_interleave), a SwiGLU MLP, an untied output head, no biases. The
// rotary tables (seq, head_dim/2) are float32 buffers made after the parameters.
#include <stdexcept>

#include "engine/core/alloc_tag.h"
#include "engine/core/grad_mode.h"
#include "engine/models/family.h"
#include "engine/models/transformer_common.h"
#include "engine/nn/checkpointing.h"
#include "engine/nn/embedding.h"
#include "engine/nn/forward_inputs.h"
#include "engine/nn/lora.h"
#include "engine/nn/rms_norm.h"
#include "engine/ops/attention.h"
#include "engine/ops/common.h"
#include "engine/ops/ops.h"

namespace vramlab::engine {

namespace {

// apply_rope(x, cos, sin): rotate halves of x (B, H, T, D) by the tables (T, D/2).
Tensor apply_rope(const Tensor& x, const Tensor& cos, const Tensor& sin) {
  const int64_t D = x.size(-1), half = D / 2;
  Tensor x1 = x.slice(-1, 0, half), x2 = x.slice(-1, half, D);
  Tensor c = cos.unsqueeze(0).unsqueeze(0), s = sin.unsqueeze(0).unsqueeze(0);
  Tensor a, b;
  {
    Tensor p1 = mul(x1, c), p2 = mul(x2, s);
    a = sub(p1, p2);
  }
  {
    Tensor p3 = mul(x1, s), p4 = mul(x2, c);
    b = add(p3, p4);
  }
  Tensor joined = cat({a, b}, -1);
  a.reset();
  b.reset();
  return joined.to(x.dtype());  // .type_as(x)
}

class LlamaBlock : public Module {
 public:
  LlamaBlock(int64_t C, int64_t H, int64_t KV, int64_t FF) : H_(H), KV_(KV), D_(C / H) {
    reg("attn_norm", std::make_shared<RMSNorm>(C));
    reg("wq", std::make_shared<Linear>(C, H * D_, false));
    reg("wk", std::make_shared<Linear>(C, KV * D_, false));
    reg("wv", std::make_shared<Linear>(C, KV * D_, false));
    reg("wo", std::make_shared<Linear>(H * D_, C, false));
    reg("ffn_norm", std::make_shared<RMSNorm>(C));
    reg("w1", std::make_shared<Linear>(C, FF, false));
    reg("w3", std::make_shared<Linear>(C, FF, false));
    reg("w2", std::make_shared<Linear>(FF, C, false));
  }
  std::string type_name() const override { return "LlamaBlock"; }

  // forward(x, cos, sin); every local lives until return, as Python's do.
  Tensor forward3(const Tensor& x_in, const Tensor& cos, const Tensor& sin) {
    ModuleScope ms(path_id());
    const int64_t B = x_in.size(0), T = x_in.size(1), C = x_in.size(2);
    Tensor h = norm("attn_norm", x_in);
    Tensor q, k, v, y;
    {
      CategoryScope cs(Category::Attention);
      q = call("wq", h).view({B, T, H_, D_}).transpose(1, 2);
      k = call("wk", h).view({B, T, KV_, D_}).transpose(1, 2);
      v = call("wv", h).view({B, T, KV_, D_}).transpose(1, 2);
      {
        // q, k = apply_rope(q, ...), apply_rope(k, ...): CPython stores k first, and only
        // q and k hold the results afterwards
        Tensor rq = apply_rope(q, cos, sin), rk = apply_rope(k, cos, sin);
        k = std::move(rk);
        q = std::move(rq);
      }
      if (KV_ != H_) {
        k = repeat_interleave(k, H_ / KV_, 1);
        v = repeat_interleave(v, H_ / KV_, 1);
      }
      y = scaled_dot_product_attention(q, k, v, true).transpose(1, 2).contiguous().view({B, T, C});
    }
    Tensor x;
    {
      CategoryScope cs(Category::Attention);
      Tensor o = call("wo", y);
      x = add(x_in, o);
    }
    h = norm("ffn_norm", x);
    return add(x, mlp(h));
  }

  // The cached step of llama_forward_cached for this block; the loop's locals (h, q, k,
  // v, y) outlive the step: the caller keeps them in `locals` until the next block
  // rebinds them, as the reference's for-loop does.
  struct Locals {
    Tensor h, q, k, v, y;
  };
  // x is the loop's variable: each `x = x + ...` frees the previous value right there.
  void forward_cached(Tensor& x, const Tensor& cos, const Tensor& sin, KvCache& cache, size_t layer, int64_t pos,
                      Locals& l) {
    ModuleScope ms(path_id());
    const int64_t B = x.size(0), T = x.size(1);
    l.h = norm("attn_norm", x);
    {
      CategoryScope cs(Category::Attention);
      l.q = call("wq", l.h).view({B, T, H_, D_}).transpose(1, 2);
      l.k = call("wk", l.h).view({B, T, KV_, D_}).transpose(1, 2);
      l.v = call("wv", l.h).view({B, T, KV_, D_}).transpose(1, 2);
      {
        Tensor rq = apply_rope(l.q, cos, sin), rk = apply_rope(l.k, cos, sin);
        l.k = std::move(rk);
        l.q = std::move(rq);
      }
      auto kv = cache.update(layer, l.k, l.v, pos);
      l.k = kv.first;
      l.v = kv.second;
      if (KV_ != H_) {
        l.k = repeat_interleave(l.k, H_ / KV_, 1);
        l.v = repeat_interleave(l.v, H_ / KV_, 1);
      }
      l.y = scaled_dot_product_attention(l.q, l.k, l.v, T > 1).transpose(1, 2).contiguous().view({B, T, -1});
    }
    {
      CategoryScope cs(Category::Attention);
      Tensor o = call("wo", l.y);
      x = add(x, o);
    }
    l.h = norm("ffn_norm", x);
    x = add(x, mlp(l.h));
  }

  std::shared_ptr<Module> child(const std::string& n) const {
    for (auto& [cn, c] : children_)
      if (cn == n) return c;
    throw std::logic_error("no " + n);
  }

 private:
  void reg(const std::string& n, std::shared_ptr<Module> m) { register_module(n, std::move(m)); }
  Tensor call(const std::string& n, const Tensor& x) { return (*child(n))(x); }
  Tensor norm(const std::string& n, const Tensor& x) {
    CategoryScope cs(Category::Norm);
    return call(n, x);
  }
  Tensor mlp(const Tensor& h) {
    // w2(silu(w1(h)) * w3(h))
    CategoryScope cs(Category::Mlp);
    Tensor p;
    {
      Tensor a = silu(call("w1", h));
      Tensor u = call("w3", h);
      p = mul(a, u);
    }
    return call("w2", p);
  }
  int64_t H_, KV_, D_;
};

class Llama : public Model {
 public:
  explicit Llama(const KindArgs& a)
      : V_(a.i("vocab")),
        T_(a.i("seq")),
        C_(a.i("dim")),
        L_(a.i("depth")),
        H_(a.i("heads")),
        KV_(a.i("kv_heads")),
        FF_(a.i("ffn")) {
    if (C_ % H_ != 0)
      throw std::invalid_argument("llama: dim (" + std::to_string(C_) + ") must be divisible by heads (" +
                                  std::to_string(H_) + ")");
    if (H_ % KV_ != 0)
      throw std::invalid_argument("llama: heads (" + std::to_string(H_) + ") must be divisible by kv_heads (" +
                                  std::to_string(KV_) + ")");
    tok_ = std::make_shared<Embedding>(V_, C_);
    register_module("tok", tok_);
    auto list = std::make_shared<BlockList>();
    for (int64_t i = 0; i < L_; ++i) {
      blocks_.push_back(std::make_shared<LlamaBlock>(C_, H_, KV_, FF_));
      list->add(blocks_.back());
    }
    register_module("blocks", list);
    norm_ = std::make_shared<RMSNorm>(C_);
    register_module("norm", norm_);
    out_ = std::make_shared<Linear>(C_, V_, false);
    register_module("out", out_);
    // rope_tables(T, D) on the CPU, registered as buffers: on the device after the parameters.
    const int64_t D = C_ / H_;
    {
      CategoryScope cs(Category::Other);
      NoGradGuard ng;
      cos_ = make_tensor({T_, D / 2}, DType::Float32, "rope_cos");
      sin_ = make_tensor({T_, D / 2}, DType::Float32, "rope_sin");
      be().rope_tables(cos_, sin_, 10000.0);
    }
    register_buffer("cos", cos_);
    register_buffer("sin", sin_);
  }
  std::string type_name() const override { return "llama"; }

  Tensor forward(const Tensor& idx) override {
    const int64_t T = idx.size(1);
    check_len(T);
    Tensor x = (*tok_)(idx);
    x = run_blocks(size_t(L_), x, checkpoint_,
                   [this](size_t i, const Tensor& h, const std::vector<Tensor>& ex) {
                     // the tables as the block's forward inputs (fully_shard may cast them)
                     Tensor cos = forward_input(*blocks_[i], ex[0]), sin = forward_input(*blocks_[i], ex[1]);
                     return blocks_[i]->hooked(h, [&](const Tensor& in) { return blocks_[i]->forward3(in, cos, sin); });
                   },
                   {cos_.slice(0, 0, T), sin_.slice(0, 0, T)});
    Tensor h;
    {
      CategoryScope cs(Category::Norm);
      h = (*norm_)(x);
    }
    CategoryScope cs(Category::Logits);
    return (*out_)(h);
  }

  Tensor forward_cached(const Tensor& idx, KvCache& cache, int64_t pos) override {
    const int64_t T = idx.size(1);
    check_len(pos + T);
    Tensor x = (*tok_)(idx);
    Tensor cos = cos_.slice(0, pos, pos + T), sin = sin_.slice(0, pos, pos + T);
    LlamaBlock::Locals locals;
    for (size_t i = 0; i < blocks_.size(); ++i) blocks_[i]->forward_cached(x, cos, sin, cache, i, pos, locals);
    Tensor last = x.slice(1, x.size(1) - 1, x.size(1));
    Tensor h;
    {
      CategoryScope cs(Category::Norm);
      h = (*norm_)(last);
    }
    CategoryScope cs(Category::Logits);
    return (*out_)(h);
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
    plan.always_frozen = {"tok"};
    plan.lora_sites = [this](const std::vector<std::string>& targets) {
      static const std::pair<const char*, const char*> kTargets[] = {
          {"q", "wq"}, {"k", "wk"}, {"v", "wv"}, {"o", "wo"}, {"gate", "w1"}, {"up", "w3"}, {"down", "w2"}};
      std::vector<LoraSite> sites;
      for (auto& b : blocks_)
        for (const std::string& t : targets) {
          const char* attr = nullptr;
          for (auto& [name, a] : kTargets)
            if (t == name) attr = a;
          if (!attr)
            throw std::invalid_argument("llama LoRA targets are q, k, v, o, gate, up, down (got \"" + t + "\")");
          sites.push_back({b.get(), attr});
        }
      return sites;
    };
    plan.wrap = [&f](std::shared_ptr<Linear> base) { return std::make_shared<LoRALinear>(base, f.rank, f.alpha); };
    apply_finetune_plan(*this, f, plan);
  }

 private:
  class BlockList : public Module {
   public:
    std::string type_name() const override { return "ModuleList"; }
    void add(std::shared_ptr<Module> m) { register_module(std::to_string(children_.size()), std::move(m)); }
  };
  void check_len(int64_t t) const {
    if (t > T_)
      throw std::invalid_argument("llama: " + std::to_string(t) + " positions exceed the rotary tables (seq " +
                                  std::to_string(T_) + ")");
  }

  int64_t V_, T_, C_, L_, H_, KV_, FF_;
  std::shared_ptr<Embedding> tok_;
  std::vector<std::shared_ptr<LlamaBlock>> blocks_;
  std::shared_ptr<RMSNorm> norm_;
  std::shared_ptr<Linear> out_;
  Tensor cos_, sin_;
};

}  // namespace

std::unique_ptr<Model> build_llama(const KindArgs& a) { return std::make_unique<Llama>(a); }

}  // namespace vramlab::engine
