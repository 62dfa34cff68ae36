#ifdef VRAMLAB_HAVE_CUDA
// CUDA backend: validation and planning on the host, our kernels on one stream, cuBLAS
// gemm. No device synchronisation on the hot path: only item(), all_finite(),
// synchronize() and host copies wait for the stream.
#include "engine/backends/cuda/cuda_backend.h"
#include "engine/backends/cuda/kernel_views.h"

#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include "engine/backends/cuda/blas_gemm.h"
#include "engine/backends/cuda/cuda_check.h"
#include "engine/backends/cuda/kernels/launch.h"
#include "engine/backends/cuda/pointwise_args.h"
#include "engine/backends/cuda/reduce_plan.h"
#include "engine/core/context.h"

namespace vramlab::engine {

namespace cuda {

namespace {

bool float_type(DType d) { return d == DType::Float32 || d == DType::Float16 || d == DType::BFloat16; }

void require_float(const Tensor& t, const char* what) {
  if (!float_type(t.dtype()))
    throw std::invalid_argument(std::string(what) + ": dtype " + dtype_name(t.dtype()) +
                                " is not supported by the cuda backend (float32, float16, bfloat16)");
}

void require_castable(const Tensor& t, const char* what) {
  if (!float_type(t.dtype()) && t.dtype() != DType::Int64)
    throw std::invalid_argument(std::string(what) + ": dtype " + dtype_name(t.dtype()) +
                                " is not supported by the cuda backend (float32, float16, bfloat16, int64)");
}

// The value's bit pattern in `t`'s element type (fill writes raw bits).
uint64_t value_bits(DType t, double v) {
  switch (t) {
    case DType::Float32: {
      float f = float(v);
      uint32_t b;
      std::memcpy(&b, &f, 4);
      return b;
    }
    case DType::Float16:
      return float_to_half(float(v));
    case DType::BFloat16:
      return float_to_bf16(float(v));
    case DType::Float64: {
      uint64_t b;
      std::memcpy(&b, &v, 8);
      return b;
    }
    case DType::Int64: {
      int64_t i = int64_t(v);
      uint64_t b;
      std::memcpy(&b, &i, 8);
      return b;
    }
  }
  return 0;
}

double host_value(const uint8_t* p, DType t) {
  switch (t) {
    case DType::Float32: {
      float v;
      std::memcpy(&v, p, 4);
      return v;
    }
    case DType::Float64: {
      double v;
      std::memcpy(&v, p, 8);
      return v;
    }
    case DType::Float16: {
      uint16_t v;
      std::memcpy(&v, p, 2);
      return half_to_float(v);
    }
    case DType::BFloat16: {
      uint16_t v;
      std::memcpy(&v, p, 2);
      return bf16_to_float(v);
    }
    case DType::Int64: {
      int64_t v;
      std::memcpy(&v, p, 8);
      return double(v);
    }
  }
  return 0;
}

constexpr size_t kPinnedBytes = 64;  // [0,16): a value, [16,32): error words, [32,36): flag

}  // namespace

CudaBackend::CudaBackend(int ordinal, const CublasApi& blas) : ordinal_(ordinal), blas_(blas) {
  try {
    check_cuda(cudaSetDevice(ordinal_), "cudaSetDevice");
    check_cuda(cudaDeviceGetAttribute(&num_sms_, cudaDevAttrMultiProcessorCount, ordinal_), "cudaDeviceGetAttribute");
    check_cuda(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
    check_cublas(blas_, blas_.create(&handle_), "cublasCreate");
    check_cublas(blas_, blas_.set_stream(handle_, stream_), "cublasSetStream");
    check_cublas(blas_, blas_.set_math_mode(handle_, CUBLAS_DEFAULT_MATH), "cublasSetMathMode");
    if (const CublasLtApi* lt = load_cublaslt(nullptr)) {
      try {
        lt_ = std::make_unique<LtBiasGemm>(*lt);
      } catch (const std::exception&) {
        lt_.reset();  // optional: gemm takes the cuBLAS route
      }
    }
    scratch_floats_ = int64_t(1) << 20;  // 4 MiB of partial sums, outside the caching allocator
    check_cuda(cudaMalloc(reinterpret_cast<void**>(&scratch_), size_t(scratch_floats_) * sizeof(float)),
               "cudaMalloc(reduction scratch)");
    check_cuda(cudaMalloc(reinterpret_cast<void**>(&err_), 2 * sizeof(long long)), "cudaMalloc(error words)");
    check_cuda(cudaMalloc(reinterpret_cast<void**>(&flag_), sizeof(int)), "cudaMalloc(flag)");
    check_cuda(cudaMemsetAsync(err_, 0, 2 * sizeof(long long), stream_), "cudaMemsetAsync");
    check_cuda(cudaMallocHost(&pinned_, kPinnedBytes), "cudaMallocHost");
    check_cuda(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
    if (const char* t = std::getenv("VRAMLAB_CUDA_TUNING"); t && std::strcmp(t, "old") == 0)
      tuning_ = Tuning{false, false, true};
  } catch (...) {
    release();
    throw;
  }
}

CudaBackend::~CudaBackend() { release(); }

void CudaBackend::release() noexcept {
  // Never throws: errors while tearing down are dropped.
  if (stream_) (void)cudaStreamSynchronize(stream_);
  lt_.reset();
  if (handle_) (void)blas_.destroy(handle_);
  if (scratch_) (void)cudaFree(scratch_);
  if (err_) (void)cudaFree(err_);
  if (flag_) (void)cudaFree(flag_);
  if (pinned_) (void)cudaFreeHost(pinned_);
  if (stream_) (void)cudaStreamDestroy(stream_);
  handle_ = nullptr;
  scratch_ = nullptr;
  err_ = nullptr;
  flag_ = nullptr;
  pinned_ = nullptr;
  stream_ = nullptr;
  (void)cudaGetLastError();
}

void CudaBackend::use_device() const {
  int cur = -1;
  if (cudaGetDevice(&cur) != cudaSuccess || cur != ordinal_) check_cuda(cudaSetDevice(ordinal_), "cudaSetDevice");
}

void CudaBackend::attach_data(Storage& s) { s.data = reinterpret_cast<void*>(s.block.ptr); }

void CudaBackend::set_workspace_for_current_thread() {
  // The engine allocates the cuBLAS workspace itself (category workspace, per thread
  // role), so sim and CUDA read the same memory; cuBLAS is pointed at that block.
  void* ptr = nullptr;
  size_t size = 0;
  EngineContext* ctx = current_context_or_null();
  if (ctx && &ctx->backend() == this) {
    ctx->ensure_blas_workspace(false);  // present already on the op path; re-made after a clear
    if (const Storage* ws = ctx->blas_workspace()) {
      ptr = ws->data;
      size = ws->nbytes;
    }
  }
  if (ptr != ws_set_ || size != ws_size_) {
    check_cublas(blas_, blas_.set_workspace(handle_, ptr, size), "cublasSetWorkspace");
    ws_set_ = ptr;
    ws_size_ = size;
  }
}

void CudaBackend::pointwise(int kind, int op, const Tensor& out, std::initializer_list<const Tensor*> in, double s,
                            const char* what) {
  use_device();
  require_float(out, what);
  for (const Tensor* t : in) require_float(*t, what);
  PointwisePlan p = plan_pointwise(out, in, what);
  p.args.s = float(s);
  if (kind == 0)
    launch_unary(op, p.args, p.fast, num_sms_, stream_);
  else if (kind == 1)
    launch_binary(op, p.args, p.fast, num_sms_, stream_);
  else
    launch_ternary(op, p.args, p.fast, num_sms_, stream_);
}

void CudaBackend::copy_same_dtype(const Tensor& out, const Tensor& a) {
  if (out.numel() == 0) return;
  if (same_dense_layout(out, a) && out.sizes() == a.sizes()) {
    if (out.data_ptr() != a.data_ptr())
      check_cuda(cudaMemcpyAsync(out.data_ptr(), a.data_ptr(), out.nbytes(), cudaMemcpyDeviceToDevice, stream_),
                 "cudaMemcpyAsync");
    return;
  }
  PointwisePlan p = plan_pointwise(out, {&a}, "copy");
  launch_copy_bytes(p.args, int(out.element_size()), num_sms_, stream_);
}

void CudaBackend::fill(const Tensor& out, double v) {
  use_device();
  if (out.numel() == 0) return;
  uint64_t bits = value_bits(out.dtype(), v);
  if (bits == 0 && out.is_non_overlapping_and_dense()) {
    check_cuda(cudaMemsetAsync(out.data_ptr(), 0, out.nbytes(), stream_), "cudaMemsetAsync");
    return;
  }
  PointwisePlan p = plan_pointwise(out, {}, "fill");
  p.args.bits = bits;
  launch_fill(p.args, int(out.element_size()), num_sms_, stream_);
}

void CudaBackend::random_normal(const Tensor& out, double mean, double std, uint64_t seed) {
  use_device();
  PointwisePlan p = plan_pointwise(out, {}, "normal_");
  p.args.r0 = mean;
  p.args.r1 = std;
  p.args.seed = seed;
  launch_random(0, p.args, num_sms_, stream_);
}

void CudaBackend::random_uniform(const Tensor& out, double lo, double hi, uint64_t seed) {
  use_device();
  PointwisePlan p = plan_pointwise(out, {}, "uniform_");
  p.args.r0 = lo;
  p.args.r1 = hi;
  p.args.seed = seed;
  launch_random(1, p.args, num_sms_, stream_);
}

void CudaBackend::unary(UnaryOp op, const Tensor& out, const Tensor& a, double s) {
  if (op == UnaryOp::Copy) {
    use_device();
    if (out.dtype() == a.dtype()) {
      if (out.sizes() != a.sizes())
        throw std::invalid_argument("copy: input shape " + a.shape_string() + " differs from the output shape " +
                                    out.shape_string());
      copy_same_dtype(out, a);
      return;
    }
    require_castable(out, "copy");
    require_castable(a, "copy");
    PointwisePlan p = plan_pointwise(out, {&a}, "copy");
    launch_unary(int(op), p.args, p.fast, num_sms_, stream_);
    return;
  }
  pointwise(0, int(op), out, {&a}, s, unary_op_name(op));
}

void CudaBackend::binary(BinaryOp op, const Tensor& out, const Tensor& a, const Tensor& b, double s) {
  pointwise(1, int(op), out, {&a, &b}, s, binary_op_name(op));
}

void CudaBackend::ternary(TernaryOp op, const Tensor& out, const Tensor& a, const Tensor& b, const Tensor& c,
                          double s) {
  pointwise(2, int(op), out, {&a, &b, &c}, s, "ternary op");
}

void CudaBackend::sum_reduce(const Tensor& out, const Tensor& in) {
  use_device();
  require_float(out, "sum");
  require_float(in, "sum");
  if (out.numel() == 0) return;
  ReducePlan p = plan_sum_reduce(out, in, scratch_, scratch_floats_, num_sms_, tuning_.split_column_reduce);
  if (p.empty_reduction) return fill(out, 0.0);
  if (p.no_reduction) return unary(UnaryOp::Copy, out, in, 0.0);
  launch_sum_reduce(p.args, p.row, stream_);
}

void CudaBackend::gemm(const Tensor& out, const Tensor& a, const Tensor& b, const Tensor* bias, bool tf32) {
  use_device();
  if (a.dim() != 2 || b.dim() != 2 || out.dim() != 2) throw std::invalid_argument("gemm: operands must be 2-D");
  if (out.numel() == 0) return;
  if (a.size(1) == 0) {  // empty inner dimension: bias or zeros
    if (bias)
      unary(UnaryOp::Copy, out, *bias, 0.0);
    else
      fill(out, 0.0);
    return;
  }
  set_workspace_for_current_thread();
  // addmm with a 1-D bias: cuBLASLt's bias epilogue, as ATen runs nn.Linear.
  if (bias && lt_ && tuning_.lt_bias_epilogue && lt_->run(out, a, b, *bias, tf32, ws_set_, ws_size_, stream_)) return;
  // Otherwise bias first, then C = A B + C: ATen's addmm path without cuBLASLt.
  if (bias) unary(UnaryOp::Copy, out, *bias, 0.0);
  gemm_ex(blas_, handle_, out, a, b, bias != nullptr, tf32);
}

void CudaBackend::log_softmax(const Tensor& out, const Tensor& in) {
  use_device();
  require_float(out, "log_softmax");
  require_float(in, "log_softmax");
  if (out.sizes() != in.sizes()) throw std::invalid_argument("log_softmax: output and input shapes differ");
  launch_log_softmax(mat(out, "log_softmax"), mat(in, "log_softmax"), stream_);
}

void CudaBackend::log_softmax_backward(const Tensor& out, const Tensor& grad, const Tensor& result) {
  use_device();
  require_float(out, "log_softmax_backward");
  require_float(grad, "log_softmax_backward");
  require_float(result, "log_softmax_backward");
  if (out.sizes() != result.sizes() || grad.sizes() != result.sizes())
    throw std::invalid_argument("log_softmax_backward: shapes differ");
  launch_log_softmax_backward(mat(out, "log_softmax_backward"), mat(grad, "log_softmax_backward"),
                              mat(result, "log_softmax_backward"), stream_);
}

void CudaBackend::nll_loss(const Tensor& out, const Tensor& total_weight, const Tensor& logp, const Tensor& target,
                           bool mean) {
  use_device();
  require_float(logp, "nll_loss");
  require_float(out, "nll_loss");
  if (total_weight.dtype() != out.dtype()) throw std::invalid_argument("nll_loss: total_weight must have out's dtype");
  if (target.dtype() != DType::Int64 || target.dim() != 1 || target.size(0) != logp.size(0))
    throw std::invalid_argument("nll_loss: target must be a 1-D int64 tensor with one class per row");
  launch_nll_loss(out.data_ptr(), total_weight.data_ptr(), int32_t(out.dtype()), mat(logp, "nll_loss"),
                  target.data_ptr(), target.strides()[0], mean, err_, stream_);
}

void CudaBackend::nll_loss_backward(const Tensor& gi, const Tensor& grad, const Tensor& target,
                                    const Tensor& total_weight, bool mean) {
  use_device();
  require_float(gi, "nll_loss_backward");
  require_float(grad, "nll_loss_backward");
  if (total_weight.dtype() != grad.dtype())
    throw std::invalid_argument("nll_loss_backward: total_weight must have grad's dtype");
  if (target.dtype() != DType::Int64 || target.dim() != 1 || target.size(0) != gi.size(0))
    throw std::invalid_argument("nll_loss_backward: target must be a 1-D int64 tensor with one class per row");
  launch_nll_loss_backward(mat(gi, "nll_loss_backward"), grad.data_ptr(), total_weight.data_ptr(),
                           int32_t(grad.dtype()), target.data_ptr(), target.strides()[0], mean, err_, stream_);
}

void CudaBackend::check_device_errors() {
  // Caller copied the error words to pinned_+16 and synchronised.
  long long words[2];
  std::memcpy(words, static_cast<uint8_t*>(pinned_) + 16, sizeof(words));
  if (words[0] != 0) {
    check_cuda(cudaMemsetAsync(err_, 0, 2 * sizeof(long long), stream_), "cudaMemsetAsync");
    throw std::out_of_range("Target " + std::to_string(words[1]) + " is out of bounds.");
  }
}

double CudaBackend::item(const Tensor& t) {
  use_device();
  if (t.numel() < 1) throw std::invalid_argument("item(): the tensor has no elements");
  if (!t.has_data()) throw std::logic_error("item(): tensor without device memory");
  uint8_t* host = static_cast<uint8_t*>(pinned_);
  check_cuda(cudaMemcpyAsync(host, t.data_ptr(), t.element_size(), cudaMemcpyDeviceToHost, stream_), "cudaMemcpyAsync");
  check_cuda(cudaMemcpyAsync(host + 16, err_, 2 * sizeof(long long), cudaMemcpyDeviceToHost, stream_),
             "cudaMemcpyAsync");
  check_cuda(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
  check_device_errors();
  return host_value(host, t.dtype());
}

bool CudaBackend::all_finite(const Tensor& t) {
  use_device();
  uint8_t* host = static_cast<uint8_t*>(pinned_);
  bool scan = float_type(t.dtype()) && t.numel() > 0;
  if (scan) {
    check_cuda(cudaMemsetAsync(flag_, 0, sizeof(int), stream_), "cudaMemsetAsync");
    PointwisePlan p = plan_pointwise(t, {}, "all_finite");
    launch_nonfinite_check(p.args, flag_, num_sms_, stream_);
    check_cuda(cudaMemcpyAsync(host + 32, flag_, sizeof(int), cudaMemcpyDeviceToHost, stream_), "cudaMemcpyAsync");
  }
  check_cuda(cudaMemcpyAsync(host + 16, err_, 2 * sizeof(long long), cudaMemcpyDeviceToHost, stream_),
             "cudaMemcpyAsync");
  check_cuda(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
  check_device_errors();
  if (!scan) return true;
  int flag;
  std::memcpy(&flag, host + 32, sizeof(int));
  return flag == 0;
}

void CudaBackend::synchronize() {
  use_device();
  check_cuda(cudaMemcpyAsync(static_cast<uint8_t*>(pinned_) + 16, err_, 2 * sizeof(long long), cudaMemcpyDeviceToHost,
                             stream_),
             "cudaMemcpyAsync");
  check_cuda(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
  check_device_errors();
}

void CudaBackend::adam_foreach(const AdamForeachArgs& a) {
  if (!tuning_.fused_adam) return Backend::adam_foreach(a);
  const size_t n = a.params.size();
  if (a.grads.size() != n || a.exp_avgs.size() != n || a.exp_avg_sqs.size() != n || a.denoms.size() != n ||
      a.bias_correction2_sqrt.size() != n || a.step_size.size() != n)
    throw std::invalid_argument("adam_foreach: the tensor and scalar lists differ in length");
  use_device();
  auto fusable = [&](size_t i) {
    const Tensor* ts[4] = {&a.params[i], &a.grads[i], &a.exp_avgs[i], &a.exp_avg_sqs[i]};
    for (const Tensor* t : ts) {
      if (t->dtype() != DType::Float32 || !t->is_contiguous() || !t->has_data() || t->sizes() != a.params[i].sizes() ||
          reinterpret_cast<uintptr_t>(t->data_ptr()) % 16 != 0)
        return false;
    }
    return true;
  };
  AdamBatchArgs batch;
  batch.one_minus_beta1 = float(1 - a.beta1);
  batch.beta2 = float(a.beta2);
  batch.one_minus_beta2 = float(1 - a.beta2);
  batch.eps = float(a.eps);
  batch.param_scale = float(a.param_scale);  // in float, as the MulScalar kernel multiplies
  AdamForeachArgs rest;                      // tensors the kernel does not take: the per-tensor ops
  rest.beta1 = a.beta1;
  rest.beta2 = a.beta2;
  rest.eps = a.eps;
  rest.param_scale = a.param_scale;
  for (size_t i = 0; i < n; ++i) {
    if (a.params[i].numel() == 0) continue;
    if (!fusable(i)) {
      rest.params.push_back(a.params[i]);
      rest.grads.push_back(a.grads[i]);
      rest.exp_avgs.push_back(a.exp_avgs[i]);
      rest.exp_avg_sqs.push_back(a.exp_avg_sqs[i]);
      rest.denoms.push_back(a.denoms[i]);
      rest.bias_correction2_sqrt.push_back(a.bias_correction2_sqrt[i]);
      rest.step_size.push_back(a.step_size[i]);
      continue;
    }
    AdamTensorArgs& t = batch.t[batch.n];
    t.param = static_cast<float*>(a.params[i].data_ptr());
    t.grad = static_cast<const float*>(a.grads[i].data_ptr());
    t.exp_avg = static_cast<float*>(a.exp_avgs[i].data_ptr());
    t.exp_avg_sq = static_cast<float*>(a.exp_avg_sqs[i].data_ptr());
    t.numel = a.params[i].numel();
    t.bias_correction2_sqrt = float(a.bias_correction2_sqrt[i]);
    t.step_size = float(a.step_size[i]);
    batch.block_start[batch.n + 1] = batch.block_start[batch.n] + (t.numel + kAdamChunk - 1) / kAdamChunk;
    if (++batch.n == kAdamMaxTensors) {
      launch_adam_batch(batch, stream_);
      batch.n = 0;
    }
  }
  launch_adam_batch(batch, stream_);
  // The denominators of fused tensors stay in registers: their (allocated) buffers are
  // not written, as nothing reads them before they are freed.
  if (!rest.params.empty()) Backend::adam_foreach(rest);
}

void CudaBackend::copy_from_host(const Tensor& dst, const void* src, size_t bytes) {
  use_device();
  if (!dst.is_non_overlapping_and_dense() || bytes != dst.nbytes())
    throw std::invalid_argument("copy_from_host: needs a dense tensor and exactly its byte size");
  if (bytes == 0) return;
  check_cuda(cudaMemcpyAsync(dst.data_ptr(), src, bytes, cudaMemcpyHostToDevice, stream_), "cudaMemcpyAsync");
  check_cuda(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
}

void CudaBackend::copy_to_host(void* dst, const Tensor& src, size_t bytes) {
  use_device();
  if (!src.is_non_overlapping_and_dense() || bytes != src.nbytes())
    throw std::invalid_argument("copy_to_host: needs a dense tensor and exactly its byte size");
  if (bytes == 0) return;
  check_cuda(cudaMemcpyAsync(dst, src.data_ptr(), bytes, cudaMemcpyDeviceToHost, stream_), "cudaMemcpyAsync");
  check_cuda(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
}

std::shared_ptr<Backend> make_cuda_backend_for(int ordinal, std::string* why) {
  auto fail = [&](const std::string& m) -> std::shared_ptr<Backend> {
    if (why) *why = m;
    return nullptr;
  };
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    return fail(std::string("no usable CUDA GPU: ") + cudaGetErrorString(e));
  }
  if (count == 0) return fail("no CUDA GPU found");
  if (ordinal < 0 || ordinal >= count)
    return fail("no CUDA device cuda:" + std::to_string(ordinal) + " (" + std::to_string(count) + " found)");
  std::string blas_why;
  const CublasApi* blas = load_cublas(&blas_why);
  if (!blas) return fail(blas_why);
  try {
    return std::make_shared<CudaBackend>(ordinal, *blas);
  } catch (const std::exception& ex) {
    return fail(std::string("CUDA backend failed to start: ") + ex.what());
  }
}

}  // namespace cuda

std::shared_ptr<Backend> make_cuda_backend(std::string* why) {
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess) {
    (void)cudaGetLastError();
    dev = 0;
  }
  return cuda::make_cuda_backend_for(dev, why);
}

}  // namespace vramlab::engine
#endif  // VRAMLAB_HAVE_CUDA
