#pragma once
// Plans a sum_reduce: kept and reduced dims (each coalesced), the row/column kernel
// choice and how the reduction is split across blocks.
#include "engine/backends/cuda/kernels/kernel_args.h"
#include "engine/core/tensor.h"

namespace vramlab::engine::cuda {

struct ReducePlan {
  ReduceArgs args;
  bool row = true;
  bool empty_reduction = false;  // some reduced dim has size 0: the result is zeros
  bool no_reduction = false;     // nothing is reduced: a copy
};

// scratch: floats for partial sums; num_sms sizes the split. split_columns: column
// reductions aim at 8 blocks per SM with chunks down to 64 rows (bias gradients of
// [batch, features] are short and wide: unsplit, 32 blocks each walk 512 rows), instead
// of 4 blocks per SM and 512-row chunks.
ReducePlan plan_sum_reduce(const Tensor& out, const Tensor& in, float* scratch, int64_t scratch_floats, int num_sms,
                           bool split_columns = true);

}  // namespace vramlab::engine::cuda
