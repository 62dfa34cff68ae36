#pragma once
// The CUDA backend: our kernels on one stream, cuBLAS (dlopen'd) for gemm with its
// workspace taken from the engine's allocator. Tests and benchmarks reach the
// extras below (host transfers, the stream) through this header.
#include <cuda_runtime_api.h>

#include <memory>
#include <string>

#include "engine/backends/backend.h"
#include "engine/backends/cuda/cublas_loader.h"
#include "engine/backends/cuda/blas_lt.h"

namespace vramlab::engine {

class EngineContext;

namespace cuda {

class CudaBackend : public Backend {
 public:
  CudaBackend(int ordinal, const CublasApi& blas);
  ~CudaBackend() override;
  CudaBackend(const CudaBackend&) = delete;
  CudaBackend& operator=(const CudaBackend&) = delete;

  const char* name() const override { return "cuda"; }
  bool has_data() const override { return true; }
  bool models_cuda() const override { return true; }
  void attach_data(Storage& s) override;

  void fill(const Tensor& out, double v) override;
  void random_normal(const Tensor& out, double mean, double std, uint64_t seed) override;
  void random_uniform(const Tensor& out, double lo, double hi, uint64_t seed) override;
  void unary(UnaryOp op, const Tensor& out, const Tensor& a, double s) override;
  void binary(BinaryOp op, const Tensor& out, const Tensor& a, const Tensor& b, double s) override;
  void ternary(TernaryOp op, const Tensor& out, const Tensor& a, const Tensor& b, const Tensor& c, double s) override;
  void sum_reduce(const Tensor& out, const Tensor& in) override;
  void gemm(const Tensor& out, const Tensor& a, const Tensor& b, const Tensor* bias, bool tf32) override;
  void log_softmax(const Tensor& out, const Tensor& in) override;
  void log_softmax_backward(const Tensor& out, const Tensor& grad, const Tensor& result) override;
  void nll_loss(const Tensor& out, const Tensor& total_weight, const Tensor& logp, const Tensor& target,
                bool mean) override;
  void nll_loss_backward(const Tensor& grad_input, const Tensor& grad, const Tensor& target, const Tensor& total_weight,
                         bool mean) override;
  double item(const Tensor& t) override;
  bool all_finite(const Tensor& t) override;
  void synchronize() override;
  // Multi-tensor kernels for the float32 contiguous tensors, the default per-tensor ops
  // for any others (and for all of them with tuning().fused_adam off).
  void adam_foreach(const AdamForeachArgs& a) override;
  // AdamW's decay as the kernel's first multiply (148 mul_ launches fewer a GPT-2 step).
  bool fuses_adam_weight_decay() const override { return tuning_.fused_adam; }
  // Transformer kernels (cuda_transformer.cpp, kernels/transformer.cu).
  void index_select_rows(const Tensor& out, const Tensor& weight, const Tensor& indices) override;
  void index_add_rows(const Tensor& grad_weight, const Tensor& grad, const Tensor& indices) override;
  void layer_norm(const Tensor& y, const Tensor& mean, const Tensor& rstd, const Tensor& x, const Tensor* weight,
                  const Tensor* bias, double eps) override;
  void layer_norm_backward(const Tensor* dx, const Tensor* dweight, const Tensor* dbias, const Tensor& dy,
                           const Tensor& x, const Tensor& mean, const Tensor& rstd, const Tensor* weight) override;
  void attention(const Tensor& out, const Tensor* lse, const Tensor& q, const Tensor& k, const Tensor& v, bool causal,
                 double scale) override;
  void attention_backward(const Tensor& dq, const Tensor& dk, const Tensor& dv, const Tensor& dout, const Tensor& q,
                          const Tensor& k, const Tensor& v, const Tensor& out, const Tensor& lse, bool causal,
                          double scale, const AttentionScratch& scratch) override;
  void arange(const Tensor& out, double start) override;
  void rope_tables(const Tensor& cos, const Tensor& sin, double theta, int64_t first = 0) override;
  void argmax_last(const Tensor& out, const Tensor& in) override;
  // What the Hugging Face models add (cuda_hf_ops.cpp, kernels/hf_ops.cu); grouped_mm is
  // Backend's default (one cuBLAS gemm per expert).
  void dropout(const Tensor& out, const Tensor& mask, const Tensor& x, double p, uint64_t seed) override;
  void dropout_backward(const Tensor& out, const Tensor& grad, const Tensor& mask, double scale) override;
  void attention_dropout(const Tensor& out, const Tensor& lse, const Tensor& q, const Tensor& k, const Tensor& v,
                         bool causal, double scale, double p, uint64_t seed) override;
  void attention_dropout_backward(const Tensor& dq, const Tensor& dk, const Tensor& dv, const Tensor& dout,
                                  const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out,
                                  const Tensor& lse, bool causal, double scale, double p, uint64_t seed) override;
  void softmax(const Tensor& out, const Tensor& in) override;
  void softmax_backward(const Tensor& out, const Tensor& grad, const Tensor& y) override;
  void topk_rows(const Tensor& values, const Tensor& indices, const Tensor& in, int64_t k) override;
  void scatter_rows(const Tensor& out, const Tensor& src, const Tensor& indices) override;
  void sort_int64(const Tensor& values, const Tensor& perm, const Tensor& in) override;
  void index_div(const Tensor& out, const Tensor& in, int64_t d) override;
  void invert_permutation(const Tensor& out, const Tensor& perm) override;
  void group_offsets(const Tensor& counts, const Tensor& offsets, const Tensor& sorted_ids) override;
  void read_bytes(void* dst, const Tensor& src, size_t bytes) override { copy_to_host(dst, src, bytes); }

  // Performance switches, on by default, so one benchmark process can A/B them (and
  // VRAMLAB_CUDA_TUNING=old starts a backend with all of them off). None changes
  // which memory is allocated.
  struct Tuning {
    bool fused_adam = true;           // adam_foreach as multi-tensor kernels
    bool split_column_reduce = true;  // column sums split over more blocks (bias grads)
    bool lt_bias_epilogue = true;     // addmm with a 1-D bias through cuBLASLt (as ATen)
  };
  const Tuning& tuning() const { return tuning_; }
  void set_tuning(const Tuning& t) { tuning_ = t; }

  // Extras (not part of Backend): the stream every kernel and cuBLAS call runs on,
  // and synchronous host <-> device copies of a dense tensor's bytes.
  cudaStream_t stream() const { return stream_; }
  int ordinal() const { return ordinal_; }
  const std::string& cublas_library() const { return blas_.library; }
  // addmm calls served by cuBLASLt's bias epilogue (0 without cuBLASLt).
  int64_t cublaslt_runs() const { return lt_ ? lt_->runs() : 0; }
  void copy_from_host(const Tensor& dst, const void* src, size_t bytes);
  void copy_to_host(void* dst, const Tensor& src, size_t bytes);

 private:
  void release() noexcept;
  void use_device() const;
  void pointwise(int kind, int op, const Tensor& out, std::initializer_list<const Tensor*> in, double s,
                 const char* what);
  void copy_same_dtype(const Tensor& out, const Tensor& a);
  void check_device_errors();  // after a stream sync: out-of-range nll targets
  void set_workspace_for_current_thread();

  int ordinal_;
  const CublasApi& blas_;
  cublasHandle_t handle_ = nullptr;
  std::unique_ptr<LtBiasGemm> lt_;  // null when cuBLASLt is unavailable
  cudaStream_t stream_ = nullptr;
  int num_sms_ = 1;
  float* scratch_ = nullptr;  // partial sums of split reductions
  int64_t scratch_floats_ = 0;
  long long* err_ = nullptr;                    // device: {flag, offending target}
  int* flag_ = nullptr;                         // device: all_finite
  void* pinned_ = nullptr;                      // host, page-locked: small device -> host reads
  void* ws_set_ = reinterpret_cast<void*>(-1);  // the workspace cuBLAS was last given
  size_t ws_size_ = 0;
  Tuning tuning_;
};

// make_cuda_backend for a given GPU (the Backend factory uses the current device).
std::shared_ptr<Backend> make_cuda_backend_for(int ordinal, std::string* why);

}  // namespace cuda
}  // namespace vramlab::engine
