// Simulated GPU: no data, only shapes. Each kernel adds its modelled time from the
// bytes it moves and the FLOPs it does at the preset's bandwidth and peak rates, so
// a step of a 70B-parameter model costs microseconds of host time.
#include <algorithm>
#include <stdexcept>

#include "engine/backends/backend.h"

namespace vramlab::engine {

namespace {

constexpr double kLaunchOverheadS = 4e-6;  // per kernel launch
constexpr double kGemmEfficiency = 0.75;   // achieved fraction of peak on large GEMMs
constexpr double kMemEfficiency = 0.85;

// Bytes a kernel touches for a possibly broadcast (stride-0) operand.
double touched_bytes(const Tensor& t) {
  double n = 1;
  for (size_t d = 0; d < t.sizes().size(); ++d)
    if (t.strides()[d] != 0) n *= double(t.sizes()[d]);
  return n * double(t.element_size());
}

class SimBackend : public Backend {
 public:
  explicit SimBackend(DeviceInfo info) : info_(std::move(info)) {}
  const char* name() const override { return "sim"; }
  bool has_data() const override { return false; }
  bool models_cuda() const override { return true; }
  void attach_data(Storage&) override {}
  double modeled_time_s() const override { return time_s_; }

  void fill(const Tensor& out, double) override { mem(touched_bytes(out)); }
  void random_normal(const Tensor& out, double, double, uint64_t) override { mem(touched_bytes(out)); }
  void random_uniform(const Tensor& out, double, double, uint64_t) override { mem(touched_bytes(out)); }
  void unary(UnaryOp, const Tensor& out, const Tensor& a, double) override {
    mem(touched_bytes(out) + touched_bytes(a));
  }
  void binary(BinaryOp, const Tensor& out, const Tensor& a, const Tensor& b, double) override {
    mem(touched_bytes(out) + touched_bytes(a) + touched_bytes(b));
  }
  void ternary(TernaryOp, const Tensor& out, const Tensor& a, const Tensor& b, const Tensor& c, double) override {
    mem(touched_bytes(out) + touched_bytes(a) + touched_bytes(b) + touched_bytes(c));
  }
  void sum_reduce(const Tensor& out, const Tensor& in) override { mem(touched_bytes(out) + touched_bytes(in)); }
  void gemm(const Tensor& out, const Tensor& a, const Tensor& b, const Tensor* bias, bool tf32) override {
    double flops = 2.0 * double(a.size(0)) * double(a.size(1)) * double(b.size(1));
    double tflops = info_.fp32_tflops;
    if (a.dtype() == DType::Float16 || a.dtype() == DType::BFloat16)
      tflops = info_.bf16_tflops;
    else if (a.dtype() == DType::Float32 && tf32)
      tflops = info_.bf16_tflops / 2;  // TF32 tensor cores
    else if (a.dtype() == DType::Float64)
      tflops = info_.fp32_tflops / 2;
    double compute = flops / (std::max(tflops, 1e-3) * 1e12 * kGemmEfficiency);
    double bytes = touched_bytes(out) + touched_bytes(a) + touched_bytes(b) + (bias ? touched_bytes(*bias) : 0);
    time_s_ += std::max(compute, bytes / bandwidth()) + kLaunchOverheadS;
  }
  void log_softmax(const Tensor& out, const Tensor& in) override { mem(touched_bytes(out) + touched_bytes(in)); }
  void log_softmax_backward(const Tensor& out, const Tensor& grad, const Tensor& result) override {
    mem(touched_bytes(out) + touched_bytes(grad) + touched_bytes(result));
  }
  void nll_loss(const Tensor& out, const Tensor&, const Tensor& logp, const Tensor& target, bool) override {
    mem(touched_bytes(out) + touched_bytes(target) + double(logp.size(0)) * double(logp.element_size()));
  }
  void nll_loss_backward(const Tensor& gi, const Tensor&, const Tensor& target, const Tensor&, bool) override {
    mem(touched_bytes(gi) + touched_bytes(target));
  }

  void index_select_rows(const Tensor& out, const Tensor&, const Tensor& indices) override {
    mem(2 * touched_bytes(out) + touched_bytes(indices));
  }
  void index_add_rows(const Tensor& gw, const Tensor& grad, const Tensor& indices) override {
    mem(touched_bytes(gw) + touched_bytes(grad) + touched_bytes(indices));
  }
  void layer_norm(const Tensor& y, const Tensor& mean, const Tensor& rstd, const Tensor& x, const Tensor*,
                  const Tensor*, double) override {
    mem(touched_bytes(y) + touched_bytes(x) + touched_bytes(mean) + touched_bytes(rstd));
  }
  void layer_norm_backward(const Tensor* dx, const Tensor*, const Tensor*, const Tensor& dy, const Tensor& x,
                           const Tensor&, const Tensor&, const Tensor*) override {
    mem(2 * touched_bytes(dy) + touched_bytes(x) + (dx ? touched_bytes(*dx) : 0));
  }
  void attention(const Tensor& out, const Tensor*, const Tensor& q, const Tensor& k, const Tensor& v, bool causal,
                 double) override {
    // Two GEMMs over the (causally halved) score matrix, streamed through on-chip memory.
    double B = double(q.size(0)), H = double(q.size(1)), Sq = double(q.size(2)), Sk = double(k.size(2));
    double flops = 4.0 * B * H * Sq * Sk * double(q.size(3)) * (causal ? 0.5 : 1.0);
    attention_time(flops, q, touched_bytes(q) + touched_bytes(k) + touched_bytes(v) + touched_bytes(out));
  }
  void attention_backward(const Tensor& dq, const Tensor& dk, const Tensor& dv, const Tensor& dout, const Tensor& q,
                          const Tensor& k, const Tensor& v, const Tensor& out, const Tensor&, bool causal, double,
                          const AttentionScratch&) override {
    double B = double(q.size(0)), H = double(q.size(1)), Sq = double(q.size(2)), Sk = double(k.size(2));
    double flops = 10.0 * B * H * Sq * Sk * double(q.size(3)) * (causal ? 0.5 : 1.0);
    attention_time(flops, q,
                   touched_bytes(q) + touched_bytes(k) + touched_bytes(v) + touched_bytes(out) + touched_bytes(dout) +
                       touched_bytes(dq) + touched_bytes(dk) + touched_bytes(dv));
  }
  void arange(const Tensor& out, double) override { mem(touched_bytes(out)); }
  void rope_tables(const Tensor& cos, const Tensor& sin, double, int64_t) override {
    mem(touched_bytes(cos) + touched_bytes(sin));
  }
  void argmax_last(const Tensor& out, const Tensor& in) override { mem(touched_bytes(out) + touched_bytes(in)); }

  double item(const Tensor&) override {
    throw std::logic_error("item(): the simulated device holds shapes only, tensor values are not available");
  }
  bool all_finite(const Tensor&) override { return true; }  // no data: nothing can overflow

 private:
  double bandwidth() const { return std::max(info_.mem_bandwidth_gbs, 1.0) * 1e9 * kMemEfficiency; }
  void mem(double bytes) { time_s_ += bytes / bandwidth() + kLaunchOverheadS; }
  void attention_time(double flops, const Tensor& q, double bytes) {
    bool half = q.dtype() == DType::Float16 || q.dtype() == DType::BFloat16;
    double tflops = half ? info_.bf16_tflops : info_.fp32_tflops;
    double compute = flops / (std::max(tflops, 1e-3) * 1e12 * kGemmEfficiency * 0.6);  // softmax between the GEMMs
    time_s_ += std::max(compute, bytes / bandwidth()) + kLaunchOverheadS;
  }

  DeviceInfo info_;
  double time_s_ = 0;
};

}  // namespace

std::shared_ptr<Backend> make_sim_backend(const DeviceInfo& info) { return std::make_shared<SimBackend>(info); }

#ifndef VRAMLAB_HAVE_CUDA
std::shared_ptr<Backend> make_cuda_backend(std::string* why) {
  if (why) *why = "this build has no CUDA backend (nvcc was not found at configure time)";
  return nullptr;
}
#endif

}  // namespace vramlab::engine
