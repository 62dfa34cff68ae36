#pragma once
// The ops of the mixture-of-experts routing (moe.cpp) with the memory PyTorch 2.11's CUDA
// kernels and autograd formulas give them: what each allocates, what its backward node
// saves, and what that backward allocates. On the data backends (cpu, cuda) each also
// computes its values through the backend's kernels, inside the buffers modelled.
#include <memory>

#include "engine/core/tensor.h"

namespace vramlab::engine::hf {

// torch.int32 / torch.bool tensors: the engine has neither dtype, the allocator sees bytes.
Tensor int32_tensor(const Shape& sizes, const char* op);

// softmax over the last dim (its node keeps the result).
Tensor softmax_last(const Tensor& x);
// topk over the last dim: values (differentiable) and int64 indices (kept by the node).
void topk_last(const Tensor& x, int64_t k, Tensor& values, Tensor& indices);
// torch.sort of a 1-D int64 tensor: sorted values and permutation (no gradient).
void sort_1d(const Tensor& x, Tensor& values, Tensor& indices);
// src[index] with a 1-D int64 index over dim 0 (IndexBackward0 keeps the index; its
// backward is index_put_ with accumulate, the CUDA sort-based kernel).
Tensor index_rows(const Tensor& src, const Tensor& index);
// masked_fill(mask, 0.0), out of place and in place (MaskedFillBackward0 keeps the mask).
Tensor masked_fill(const Tensor& x, const Tensor& mask);
void masked_fill_(Tensor& x, const Tensor& mask);
// torch._grouped_mm(a, b, offs) with a 2-D (tokens, K) and b 3-D (experts, K, N): the
// output rows padded to 16 bytes (TMA), the cutlass argument buffer on sm90/sm100 bf16.
Tensor grouped_mm(const Tensor& a, const Tensor& b, const Tensor& offs);

// torch.bmm(a, b) with no gradient (generation's batched_mm experts), under autocast.
Tensor bmm_no_grad(const Tensor& a, const Tensor& b);

}  // namespace vramlab::engine::hf
