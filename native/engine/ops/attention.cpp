// scaled_dot_product_attention with the memory behaviour of the backend PyTorch 2.11
// picks on CUDA (aten/src/ATen/native/transformers/cuda/sdp_utils.cpp):
//   - cuDNN (preferred on sm90/sm100 for fp16/bf16, head dims <= 128 and multiples of 8):
//     philox seed and offset (8 B each, device), the output laid out like q, the
//     softmax stats (B, H, Sq, 1) in float when a backward will need them, and a
//     256-byte graph workspace; backward: dq, dk, dv like q, k, v and a workspace that
//     holds a float dQ accumulator and the softmax row sums.
//   - FlashAttention-2 (fp16/bf16 head dims <= 256): the output like q, the log-sum-exp
//     (B, H, Sq) in float; backward: dq, dk, dv, the softmax row sums rounded to 128
//     rows and a float dQ accumulator (head dim rounded to 32).
//   - memory-efficient (CUTLASS; float32, or half types the others refuse): the output
//     in (B, Sq, H, Dv), the log-sum-exp padded to 32 queries; backward: dq, dk, dv in
//     (B, S, H, D), the delta row sums and the kernel's float workspace (the dQ tile
//     accumulators and, for half types, dK/dV accumulators).
// Autograd saves q, k, v, the output, the log-sum-exp and the philox state; they are
// released inputs-then-outputs, each set by name, as the generated node does.
#include <cmath>

#include "engine/autocast/autocast.h"
#include "engine/core/driver_use.h"
#include "engine/ops/attention.h"
#include "engine/ops/common.h"
#include "engine/ops/sdpa_math.h"

namespace vramlab::engine {

namespace {

bool is_half(DType t) { return t == DType::Float16 || t == DType::BFloat16; }
int64_t round_up(int64_t a, int64_t m) { return (a + m - 1) / m * m; }
int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// at::empty_like with the preserve format: dense tensors keep their strides; others
// get dense strides in the same dimension order (infer_dense_strides).
Tensor empty_like_layout(const Tensor& t, const char* op) {
  const int64_t nd = t.dim();
  std::vector<int64_t> perm(static_cast<size_t>(nd));
  for (int64_t i = 0; i < nd; ++i) perm[size_t(i)] = i;
  std::stable_sort(perm.begin(), perm.end(), [&](int64_t a, int64_t b) {
    // innermost first: smaller stride; ties keep the later dim inner
    if (t.strides()[size_t(a)] != t.strides()[size_t(b)]) return t.strides()[size_t(a)] < t.strides()[size_t(b)];
    return a > b;
  });
  Shape strides(static_cast<size_t>(nd));
  int64_t s = 1;
  for (int64_t i : perm) {
    strides[size_t(i)] = s;
    s *= t.sizes()[size_t(i)];
  }
  Tensor out = make_tensor(t.sizes(), t.dtype(), op);
  out.impl()->strides = strides;
  return out;
}

// A (B, H, S) view of a float buffer laid out (B, H, rows[, 1]).
Tensor lse_view(const Tensor& buf, int64_t s) {
  return make_view(buf, {buf.size(0), buf.size(1), s}, {buf.strides()[0], buf.strides()[1], buf.strides()[2]},
                   buf.storage_offset());
}

SdpaBackend select_backend(const Tensor& q, const Tensor& k, const Tensor& v, bool causal, double dropout_p) {
  auto& ctx = current_context();
  const int cc = ctx.compute_capability();
  const int64_t dq = q.size(3), dk = k.size(3), dv = v.size(3), sq = q.size(2), sk = k.size(2);
  const bool half = is_half(q.dtype());
  auto cudnn_ok = [&] {
    // Dropout does not keep cuDNN out: PyTorch's own trace of GPT-2 (bf16, attn_pdrop 0.1)
    // shows cuDNN's seed, offset, output, stats and 256-byte workspace, and its backward
    // workspace, where flash would take a 512-byte rng state and a float dQ accumulator.
    // check_cudnn_tensor_shapes: head dims up to 128, or 256 on Hopper (sm90) with cuDNN >= 9.10
    const int64_t head_dim_limit = cc == 90 ? 256 : 128;
    return half && cc >= 80 && dq == dv && dq <= head_dim_limit && dq % 8 == 0 && dv % 8 == 0 && sk != 1 &&
           q.size(0) <= 65535 && q.size(1) <= 65535 && q.strides()[3] == 1 && k.strides()[3] == 1 &&
           v.strides()[3] == 1;
  };
  auto flash_ok = [&] {
    return half && cc >= 80 && dq == dk && dq == dv && dq <= 256 && (!causal || sq == sk) && q.strides()[3] == 1 &&
           k.strides()[3] == 1 && v.strides()[3] == 1;
  };
  auto efficient_ok = [&] {
    const int64_t align = half ? 8 : 4;  // minimum_gemm_alignment (elements)
    bool aligned =
        q.storage_offset() % align == 0 && k.storage_offset() % align == 0 && v.storage_offset() % align == 0;
    return dq == dk && dq % align == 0 && dv % align == 0 && aligned && q.strides()[3] == 1 && k.strides()[3] == 1 &&
           v.strides()[3] == 1;
  };
  const bool prefer_cudnn = cc == 90 || cc == 100;
  if (prefer_cudnn && cudnn_ok()) return SdpaBackend::Cudnn;
  if (flash_ok()) return SdpaBackend::Flash;
  if (efficient_ok()) return SdpaBackend::Efficient;
  throw std::invalid_argument(
      "scaled_dot_product_attention: these shapes would run PyTorch's math fallback (head dim " + std::to_string(dq) +
      "), which the lab does not model; use a head dim (dim / heads) that is a multiple of 8");
}

// Dropout on the data backends: the probability and the counter-based generator's seed
// (backend.h: attention_dropout), kept by the node as the philox state is.
struct AttnDropout {
  double p = 0;
  uint64_t seed = 0;
};

void run_attention(const Tensor& out, const Tensor* lse, const Tensor& q, const Tensor& k, const Tensor& v, bool causal,
                   double scale, const AttnDropout& drop) {
  // the simulated devices model the kernel's time without the dropout's values
  if (drop.p <= 0 || !be().has_data()) return be().attention(out, lse, q, k, v, causal, scale);
  be().attention_dropout(out, lse ? *lse : Tensor(), q, k, v, causal, scale, drop.p, drop.seed);
}

// `scratch`: views of the workspaces allocated below as PyTorch's backends allocate them,
// which a data backend may compute in (backend.h); the readings stay the modelled ones.
void run_attention_backward(const Tensor& dq, const Tensor& dk, const Tensor& dv, const Tensor& dout, const Tensor& q,
                            const Tensor& k, const Tensor& v, const Tensor& out, const Tensor& lse, bool causal,
                            double scale, const AttnDropout& drop, const Backend::AttentionScratch& scratch) {
  if (drop.p <= 0 || !be().has_data())
    return be().attention_backward(dq, dk, dv, dout, q, k, v, out, lse, causal, scale, scratch);
  be().attention_dropout_backward(dq, dk, dv, dout, q, k, v, out, lse, causal, scale, drop.p, drop.seed);
}

AttnDropout draw_dropout(double p) {
  AttnDropout d;
  d.p = p;
  if (p > 0 && be().has_data()) d.seed = current_context().next_seed();
  return d;
}

// ---- cuDNN ----
struct ScaledDotProductCudnnAttentionBackward0 : Node {
  SavedVariable attn_bias_, key_, query_, value_, logsumexp_, output_, philox_offset_, philox_seed_;
  bool causal = false;
  double scale = 1;
  AttnDropout drop;
  std::string name() const override { return "ScaledDotProductCudnnAttentionBackward0"; }
  TensorList apply(TensorList& g) override {
    if (!g[0].defined()) return undefined_grads(3);
    // Every saved variable unpacked in the generated code's order (under checkpointing the
    // recomputed tensors then go, in reverse, when apply returns).
    Tensor bias = attn_bias_.unpack(this);
    Tensor k = key_.unpack(this), q = query_.unpack(this), v = value_.unpack(this);
    Tensor lse = logsumexp_.unpack(this), out = output_.unpack(this);
    Tensor offset = philox_offset_.unpack(this), seed = philox_seed_.unpack(this);
    Tensor dq = empty_like_layout(q, "_cudnn_attention_backward");
    Tensor dk = empty_like_layout(k, "_cudnn_attention_backward");
    Tensor dv = empty_like_layout(v, "_cudnn_attention_backward");
    {
      // run_cudnn_SDP_bprop asks the cudnn-frontend graph for its workspace: the dQ
      // accumulator (float) and softmax row sums, 256 B for the engine, and with grouped
      // heads (enable_gqa) dK and dV at the query's head count in the input dtype, which
      // the graph sums down to the kv heads (measured on H100, cuDNN 9.19, 130 shapes).
      const int64_t B = q.size(0), H = q.size(1), S = q.size(2), D = q.size(3);
      const int64_t Sk = k.size(2), elt = int64_t(q.element_size());
      const int64_t dk_full = k.size(1) != H ? B * H * Sk * k.size(3) * elt : 0;
      const int64_t dv_full = v.size(1) != H ? B * H * Sk * v.size(3) * elt : 0;
      const int64_t bytes = B * H * S * D * 4 + B * H * S * 4 + 256 + dk_full + dv_full;
      driver_use(DriverUse::CudnnHandle);  // this thread's handle, before the graph's workspace
      Tensor ws = make_tensor({bytes / 4}, DType::Float32, "cudnn_workspace");
      // its start as the float dQ accumulator (B, H, S, D), then the row sums (B, H, S)
      Backend::AttentionScratch scratch{make_view(ws, {B, H, S, D}, {H * S * D, S * D, D, 1}, 0),
                                        make_view(ws, {B, H, S}, {H * S, S, 1}, B * H * S * D)};
      run_attention_backward(dq, dk, dv, g[0], q, k, v, out, lse_view(lse, S), causal, scale, drop, scratch);
    }
    return {dq, dk, dv};
  }
  void release_variables() override {
    attn_bias_.reset_data();
    key_.reset_data();
    query_.reset_data();
    value_.reset_data();
    logsumexp_.reset_data();
    output_.reset_data();
    philox_offset_.reset_data();
    philox_seed_.reset_data();
  }
};

// `bias`: an additive mask (B, 1, L, S), saved for the backward when given.
Tensor cudnn_forward(const Tensor& q, const Tensor& k, const Tensor& v, bool causal, double scale, bool need_lse,
                     const Tensor* bias = nullptr, double dropout_p = 0) {
  auto n = need_lse ? make_node<ScaledDotProductCudnnAttentionBackward0>({&q, &k, &v}) : nullptr;
  // (the seed and offset below are cuDNN's with or without dropout; the data backends draw their own)
  const AttnDropout drop = draw_dropout(dropout_p);
  Tensor seed = make_tensor({}, DType::Int64, "_cudnn_attention_forward");
  Tensor offset = make_tensor({}, DType::Int64, "_cudnn_attention_forward");
  Tensor out = empty_like_layout(q, "_cudnn_attention_forward");
  const int64_t B = q.size(0), H = q.size(1), S = q.size(2);
  Tensor lse = need_lse ? make_tensor({B, H, S, 1}, DType::Float32, "_cudnn_attention_forward") : Tensor();
  {
    driver_use(DriverUse::CudnnHandle);  // this thread's handle, before the graph's workspace
    if (q.dtype() == DType::Float16) driver_use(DriverUse::CudnnSdpaHalf);
    // the forward graph's 256 B workspace, for more than one query only (a decoding step's
    // single query takes none: generate()'s traces)
    Tensor ws = S > 1 ? make_tensor({64}, DType::Float32, "cudnn_workspace") : Tensor();
    Tensor lv = need_lse ? lse_view(lse, S) : Tensor();
    run_attention(out, need_lse ? &lv : nullptr, q, k, v, causal, scale, drop);
  }
  if (n) {
    n->causal = causal;
    n->scale = scale;
    n->drop = drop;
    n->query_ = SavedVariable(q, false);
    n->key_ = SavedVariable(k, false);
    n->value_ = SavedVariable(v, false);
    set_history(out, n);
    n->output_ = SavedVariable(out, true);
    n->logsumexp_ = SavedVariable(lse, false);
    n->philox_seed_ = SavedVariable(seed, false);
    n->philox_offset_ = SavedVariable(offset, false);
    if (bias) n->attn_bias_ = SavedVariable(*bias, false);
  }
  // the op's result tuple goes element by element: logsumexp, then the philox seed and offset
  lse.reset();
  seed.reset();
  offset.reset();
  return out;
}

// ---- FlashAttention-2 ----
struct ScaledDotProductFlashAttentionBackward0 : Node {
  SavedVariable key_, query_, value_, logsumexp_, output_, philox_seed_, philox_offset_;
  bool causal = false;
  double scale = 1;
  AttnDropout drop;
  std::string name() const override { return "ScaledDotProductFlashAttentionBackward0"; }
  TensorList apply(TensorList& g) override {
    if (!g[0].defined()) return undefined_grads(3);
    // unpacked in the generated code's order (inputs, then outputs, each by name)
    Tensor k = key_.unpack(this), q = query_.unpack(this), v = value_.unpack(this);
    Tensor lse = logsumexp_.unpack(this), out = output_.unpack(this);
    // _flash_attention_backward works on (B, S, H, D) views; dout and out made contiguous.
    Tensor dout_t = g[0].transpose(1, 2).contiguous(), out_t = out.transpose(1, 2).contiguous();
    Tensor dq = empty_like_layout(q.transpose(1, 2), "_flash_attention_backward").transpose(1, 2);
    Tensor dk = empty_like_layout(k.transpose(1, 2), "_flash_attention_backward").transpose(1, 2);
    Tensor dv = empty_like_layout(v.transpose(1, 2), "_flash_attention_backward").transpose(1, 2);
    Tensor dk_expanded, dv_expanded;
    if (k.size(1) != q.size(1)) {
      // mha_bwd with fewer key heads: dK, dV for every query head, then summed per group
      dk_expanded = make_tensor({k.size(0), k.size(2), q.size(1), k.size(3)}, k.dtype(), "_flash_attention_backward");
      dv_expanded = make_tensor({v.size(0), v.size(2), q.size(1), v.size(3)}, v.dtype(), "_flash_attention_backward");
    }
    {
      const int64_t B = q.size(0), H = q.size(1), S = q.size(2), D = q.size(3);
      const int64_t s_rounded = round_up(S, 128), d_rounded = D <= 192 ? round_up(D, 32) : 256;
      Tensor softmax_d = make_tensor({B, H, s_rounded}, DType::Float32, "_flash_attention_backward");
      Tensor dq_accum = make_tensor({B, s_rounded, H, d_rounded}, DType::Float32, "_flash_attention_backward");
      Backend::AttentionScratch scratch{
          make_view(dq_accum, {B, H, S, D}, {s_rounded * H * d_rounded, d_rounded, H * d_rounded, 1}, 0),
          make_view(softmax_d, {B, H, S}, {H * s_rounded, s_rounded, 1}, 0)};
      run_attention_backward(dq, dk, dv, g[0], q, k, v, out, lse, causal, scale, drop, scratch);
    }
    return {dq, dk, dv};
  }
  void release_variables() override {
    key_.reset_data();
    query_.reset_data();
    value_.reset_data();
    logsumexp_.reset_data();
    output_.reset_data();
    philox_seed_.reset_data();
    philox_offset_.reset_data();
  }
};

// flash's num_splits_heuristic: split the keys when the (batch x heads x query-block)
// grid leaves SMs idle (inference only; accumulators in float).
int64_t flash_num_splits(int64_t batch_nheads_mblocks, int64_t num_sms, int64_t num_n_blocks) {
  const int64_t max_splits = 128;
  if (batch_nheads_mblocks >= int64_t(0.8f * float(num_sms))) return 1;
  int64_t limit = std::min({num_sms, num_n_blocks, max_splits});
  std::vector<float> eff(size_t(limit) + 1, 0.f);
  float max_eff = 0.f;
  auto eligible = [&](int64_t s) { return s == 1 || ceil_div(num_n_blocks, s) != ceil_div(num_n_blocks, s - 1); };
  for (int64_t s = 1; s <= limit; ++s) {
    if (!eligible(s)) continue;
    float n_waves = float(batch_nheads_mblocks * s) / float(num_sms);
    eff[size_t(s)] = n_waves / std::ceil(n_waves);
    max_eff = std::max(max_eff, eff[size_t(s)]);
  }
  for (int64_t s = 1; s <= limit; ++s)
    if (eligible(s) && eff[size_t(s)] >= 0.85f * max_eff) return s;
  return 1;
}

Tensor flash_forward(const Tensor& q, const Tensor& k, const Tensor& v, bool causal, double scale, bool need_lse,
                     double dropout_p) {
  auto n = need_lse ? make_node<ScaledDotProductFlashAttentionBackward0>({&q, &k, &v}) : nullptr;
  const int64_t B = q.size(0), H = q.size(1), S = q.size(2), D = q.size(3), Sk = k.size(2);
  Tensor out = empty_like_layout(q.transpose(1, 2), "_flash_attention_forward").transpose(1, 2);
  Tensor lse = make_tensor({B, H, S}, DType::Float32, "_flash_attention_forward");
  const AttnDropout drop = draw_dropout(dropout_p);
  // with dropout, the philox seed and offset as two device int64 scalars (saved for the
  // backward; measured: 1 KiB a layer more than without dropout)
  Tensor seed, offset;
  if (dropout_p > 0) {
    seed = make_tensor({}, DType::Int64, "_flash_attention_forward");
    offset = make_tensor({}, DType::Int64, "_flash_attention_forward");
  }
  {
    Tensor lse_accum, out_accum;
    if (!need_lse) {
      const int64_t block_n = D <= 64 ? 256 : D <= 128 ? 128 : 64;
      int64_t splits =
          flash_num_splits(B * H * ceil_div(S, 64), int64_t(current_context().sm_count()) * 2, ceil_div(Sk, block_n));
      if (splits > 1) {
        const int64_t d_rounded = D <= 192 ? round_up(D, 32) : 256;
        lse_accum = make_tensor({splits, B, H, S}, DType::Float32, "_flash_attention_forward");
        out_accum = make_tensor({splits, B, H, S, d_rounded}, DType::Float32, "_flash_attention_forward");
      }
    }
    run_attention(out, &lse, q, k, v, causal, scale, drop);
  }
  if (n) {
    n->causal = causal;
    n->scale = scale;
    n->drop = drop;
    n->query_ = SavedVariable(q, false);
    n->key_ = SavedVariable(k, false);
    n->value_ = SavedVariable(v, false);
    set_history(out, n);
    n->output_ = SavedVariable(out, true);
    n->logsumexp_ = SavedVariable(lse, false);
    if (seed.defined()) {
      n->philox_seed_ = SavedVariable(seed, false);
      n->philox_offset_ = SavedVariable(offset, false);
    }
  }
  return out;
}

// ---- memory-efficient (CUTLASS) ----
// The backward kernel dispatch_cutlassB picks for this head dim: the first in its list
// whose kMaxK covers it (sm80 builds, run on sm80/sm90).
struct EffBwdKernel {
  int block_i, block_j, max_k;
};
EffBwdKernel efficient_bwd_kernel(bool half, int64_t max_k) {
  if (!half) {
    if (max_k <= 32) return {64, 64, 32};
    if (max_k <= 64) return {64, 64, 64};
    if (max_k <= 128) return {128, 64, 128};
    return {128, 64, 65536};
  }
  if (max_k <= 32) return {64, 64, 32};
  if (max_k <= 64) return {64, 64, 64};
  if (max_k <= 128) return {128, 64, 128};
  return {64, 64, 65536};
}

int64_t efficient_workspace_bytes(bool half, int64_t B, int64_t H, int64_t M, int64_t N, int64_t K, int64_t Kv) {
  EffBwdKernel ker = efficient_bwd_kernel(half, std::max(K, Kv));
  const int64_t I = ker.block_i, J = ker.block_j;
  const bool output_in_rf = half && ker.max_k <= I;
  const bool accum_kv = half && !output_in_rf;  // output_accum_t (float) differs from output_t
  // num_splits_key heuristic (attention_backward.cu)
  int64_t splits = ceil_div(N, J);
  if (B * H >= 256 && N <= 2 * J) splits = 1;
  if (accum_kv) splits = std::min<int64_t>(splits, 200 / std::max<int64_t>(1, B * H));
  splits = std::max<int64_t>(1, splits);
  const int64_t gk = accum_kv ? splits * round_up(N, J) * round_up(K, I) : 0;
  const int64_t gv = accum_kv ? splits * round_up(N, J) * round_up(Kv, I) : 0;
  // GradQTempStorage per (query block, column block): lock, counter, 2 pad ints + an I x J float tile.
  const int64_t gq = ceil_div(M, I) * ceil_div(K, J) * (4 + I * J);
  return B * H * round_up(gk + gv + gq, 4) * 4;
}

struct ScaledDotProductEfficientAttentionBackward0 : Node {
  SavedVariable attn_bias_, key_, query_, value_, log_sumexp_, output_;
  bool causal = false;
  double scale = 1;
  AttnDropout drop;
  std::string name() const override { return "ScaledDotProductEfficientAttentionBackward0"; }
  TensorList apply(TensorList& g) override {
    if (!g[0].defined()) return undefined_grads(3);
    // unpacked in the generated code's order (inputs, then outputs, each by name): under
    // checkpointing the recomputed tensors go in reverse when apply returns
    Tensor bias = attn_bias_.unpack(this);
    Tensor k = key_.unpack(this), q = query_.unpack(this), v = value_.unpack(this);
    Tensor lse = log_sumexp_.unpack(this), out = output_.unpack(this);
    const int64_t B = q.size(0), H = q.size(1), M = q.size(2), N = k.size(2), K = q.size(3), Kv = v.size(3);
    const int64_t Hk = k.size(1);  // fewer than H only on the CPU reference (grouped-query)
    // _efficient_attention_backward runs on (B, S, H, D) views; grad_out made contiguous there.
    Tensor grad_out = g[0].transpose(1, 2).contiguous();
    Tensor dq = make_tensor({B, M, H, K}, q.dtype(), "_efficient_attention_backward");
    Tensor dk = make_tensor({B, N, Hk, K}, k.dtype(), "_efficient_attention_backward");
    Tensor dv = make_tensor({B, N, Hk, Kv}, v.dtype(), "_efficient_attention_backward");
    {
      const bool half = is_half(q.dtype());
      Tensor delta;
      if (half) {
        delta = make_tensor({B, H, M}, DType::Float32, "_efficient_attention_backward");  // the kernel computes it
      } else {
        // (grad_out.float() * out.float()).sum(-1).transpose(-2, -1).contiguous(): one
        // C++ expression, its temporaries (the sum, then the product) freed at its end
        NoGradGuard ng;
        Tensor prod = mul(grad_out, out.transpose(1, 2));
        Tensor s = sum(prod, {-1});
        delta = s.transpose(-2, -1).contiguous();
      }
      Tensor ws = make_tensor({efficient_workspace_bytes(half, B, H, M, N, K, Kv) / 4}, DType::Float32,
                              "_efficient_attention_backward");
      // half types: the workspace's dQ tiles (at least B H M K floats) as a (B, H, M, K)
      // accumulator, and delta, which the kernel computes, as the row sums
      Backend::AttentionScratch scratch;
      if (half && ws.numel() >= B * H * M * K)
        scratch = {make_view(ws, {B, H, M, K}, {H * M * K, M * K, K, 1}, 0), delta};
      run_attention_backward(dq.transpose(1, 2), dk.transpose(1, 2), dv.transpose(1, 2), g[0], q, k, v, out,
                             lse_view(lse, M), causal, scale, drop, scratch);
    }
    return {dq.transpose(1, 2), dk.transpose(1, 2), dv.transpose(1, 2)};
  }
  void release_variables() override {
    attn_bias_.reset_data();
    key_.reset_data();
    query_.reset_data();
    value_.reset_data();
    log_sumexp_.reset_data();
    output_.reset_data();
  }
};

Tensor efficient_forward(const Tensor& q, const Tensor& k, const Tensor& v, bool causal, double scale, bool need_lse,
                         const Tensor* bias = nullptr, double dropout_p = 0) {
  const AttnDropout drop = draw_dropout(dropout_p);
  auto n = need_lse ? make_node<ScaledDotProductEfficientAttentionBackward0>({&q, &k, &v}) : nullptr;
  const int64_t B = q.size(0), H = q.size(1), M = q.size(2), Kv = v.size(3);
  Tensor res = make_tensor({B, M, H, Kv}, q.dtype(), "_efficient_attention_forward");
  // float log-sum-exp (double on the CPU reference, for gradient checks)
  const DType lse_dt = q.dtype() == DType::Float64 ? DType::Float64 : DType::Float32;
  Tensor lse = need_lse ? make_tensor({B, H, round_up(M, 32)}, lse_dt, "_efficient_attention_forward") : Tensor();
  Tensor out = res.transpose(1, 2);
  {
    // Half outputs accumulate in float when the value rows do not fit one iteration.
    Tensor accum;
    if (is_half(q.dtype()) && Kv > 128)
      accum = make_tensor({B, M, H, Kv}, DType::Float32, "_efficient_attention_forward");
    Tensor lv = need_lse ? lse_view(lse, M) : Tensor();
    run_attention(out, need_lse ? &lv : nullptr, q, k, v, causal, scale, drop);
  }
  if (n) {
    n->causal = causal;
    n->scale = scale;
    n->drop = drop;
    n->query_ = SavedVariable(q, false);
    n->key_ = SavedVariable(k, false);
    n->value_ = SavedVariable(v, false);
    set_history(out, n);
    n->output_ = SavedVariable(out, true);
    n->log_sumexp_ = SavedVariable(lse, false);
    if (bias) n->attn_bias_ = SavedVariable(*bias, false);
  }
  return out;
}

}  // namespace

const char* sdpa_backend_name(SdpaBackend b) {
  switch (b) {
    case SdpaBackend::Cudnn:
      return "cudnn";
    case SdpaBackend::Flash:
      return "flash";
    case SdpaBackend::Efficient:
      return "efficient";
  }
  return "?";
}

SdpaBackend sdpa_backend_for(const Tensor& q, const Tensor& k, const Tensor& v, bool causal, double dropout_p) {
  return select_backend(q, k, v, causal, dropout_p);
}

Tensor scaled_dot_product_attention(const Tensor& q_in, const Tensor& k_in, const Tensor& v_in, bool is_causal) {
  return scaled_dot_product_attention(q_in, k_in, v_in, is_causal, false, 0.0);
}

Tensor scaled_dot_product_attention(const Tensor& q_in, const Tensor& k_in, const Tensor& v_in, bool is_causal,
                                    bool enable_gqa, double scale_in) {
  return scaled_dot_product_attention(q_in, k_in, v_in, is_causal, enable_gqa, scale_in, 0.0);
}

Tensor scaled_dot_product_attention(const Tensor& q_in, const Tensor& k_in, const Tensor& v_in, bool is_causal,
                                    bool enable_gqa, double scale_in, double dropout_p) {
  // Autocast lists SDPA as lower precision: v, k, q cast (last argument first).
  Tensor v = autocast_lower(v_in), k = autocast_lower(k_in), q = autocast_lower(q_in);
  AutocastExcludeGuard ex;
  if (q.dim() != 4 || k.dim() != 4 || v.dim() != 4)
    throw std::invalid_argument("scaled_dot_product_attention: this engine takes (batch, heads, seq, head_dim) inputs");
  if (q.dtype() != k.dtype() || q.dtype() != v.dtype())
    throw std::invalid_argument(std::string("Expected query, key, and value to have the same dtype, but got "
                                            "query.dtype: ") +
                                dtype_name(q.dtype()) + " key.dtype: " + dtype_name(k.dtype()) +
                                " and value.dtype: " + dtype_name(v.dtype()) + " instead.");
  const bool gqa = enable_gqa && k.size(1) != q.size(1);
  if (q.size(0) != k.size(0) || (!gqa && q.size(1) != k.size(1)) || (gqa && q.size(1) % k.size(1) != 0) ||
      k.size(1) != v.size(1) || k.size(2) != v.size(2) || q.size(3) != k.size(3))
    throw std::invalid_argument("scaled_dot_product_attention: query " + q.shape_string() + ", key " +
                                k.shape_string() + " and value " + v.shape_string() + " do not match");
  const double scale = scale_in > 0 ? scale_in : 1.0 / std::sqrt(double(q.size(3)));
  const bool need_lse = any_requires_grad({&q, &k, &v});
  if (!current_context().backend().models_cuda()) {
    // The CPU reference: efficient-attention layout, no workspaces.
    return efficient_forward(q, k, v, is_causal, scale, need_lse, nullptr, dropout_p);
  }
  const SdpaBackend backend = select_backend(q, k, v, is_causal, dropout_p);
  current_context().last_sdpa_backend = sdpa_backend_name(backend);
  switch (backend) {
    case SdpaBackend::Cudnn:
      return cudnn_forward(q, k, v, is_causal, scale, need_lse, nullptr, dropout_p);
    case SdpaBackend::Flash:
      return flash_forward(q, k, v, is_causal, scale, need_lse, dropout_p);
    case SdpaBackend::Efficient:
      // memory-efficient attention takes no enable_gqa: PyTorch falls back to the math path
      if (gqa) {
        current_context().last_sdpa_backend = "math";
        return sdpa_math(q, k, v, is_causal, true, scale, dropout_p);
      }
      return efficient_forward(q, k, v, is_causal, scale, need_lse, nullptr, dropout_p);
  }
  throw std::logic_error("unreachable");
}

Tensor scaled_dot_product_attention_masked(const Tensor& q_in, const Tensor& k_in, const Tensor& v_in, int64_t batch,
                                           double scale) {
  Tensor v = autocast_lower(v_in), k = autocast_lower(k_in), q = autocast_lower(q_in);
  AutocastExcludeGuard ex;
  if (q.dim() != 4 || k.size(1) != q.size(1) || q.dtype() != k.dtype() || q.dtype() != v.dtype())
    throw std::invalid_argument("scaled_dot_product_attention with a mask: (B, H, L, D) inputs of one dtype and heads");
  if (current_context().backend().has_data() || !current_context().backend().models_cuda())
    throw std::invalid_argument("scaled_dot_product_attention with a mask runs on the simulated GPUs only");
  const SdpaBackend backend = select_backend(q, k, v, false, 0.0);
  const bool prefer_cudnn =
      current_context().compute_capability() == 90 || current_context().compute_capability() == 100;
  current_context().last_sdpa_backend = sdpa_backend_name(backend);
  const bool need_lse = any_requires_grad({&q, &k, &v});
  if (backend == SdpaBackend::Efficient && !need_lse) {
    // under no_grad (generate() past a sliding window in float32): the mask becomes an additive
    // one in q's dtype with both scalars on the device, at any length (no padded bias), and lives
    // until the call returns (PyTorch 2.11's allocator trace)
    Tensor bias;
    {
      Tensor zero = make_tensor({}, q.dtype(), "scalar_tensor"), low = make_tensor({}, q.dtype(), "scalar_tensor");
      bias = make_tensor({batch, 1, q.size(2), k.size(2)}, q.dtype(), "where");
    }
    return efficient_forward(q, k, v, false, scale, false, &bias);
  }
  if (backend == SdpaBackend::Efficient && q.size(2) % 16 == 0 && k.size(2) % 16 == 0) {
    // convert_boolean_attn_mask: where(mask.logical_not(), -inf, scalar_tensor(0.0)), its
    // arguments made right to left; lengths that are multiples of 16 need no padded bias
    Tensor bias;
    {
      Tensor zero = make_tensor({}, q.dtype(), "scalar_tensor");
      Tensor inverted = bool_tensor(batch * q.size(2) * k.size(2), "logical_not");
      bias = make_tensor({batch, 1, q.size(2), k.size(2)}, q.dtype(), "where");
    }
    return efficient_forward(q, k, v, false, scale, need_lse, &bias);
  }
  if (backend != SdpaBackend::Cudnn || !prefer_cudnn)
    throw std::invalid_argument(
        "scaled_dot_product_attention with a mask: cuDNN's path (half types on Hopper/Blackwell) and memory-efficient "
        "attention with lengths that are multiples of 16 are modelled, not these inputs");
  // convert_boolean_attn_mask_cudnn: where(mask, 0, -65504) in q's dtype, its two scalars on the
  // device for the call; the (B, 1, L, S) result lives as long as the node that saves it
  Tensor bias;
  {
    Tensor zero = make_tensor({}, q.dtype(), "scalar_tensor"), low = make_tensor({}, q.dtype(), "scalar_tensor");
    bias = make_tensor({batch, 1, q.size(2), k.size(2)}, q.dtype(), "where");
  }
  return cudnn_forward(q, k, v, false, scale, need_lse, &bias);
}

}  // namespace vramlab::engine
