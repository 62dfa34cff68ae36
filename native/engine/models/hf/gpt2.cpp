// GPT2LMHeadModel: learned positions, LayerNorm (with bias) before attention and MLP,
// Conv1D projections (c_attn fused qkv, c_proj, c_fc), gelu_new, tied lm_head, and
// dropout on the embeddings, attention weights and residuals (on in training).
#include "engine/models/hf/arch.h"

namespace vramlab::engine::hf {

Arch gpt2(const Config& c) {
  Arch a;
  a.name = "GPT2LMHeadModel";
  a.gpt2 = true;
  a.vocab = c.i("vocab_size");
  a.hidden = c.i("n_embd");
  a.layers = c.i("n_layer");
  a.heads = a.kv_heads = c.i("n_head");
  a.head_dim = a.hidden / a.heads;
  a.intermediate = c.is_null("n_inner") ? 4 * a.hidden : c.i("n_inner");
  a.max_positions = c.i("n_positions");
  a.norm_eps = c.f("layer_norm_epsilon");
  a.act = c.s("activation_function");
  a.tie = c.b("tie_word_embeddings");
  a.q_bias = a.k_bias = a.v_bias = a.o_bias = a.mlp_bias = true;
  a.fused_qkv = true;
  a.resid_pdrop = c.f("resid_pdrop");
  a.embd_pdrop = c.f("embd_pdrop");
  a.attn_pdrop = c.f("attn_pdrop");
  a.sliding.assign(size_t(a.layers), false);
  a.sparse.assign(size_t(a.layers), false);
  return a;
}

}  // namespace vramlab::engine::hf
