#pragma once
// Host entry points of the kernels (defined in the .cu files). Each enqueues on
// `stream` and throws std::runtime_error with the CUDA error string on failure.
#include <cuda_runtime_api.h>

#include "engine/backends/cuda/kernels/kernel_args.h"

namespace vramlab::engine::cuda {

// op: engine UnaryOp / BinaryOp / TernaryOp value. `fast`: every operand is contiguous
// or a broadcast scalar over one dim, f32/f16/bf16, 16-byte aligned (vectorized path).
void launch_unary(int op, const PointwiseArgs& a, bool fast, int num_sms, cudaStream_t stream);
void launch_binary(int op, const PointwiseArgs& a, bool fast, int num_sms, cudaStream_t stream);
void launch_ternary(int op, const PointwiseArgs& a, bool fast, int num_sms, cudaStream_t stream);
// Same-dtype copy of `elem_size`-byte elements over strided views.
void launch_copy_bytes(const PointwiseArgs& a, int elem_size, int num_sms, cudaStream_t stream);
void launch_fill(const PointwiseArgs& a, int elem_size, int num_sms, cudaStream_t stream);
// kind 0 normal(mean=r0, std=r1), 1 uniform[r0, r1).
void launch_random(int kind, const PointwiseArgs& a, int num_sms, cudaStream_t stream);

// `row`: reduced elements of one output are contiguous (or there is one output).
void launch_sum_reduce(const ReduceArgs& a, bool row, cudaStream_t stream);

void launch_log_softmax(const Mat2& out, const Mat2& in, cudaStream_t stream);
void launch_log_softmax_backward(const Mat2& out, const Mat2& grad, const Mat2& result, cudaStream_t stream);
// err: device int64[2] = {flag, offending class}; set when a target is out of range.
void launch_nll_loss(void* out, void* total_weight, int32_t dtype, const Mat2& logp, const void* target,
                     int64_t target_stride, bool mean, long long* err, cudaStream_t stream);
void launch_nll_loss_backward(const Mat2& grad_input, const void* grad, const void* total_weight, int32_t dtype,
                              const void* target, int64_t target_stride, bool mean, long long* err,
                              cudaStream_t stream);
// flag (device int) is set to 1 when any element is inf or nan.
void launch_nonfinite_check(const PointwiseArgs& a, int* flag, int num_sms, cudaStream_t stream);

// Fused Adam over a batch of contiguous, 16-byte aligned float32 tensors: the arithmetic
// of lerp_, mul_, addcmul_, sqrt, div_, add_, addcdiv_ in one pass (denominators stay in
// registers). Nothing is launched when the batch is empty.
void launch_adam_batch(const AdamBatchArgs& a, cudaStream_t stream);

// Transformer kernels (transformer.cu), written to be read rather than to be fast: one
// warp per row, float accumulation, no scratch memory (every buffer is the engine's).
void launch_index_select_rows(const Mat2& out, const Mat2& weight, const long long* idx, cudaStream_t stream);
void launch_index_add_rows(const Mat2& grad_weight, const Mat2& grad, const long long* idx, cudaStream_t stream);
void launch_layer_norm(const Mat2& y, float* mean, float* rstd, const Mat2& x, Vec w, Vec b, float eps,
                       cudaStream_t stream);
// Any of dx, dw, db may have a null pointer (not wanted). `scratch`: the backend's private
// reduction buffer (scratch_floats floats), for the one-pass kernel's per-block sums.
void launch_layer_norm_backward(const Mat2& dx, Vec dw, Vec db, const Mat2& dy, const Mat2& x, const float* mean,
                                const float* rstd, Vec w, float* scratch, int64_t scratch_floats, cudaStream_t stream);
void launch_attention(const View4& out, const View4& lse, const View4& q, const View4& k, const View4& v, bool causal,
                      float scale, cudaStream_t stream);
// dq_accum (float, q's shape) and row_sums (float, (B, Hq, Sq)): the engine's scratch for
// the backward (Backend::AttentionScratch); a null ptr when there is none.
void launch_attention_backward(const View4& dq, const View4& dk, const View4& dv, const View4& dout, const View4& q,
                               const View4& k, const View4& v, const View4& out, const View4& lse,
                               const View4& dq_accum, const View4& row_sums, bool causal, float scale,
                               cudaStream_t stream);
// The tiled (FlashAttention-2 style) attention of attention_tiled.cu: tensor cores for
// bf16/fp16, register-blocked tiles for fp32. False, with nothing launched, for what it
// does not take (head dims other than 64 and 128, mixed dtypes, a strided head dim,
// unaligned rows); launch_attention and launch_attention_backward try it first.
bool launch_attention_tiled(const View4& out, const View4& lse, const View4& q, const View4& k, const View4& v,
                            bool causal, float scale, cudaStream_t stream);
bool launch_attention_backward_tiled(const View4& dq, const View4& dk, const View4& dv, const View4& dout,
                                     const View4& q, const View4& k, const View4& v, const View4& out, const View4& lse,
                                     bool causal, float scale, cudaStream_t stream);
// FlashAttention-2 on tensor cores (attention_mma.cu): fp16/bf16, head dims 64 and 128,
// grouped-query attention (k, v with fewer heads). False, with nothing launched, for what
// it does not take; launch_attention* try it before the tiled kernels.
bool launch_attention_mma(const View4& out, const View4& lse, const View4& q, const View4& k, const View4& v,
                          bool causal, float scale, cudaStream_t stream);
bool launch_attention_backward_mma(const View4& dq, const View4& dk, const View4& dv, const View4& dout, const View4& q,
                                   const View4& k, const View4& v, const View4& out, const View4& lse, bool causal,
                                   float scale, cudaStream_t stream);
// One pass over the keys (attention_mma_bwd.cu): what launch_attention_backward_mma takes,
// with the scratch the engine allocated (dQ accumulated in float there, D = rowsum(dO * O)
// written to row_sums). False, with nothing launched, when either does not fit.
bool launch_attention_backward_fused(const View4& dq, const View4& dk, const View4& dv, const View4& dout,
                                     const View4& q, const View4& k, const View4& v, const View4& out, const View4& lse,
                                     const View4& dq_accum, const View4& row_sums, bool causal, float scale,
                                     cudaStream_t stream);
void launch_arange(void* out, int32_t dtype, int64_t n, double start, cudaStream_t stream);
// Row r of the tables starts at element r * ld; positions first, first + 1, ...
void launch_rope_tables(void* cos, void* sin, int32_t dtype, int64_t t, int64_t half, int64_t ld, int64_t first,
                        double theta, cudaStream_t stream);
void launch_argmax_rows(long long* out, const Mat2& in, cudaStream_t stream);

// What the Hugging Face models add (hf_ops.cu): dropout with counter-based masks (out
// contiguous; the counter is out's element offset), attention with dropout (one warp a
// row; grouped-query k/v), row softmax, top-k, and the MoE routing's index arithmetic.
void launch_dropout(const PointwiseArgs& a, unsigned char* mask, double p, uint64_t seed, int num_sms,
                    cudaStream_t stream);
void launch_dropout_backward(const PointwiseArgs& a, const unsigned char* mask, double scale, int num_sms,
                             cudaStream_t stream);
void launch_attention_dropout(const View4& out, const View4& lse, const View4& q, const View4& k, const View4& v,
                              bool causal, float scale, double p, uint64_t seed, cudaStream_t stream);
void launch_attention_dropout_backward(const View4& dq, const View4& dk, const View4& dv, const View4& dout,
                                       const View4& q, const View4& k, const View4& v, const View4& out,
                                       const View4& lse, bool causal, float scale, double p, uint64_t seed,
                                       cudaStream_t stream);
void launch_softmax(const Mat2& out, const Mat2& in, cudaStream_t stream);
void launch_softmax_backward(const Mat2& out, const Mat2& grad, const Mat2& y, cudaStream_t stream);
void launch_topk(const Mat2& values, long long* idx, int64_t idx_s0, const Mat2& in, int64_t k, cudaStream_t stream);
void launch_scatter_rows(const Mat2& out, const Mat2& src, const long long* idx, int64_t idx_s0, cudaStream_t stream);
void launch_sort_int64(long long* values, long long* perm, const long long* in, int64_t n, cudaStream_t stream);
void launch_index_div(long long* out, const long long* in, int64_t n, long long d, cudaStream_t stream);
void launch_invert_permutation(long long* out, const long long* perm, int64_t n, cudaStream_t stream);
void launch_group_offsets(int* counts, int* offsets, const long long* ids, int64_t n, int64_t experts,
                          cudaStream_t stream);

}  // namespace vramlab::engine::cuda
