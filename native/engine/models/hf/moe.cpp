// MixtralSparseMoeBlock / Qwen3MoeSparseMoeBlock with their TopKRouter and the experts'
// grouped_mm_experts_forward (transformers 5.17), line by line: a Python local lives until
// it is rebound or its function returns, an expression's temporaries until the op that
// took them has run.
#include "engine/models/hf/moe.h"

#include <stdexcept>

#include "engine/core/alloc_tag.h"
#include "engine/core/grad_mode.h"
#include "engine/models/hf/modules.h"
#include "engine/models/hf/moe_ops.h"
#include "engine/ops/common.h"
#include "engine/ops/cub_temp.h"
#include "engine/ops/ops.h"

namespace vramlab::engine::hf {

namespace {

class MoeBlock : public Container {
 public:
  MoeBlock(const Arch& a, DType dt) : Container("SparseMoeBlock"), a_(a), qwen_(a.name == "Qwen3MoeForCausalLM") {
    const int64_t E = a.experts, H = a.hidden, I = a.expert_intermediate;
    auto router = std::make_shared<Container>("TopKRouter");
    auto experts = std::make_shared<Container>("Experts");
    auto make_router = [&] {
      // Qwen3MoeTopKRouter: nn.Parameter(torch.zeros(...)); Mixtral's: torch.empty(...)
      router_w_ = new_parameter({E, H}, dt, qwen_ ? "zeros" : "empty");
      router->add_parameter("weight", router_w_);
    };
    auto make_experts = [&] {
      gate_up_ = new_parameter({E, 2 * I, H}, dt, "empty");
      experts->add_parameter("gate_up_proj", gate_up_);
      down_ = new_parameter({E, H, I}, dt, "empty");
      experts->add_parameter("down_proj", down_);
    };
    // Mixtral makes self.gate then self.experts; Qwen3-MoE the experts first
    if (qwen_) {
      make_experts();
      add("experts", experts);
      make_router();
      add("gate", router);
    } else {
      make_router();
      add("gate", router);
      make_experts();
      add("experts", experts);
    }
    if (gate_up_.has_data()) {
      // post_init's _init_weights: normal_(std=initializer_range) for the router and the
      // experts' 3-D weights (their torch.empty / zeros values are never used)
      NoGradGuard ng;
      for (Tensor* w : {&router_w_, &gate_up_, &down_}) normal_(*w, 0.0, 0.02);
    }
  }

  Tensor forward(const Tensor& x) override {
    CategoryScope cs(Category::Mlp);
    // On the data backends routing follows the values; every allocation is sized by the
    // totals (tokens x top_k, experts), so memory readings stay shape-only.
    const int64_t B = x.size(0), T = x.size(1), H = x.size(2);
    // hidden_states = hidden_states.view(-1, hidden_dim)
    Tensor hs = x.view({-1, H});
    // _, top_k_weights, top_k_index = self.gate(hidden_states): `_` (the router logits)
    // is a local of the block until it returns
    Tensor logits, weights, index;
    route(hs, logits, weights, index);
    Tensor out = experts(hs, index, weights);
    return out.reshape({B, T, H});
  }

 private:
  // TopKRouter.forward
  void route(const Tensor& hs_in, Tensor& logits, Tensor& scores, Tensor& index) {
    Tensor hs = hs_in.reshape({-1, a_.hidden});
    logits = linear(hs, router_w_);  // (tokens, experts)
    Tensor probs;
    {
      // Mixtral: softmax(router_logits.float()); Qwen3-MoE: softmax(..., dtype=torch.float),
      // which converts the same way (autocast runs softmax in float32 either way)
      Tensor f = logits.float_();
      probs = softmax_last(f);
    }
    Tensor top;
    topk_last(probs, a_.top_k, top, index);
    if (a_.norm_topk_prob) {
      // router_top_value /= router_top_value.sum(dim=-1, keepdim=True)
      Tensor s = sum(top, {-1}, true);
      div_(top, s);
    }
    // Qwen3-MoE: router_top_value.to(router_logits.dtype) (the float32 values go)
    if (qwen_) top = top.to(logits.dtype());
    scores = top;
  }

  Tensor experts(const Tensor& hs, const Tensor& top_k_index, const Tensor& top_k_weights) {
    return DecodeExpertsScope::active() ? batched_experts(hs, top_k_index, top_k_weights)
                                        : grouped_experts(hs, top_k_index, top_k_weights);
  }

  // batched_mm_experts_forward (generation's decoding steps, no gradient)
  Tensor batched_experts(const Tensor& hs, const Tensor& top_k_index, const Tensor& top_k_weights) {
    const int64_t N = hs.size(0), K = top_k_index.size(-1), H = hs.size(1), S = N * K, I = a_.expert_intermediate;
    if (hs.has_data())
      throw std::invalid_argument("hf: the decoding steps' batched experts run on the simulated devices only");
    Tensor selected = repeat_interleave(hs, K, 0);  // (S, H)
    Tensor sample_weights = top_k_weights.reshape({-1});
    Tensor expert_ids = make_tensor({S}, DType::Int64, "clamp");  // expert_ids.clamp(0, E - 1)
    // selected_weights = gate_up_proj[expert_ids]: every token's expert weights copied out
    Tensor selected_weights = index_rows(gate_up_, expert_ids);  // (S, 2I, H)
    Tensor proj_out = bmm_no_grad(selected_weights, selected.unsqueeze(2)).view({S, 2 * I});
    {
      auto halves = split(proj_out, I, -1);
      Tensor gated = act(halves[0]);
      proj_out = mul(gated, halves[1]);
    }
    selected_weights = index_rows(down_, expert_ids);  // (S, H, I), made before the old goes
    proj_out = bmm_no_grad(selected_weights, proj_out.unsqueeze(2)).view({S, H});
    Tensor weighted_out = mul(proj_out, sample_weights.unsqueeze(1));
    Tensor final_hidden_states = sum(weighted_out.view({N, K, H}), {1}, false);
    return final_hidden_states.to(hs.dtype());
  }

  // grouped_mm_experts_forward
  Tensor grouped_experts(const Tensor& hs, const Tensor& top_k_index, const Tensor& top_k_weights) {
    const int64_t N = hs.size(0), K = top_k_index.size(-1), H = hs.size(1), S = N * K, E = a_.experts,
                  I = a_.expert_intermediate;
    Tensor sample_weights = top_k_weights.reshape({-1});  // (S,)
    Tensor expert_ids = top_k_index.reshape({-1});        // (S,)
    // expert_ids_g, perm = torch.sort(expert_ids)
    Tensor expert_ids_g, perm;
    sort_1d(expert_ids, expert_ids_g, perm);
    Tensor selected;
    {
      // hidden_states[perm // num_top_k]: the index op keeps the quotient for its backward
      Tensor q = make_tensor({S}, DType::Int64, "floor_divide");
      if (q.has_data()) be().index_div(q, perm, K);
      selected = index_rows(hs, q);
    }
    Tensor sample_weights_g = index_rows(sample_weights, perm);
    // histc over expert_ids_g.int() (a local), then cumsum(dtype=int32): CUB's inclusive scan
    Tensor histc_input = int32_tensor({S}, "_to_copy");
    Tensor tokens_per_expert = int32_tensor({E}, "histc");
    Tensor offsets = int32_tensor({E}, "cumsum");
    if (offsets.has_data()) be().group_offsets(tokens_per_expert, offsets, expert_ids_g);
    { auto tmp = scratch(cub_scan_bytes(E), "cub::DeviceScan::InclusiveScan"); }
    // sentinel_mask = (expert_ids_g >= num_experts).unsqueeze(-1); clamp_ is in place
    Tensor sentinel_mask = bool_tensor(S, "ge");
    masked_fill_(selected, sentinel_mask);
    // up projection, one grouped_mm over every expert: _grouped_mm(input.to(weight.dtype),
    // gate_up_proj.transpose(-2, -1), offs)
    Tensor proj_out = grouped_linear(selected, gate_up_, offsets);
    proj_out = masked_fill(proj_out, sentinel_mask);
    {
      // _default_apply_gate: gate, up = chunk(2, dim=-1); act_fn(gate) * up
      auto halves = split(proj_out, I, -1);
      Tensor gated = act(halves[0]);
      proj_out = mul(gated, halves[1]);
    }
    proj_out = grouped_linear(proj_out, down_, offsets);
    proj_out = masked_fill(proj_out, sentinel_mask);
    // weighted_out = proj_out * sample_weights_g.unsqueeze(-1): float32 routing weights
    // (Mixtral) promote the product to float32
    Tensor weighted_out = mul(proj_out, sample_weights_g.unsqueeze(1));
    // inv_perm = empty_like(perm); inv_perm[perm] = arange(S): no gradient
    Tensor inv_perm = make_tensor({S}, DType::Int64, "empty_like");
    {
      NoGradGuard ng;
      Tensor range = arange(0, S);
      if (inv_perm.has_data()) be().invert_permutation(inv_perm, perm);
    }
    weighted_out = index_rows(weighted_out, inv_perm);
    Tensor final_hidden_states = sum(weighted_out.view({N, K, H}), {1}, false);
    // the locals (weighted_out, final_hidden_states, histc_input, ...) go at return
    return final_hidden_states.to(hs.dtype());
  }

  Tensor grouped_linear(const Tensor& x, const Tensor& w, const Tensor& offsets) {
    Tensor in = x.to(w.dtype());
    return grouped_mm(in, w.transpose(1, 2), offsets);
  }

  Tensor act(const Tensor& x) const {
    if (a_.act == "silu") return silu(x);
    if (a_.act == "gelu_pytorch_tanh" || a_.act == "gelu_new") return gelu(x, true);
    if (a_.act == "gelu") return gelu(x, false);
    throw std::invalid_argument("hf: activation \"" + a_.act + "\" is not supported (silu, gelu, gelu_pytorch_tanh)");
  }

  const Arch& a_;
  bool qwen_;
  Tensor router_w_, gate_up_, down_;
};

thread_local bool decoding = false;

}  // namespace

DecodeExpertsScope::DecodeExpertsScope(bool on) : saved_(decoding) { decoding = on; }
DecodeExpertsScope::~DecodeExpertsScope() { decoding = saved_; }
bool DecodeExpertsScope::active() { return decoding; }

std::shared_ptr<Module> make_moe_block(const Arch& a, DType dtype) { return std::make_shared<MoeBlock>(a, dtype); }

}  // namespace vramlab::engine::hf
