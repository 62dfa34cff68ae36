#pragma once
// The one op interface the three backends implement: cpu (reference kernels, float64
// capable), sim (shapes only, a time model) and cuda (our kernels + cuBLAS).
// Every kernel writes `out`; inputs arrive already broadcast to out's shape (stride 0
// on broadcast dims) and may have other dtypes than out (computed in out's type).
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "device/device.h"
#include "engine/core/tensor.h"

namespace vramlab::engine {

enum class UnaryOp : uint8_t {
  Copy,
  Neg,
  Relu,
  Gelu,
  GeluTanh,
  Sqrt,
  Exp,
  Log,
  Abs,
  Square,
  Reciprocal,
  AddScalar,
  MulScalar,
  DivScalar,
  RSubScalar,
  PowScalar,
  Silu,
  Rsqrt,
  Tanh
};
enum class BinaryOp : uint8_t {
  Add,  // a + s*b
  Sub,  // a - s*b
  Mul,
  Div,
  ThresholdBackward,  // b > 0 ? a : 0   (a = grad, b = relu result)
  GeluBackward,       // a * gelu'(b)    (a = grad, b = input)
  GeluTanhBackward,
  SqDiff,  // (a-b)^2
  Lerp,    // a + s*(b-a)
  Maximum,
  SiluBackward,  // a * silu'(b)    (a = grad, b = input)
  TanhBackward   // a * (1 - b^2)   (a = grad, b = tanh result)
};
enum class TernaryOp : uint8_t {
  Addcmul,     // a + s*b*c
  Addcdiv,     // a + s*b/c
  MseBackward  // s*(a-b)*c        (a = input, b = target, c = grad)
};

const char* unary_op_name(UnaryOp op);
const char* binary_op_name(BinaryOp op);

// One step of torch's _multi_tensor_adam over parallel lists (same length, tensor i of
// every list has param i's shape). Per tensor, in the foreach path's order of ops:
//   exp_avg.lerp_(grad, 1-beta1); exp_avg_sq.mul_(beta2).addcmul_(grad, grad, 1-beta2)
//   denom = sqrt(exp_avg_sq) / bias_correction2_sqrt[i] + eps
//   param.addcdiv_(exp_avg, denom, step_size[i])          (step_size = -lr / bc1)
// `denom` are outputs the caller allocated (torch allocates the _foreach_sqrt results),
// so memory readings do not depend on whether a backend fuses the arithmetic.
// param_scale != 1: AdamW's decoupled weight decay, _foreach_mul_(params, 1 - lr * wd),
// runs first (every param of the list, before any lerp_); the optimizer passes it only
// to a backend whose fuses_adam_weight_decay() says so, others get the mul_ kernels as ops.
struct AdamForeachArgs {
  std::vector<Tensor> params, grads, exp_avgs, exp_avg_sqs, denoms;
  std::vector<double> bias_correction2_sqrt, step_size;
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
  double param_scale = 1.0;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual const char* name() const = 0;
  virtual bool has_data() const = 0;
  // Whether the backend stands for a CUDA GPU (cuBLAS workspaces are modelled).
  virtual bool models_cuda() const = 0;
  // Attach data memory to a freshly allocated storage (host buffer or device pointer).
  virtual void attach_data(Storage& s) = 0;

  virtual void fill(const Tensor& out, double v) = 0;
  virtual void random_normal(const Tensor& out, double mean, double std, uint64_t seed) = 0;
  virtual void random_uniform(const Tensor& out, double lo, double hi, uint64_t seed) = 0;
  virtual void unary(UnaryOp op, const Tensor& out, const Tensor& a, double s) = 0;
  virtual void binary(BinaryOp op, const Tensor& out, const Tensor& a, const Tensor& b, double s) = 0;
  virtual void ternary(TernaryOp op, const Tensor& out, const Tensor& a, const Tensor& b, const Tensor& c,
                       double s) = 0;
  // out has in's rank, size 1 on reduced dims.
  virtual void sum_reduce(const Tensor& out, const Tensor& in) = 0;
  // out[m,n] = a[m,k] @ b[k,n] (+ bias[n]); any strides.
  virtual void gemm(const Tensor& out, const Tensor& a, const Tensor& b, const Tensor* bias, bool tf32) = 0;
  virtual void log_softmax(const Tensor& out, const Tensor& in) = 0;  // over the last dim of 2-D
  virtual void log_softmax_backward(const Tensor& out, const Tensor& grad, const Tensor& result) = 0;
  virtual void nll_loss(const Tensor& out, const Tensor& total_weight, const Tensor& logp, const Tensor& target,
                        bool mean) = 0;
  virtual void nll_loss_backward(const Tensor& grad_input, const Tensor& grad, const Tensor& target,
                                 const Tensor& total_weight, bool mean) = 0;
  virtual double item(const Tensor& t) = 0;

  // Transformer kernels (backend_transformer.cpp holds the defaults: an error naming the
  // backend and kernel, for a backend that has none yet).
  // out[i, :] = weight[indices[i], :] for contiguous 2-D out / weight and int64 indices.
  virtual void index_select_rows(const Tensor& out, const Tensor& weight, const Tensor& indices);
  // grad_weight[indices[i], :] += grad[i, :] (grad_weight arrives zero-filled).
  virtual void index_add_rows(const Tensor& grad_weight, const Tensor& grad, const Tensor& indices);
  // Over rows of the last dim: y = (x - mean) * rstd * w + b; mean, rstd per row (float).
  virtual void layer_norm(const Tensor& y, const Tensor& mean, const Tensor& rstd, const Tensor& x,
                          const Tensor* weight, const Tensor* bias, double eps);
  virtual void layer_norm_backward(const Tensor* dx, const Tensor* dweight, const Tensor* dbias, const Tensor& dy,
                                   const Tensor& x, const Tensor& mean, const Tensor& rstd, const Tensor* weight);
  // Attention over (B, H, S, D) views: out = softmax(q kᵀ scale, causal mask) v, and, when
  // given, lse[b, h, i] = the row's log-sum-exp (natural log), in float.
  virtual void attention(const Tensor& out, const Tensor* lse, const Tensor& q, const Tensor& k, const Tensor& v,
                         bool causal, double scale);
  // `scratch`: buffers the engine allocated for this backward as PyTorch's kernel does
  // (flash's dq_accum and softmax_d, cuDNN's workspace), which a data backend may use
  // instead of allocating: a float dQ accumulator viewed as q's shape (B, Hq, Sq, D) and
  // float row sums (B, Hq, Sq), any strides; either undefined when there is none. Their
  // contents are the backend's to overwrite; the simulated and CPU backends ignore them.
  struct AttentionScratch {
    Tensor dq_accum, row_sums;
  };
  virtual void attention_backward(const Tensor& dq, const Tensor& dk, const Tensor& dv, const Tensor& dout,
                                  const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out,
                                  const Tensor& lse, bool causal, double scale, const AttentionScratch& scratch);
  virtual void arange(const Tensor& out, double start);  // out[i] = start + i (1-D)
  // Rotary tables (T, D/2), unit column stride (rows may be strided, as the halves of
  // HF's (T, D) tables): angle[t, i] = (first + t) / theta^(2i/D); cos and sin of it.
  virtual void rope_tables(const Tensor& cos, const Tensor& sin, double theta, int64_t first = 0);
  virtual void argmax_last(const Tensor& out, const Tensor& in);  // int64 index of each row's max

  // ---- what the Hugging Face models add (defaults: an error naming the kernel) ----
  // Grouped-query attention: attention / attention_backward take k, v (and dk, dv) with
  // Hk heads, Hq % Hk == 0; query head h reads kv head h / (Hq / Hk), and dk, dv of a kv
  // head are the sums over the Hq / Hk query heads that read it.
  //
  // Dropout masks are counter-based: element i (in out's contiguous order) is kept when
  // philox_uniform(seed, i) >= p (scalar_math.h; Philox4x32-10, the same numbers on
  // every backend). `mask` holds one byte per element (torch.bool: 1 kept, 0 dropped).
  // out = x * mask / (1 - p); out and mask contiguous.
  virtual void dropout(const Tensor& out, const Tensor& mask, const Tensor& x, double p, uint64_t seed);
  // out = grad * mask * scale, mask as dropout wrote it; out contiguous.
  virtual void dropout_backward(const Tensor& out, const Tensor& grad, const Tensor& mask, double scale);
  // Attention with dropout on the probabilities (FlashAttention's semantics): the
  // softmax, its lse and normaliser are the undropped ones; P[b,h,i,j] is kept when
  // philox_uniform(seed, ((b * H + h) * Sq + i) * Sk + j) >= p, and scaled by 1 / (1 - p).
  virtual void attention_dropout(const Tensor& out, const Tensor& lse, const Tensor& q, const Tensor& k,
                                 const Tensor& v, bool causal, double scale, double p, uint64_t seed);
  virtual void attention_dropout_backward(const Tensor& dq, const Tensor& dk, const Tensor& dv, const Tensor& dout,
                                          const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out,
                                          const Tensor& lse, bool causal, double scale, double p, uint64_t seed);
  // softmax over the last dim of a 2-D view; its backward out = y * (g - sum_row(g * y)).
  virtual void softmax(const Tensor& out, const Tensor& in);
  virtual void softmax_backward(const Tensor& out, const Tensor& grad, const Tensor& y);
  // The k largest of each row of a 2-D view, in descending order (ties: the lower
  // index first); indices int64. Its gradient: out[r, idx[r, j]] = src[r, j] (out
  // arrives zero-filled).
  virtual void topk_rows(const Tensor& values, const Tensor& indices, const Tensor& in, int64_t k);
  virtual void scatter_rows(const Tensor& out, const Tensor& src, const Tensor& indices);
  // Contiguous 1-D int64: a stable ascending sort (values and the permutation), the
  // floor division by d of non-negative values, and the inverse of a permutation
  // (out[perm[i]] = i).
  virtual void sort_int64(const Tensor& values, const Tensor& perm, const Tensor& in);
  virtual void index_div(const Tensor& out, const Tensor& in, int64_t d);
  virtual void invert_permutation(const Tensor& out, const Tensor& perm);
  // MoE routing offsets from ascending expert ids: counts[e] = #ids equal to e, offsets
  // = their inclusive cumsum; both int32 (4 raw bytes an element, whatever the engine
  // tensor's dtype says: the engine has no int32).
  virtual void group_offsets(const Tensor& counts, const Tensor& offsets, const Tensor& sorted_ids);
  // torch._grouped_mm with int32 `offs` (E cumulative row ends, as group_offsets makes):
  //   a (S, K), b (E, K, N) -> out (S, N): rows [offs[g-1], offs[g]) of a times b[g];
  //   a (K, S), b (S, N)    -> out (E, K, N): out[g] = a[:, group g] b[group g, :].
  // The default runs one gemm per group on views (offs read to the host).
  virtual void grouped_mm(const Tensor& out, const Tensor& a, const Tensor& b, const Tensor& offs);
  // Copies `bytes` raw bytes of a contiguous tensor to the host (waits for it).
  virtual void read_bytes(void* dst, const Tensor& src, size_t bytes);
  virtual bool all_finite(const Tensor& t) = 0;
  virtual void synchronize() {}
  // Optional: the default runs the per-tensor unary/binary/ternary kernels in the order
  // the foreach path launches them (cpu and sim keep their results and modelled time);
  // the cuda backend fuses them into multi-tensor kernels.
  virtual void adam_foreach(const AdamForeachArgs& a);
  // Whether adam_foreach should take AdamW's weight decay (param_scale) too.
  virtual bool fuses_adam_weight_decay() const { return false; }
  // Modelled device time of the kernels run so far (sim backend; 0 elsewhere).
  virtual double modeled_time_s() const { return 0.0; }
};

std::shared_ptr<Backend> make_cpu_backend();
std::shared_ptr<Backend> make_sim_backend(const DeviceInfo& info);
// Null when the build has no CUDA or no usable GPU (message in *why).
std::shared_ptr<Backend> make_cuda_backend(std::string* why);

}  // namespace vramlab::engine
