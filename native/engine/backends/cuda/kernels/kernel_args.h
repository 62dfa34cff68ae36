#pragma once
// Plain structs passed by value to the kernels (shared by the host side, compiled by
// g++, and the .cu files). Dims are coalesced on the host before they get here.
#include <cstdint>

namespace vramlab::engine::cuda {

constexpr int kMaxDims = 8;

// Element type codes: the values of engine::DType.
enum DtCode : int32_t { kF32 = 0, kF16 = 1, kBF16 = 2, kF64 = 3, kI64 = 4 };

// Unsigned division by a fixed divisor with one multiply-high (n < 2^31).
struct FastDiv {
  uint32_t d = 1, m = 0, shift = 0;
};
FastDiv make_fastdiv(uint32_t d);

struct Operand {
  void* ptr = nullptr;
  int32_t dtype = kF32;
  int32_t mode = 0;                // fast path: 0 contiguous, 1 broadcast scalar (all strides 0)
  int64_t strides[kMaxDims] = {};  // in elements, per (coalesced) dim
};

// One pointwise kernel: out[i] = f(in0[i], in1[i], in2[i], s).
struct PointwiseArgs {
  int32_t ndim = 0;
  int32_t nin = 0;
  int64_t numel = 0;
  int64_t sizes[kMaxDims] = {};
  FastDiv div[kMaxDims];  // for sizes (32-bit index path)
  Operand out;
  Operand in[3];
  float s = 0;
  double r0 = 0, r1 = 0;  // random: (mean, std) or [lo, hi)
  uint64_t seed = 0;      // random
  uint64_t bits = 0;      // fill: the value's bit pattern in out's dtype
};

// sum over the reduced dims: out[o] = sum_r in[o, r].
struct ReduceArgs {
  const void* in = nullptr;
  int32_t in_dtype = kF32;
  void* out = nullptr;
  int32_t out_dtype = kF32;
  int64_t num_out = 0, num_red = 0;
  int32_t out_ndim = 0, red_ndim = 0;
  int64_t out_sizes[kMaxDims] = {}, out_in_strides[kMaxDims] = {}, out_out_strides[kMaxDims] = {};
  int64_t red_sizes[kMaxDims] = {}, red_strides[kMaxDims] = {};
  float* partial = nullptr;  // [chunks][num_out] when chunks > 1
  int64_t chunks = 1, chunk_len = 0;
};

// A 2-D view for the row kernels (log_softmax, nll).
struct Mat2 {
  void* ptr = nullptr;
  int32_t dtype = kF32;
  int64_t rows = 0, cols = 0, s0 = 0, s1 = 0;
};

// One launch of the multi-tensor Adam kernel: up to kAdamMaxTensors float32 tensors,
// passed by value (about 2 KB, inside the 4 KB kernel-parameter limit) so no metadata
// needs device memory or a host-to-device copy. Block b works on tensor t where
// block_start[t] <= b < block_start[t + 1], elements [(b - block_start[t]) * kAdamChunk, ...).
constexpr int kAdamMaxTensors = 32;
constexpr int64_t kAdamChunk = 4096;
struct AdamTensorArgs {
  float* param = nullptr;
  const float* grad = nullptr;
  float* exp_avg = nullptr;
  float* exp_avg_sq = nullptr;
  int64_t numel = 0;
  float bias_correction2_sqrt = 1;
  float step_size = 0;  // -lr / bias_correction1
};
struct AdamBatchArgs {
  int32_t n = 0;
  float one_minus_beta1 = 0, beta2 = 0, one_minus_beta2 = 0, eps = 0;
  float param_scale = 1;  // AdamW's decay, applied to the param first (1: none)
  AdamTensorArgs t[kAdamMaxTensors];
  int64_t block_start[kAdamMaxTensors + 1] = {};
};

// A 4-D strided view (attention's (B, H, S, D) tensors; the last stride is 1).
struct View4 {
  void* ptr = nullptr;
  int32_t dtype = kF32;
  int64_t size[4] = {}, stride[4] = {};
};

// A 1-D vector of `dtype` (layer norm's weight and bias), null when absent.
struct Vec {
  const void* ptr = nullptr;
  int32_t dtype = kF32;
};

}  // namespace vramlab::engine::cuda
