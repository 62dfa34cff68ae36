#ifdef VRAMLAB_HAVE_CUDA
#include "engine/backends/cuda/reduce_plan.h"

#include <algorithm>
#include <stdexcept>
#include <vector>

namespace vramlab::engine::cuda {

namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Merges adjacent dims (outer first) when every stride list allows.
void coalesce(std::vector<int64_t>& sz, std::vector<std::vector<int64_t>*> strides) {
  std::vector<int64_t> nsz;
  std::vector<std::vector<int64_t>> nst(strides.size());
  for (size_t d = 0; d < sz.size(); ++d) {
    bool merge = !nsz.empty();
    for (size_t k = 0; k < strides.size() && merge; ++k)
      if (nst[k].back() != (*strides[k])[d] * sz[d]) merge = false;
    if (merge) {
      nsz.back() *= sz[d];
      for (size_t k = 0; k < strides.size(); ++k) nst[k].back() = (*strides[k])[d];
    } else {
      nsz.push_back(sz[d]);
      for (size_t k = 0; k < strides.size(); ++k) nst[k].push_back((*strides[k])[d]);
    }
  }
  sz = nsz;
  for (size_t k = 0; k < strides.size(); ++k) *strides[k] = nst[k];
}

}  // namespace

ReducePlan plan_sum_reduce(const Tensor& out, const Tensor& in, float* scratch, int64_t scratch_floats, int num_sms,
                           bool split_columns) {
  ReducePlan p;
  ReduceArgs& a = p.args;
  if (out.dim() != in.dim())
    throw std::invalid_argument("sum_reduce: output rank " + std::to_string(out.dim()) + " differs from input rank " +
                                std::to_string(in.dim()));
  std::vector<int64_t> ksz, kin, kout, rsz, rst;
  for (size_t d = 0; d < in.sizes().size(); ++d) {
    int64_t is = in.sizes()[d], os = out.sizes()[d];
    if (os == is) {
      if (is == 1) continue;
      ksz.push_back(is);
      kin.push_back(in.strides()[d]);
      kout.push_back(out.strides()[d]);
    } else if (os == 1) {
      if (is == 0) p.empty_reduction = true;
      rsz.push_back(is);
      rst.push_back(in.strides()[d]);
    } else {
      throw std::invalid_argument("sum_reduce: output shape " + out.shape_string() + " does not match input " +
                                  in.shape_string() + " with reduced dims of size 1");
    }
  }
  if (p.empty_reduction) return p;
  if (rsz.empty()) {
    p.no_reduction = true;
    return p;
  }
  coalesce(ksz, {&kin, &kout});
  coalesce(rsz, {&rst});
  if (ksz.size() > size_t(kMaxDims) || rsz.size() > size_t(kMaxDims))
    throw std::invalid_argument("sum_reduce: too many non-mergeable dims for the cuda backend");
  a.in = in.data_ptr();
  a.in_dtype = int32_t(in.dtype());
  a.out = out.data_ptr();
  a.out_dtype = int32_t(out.dtype());
  a.num_out = out.numel();
  a.num_red = 1;
  for (int64_t s : rsz) a.num_red *= s;
  a.out_ndim = int32_t(ksz.size());
  for (size_t d = 0; d < ksz.size(); ++d) {
    a.out_sizes[d] = ksz[d];
    a.out_in_strides[d] = kin[d];
    a.out_out_strides[d] = kout[d];
  }
  a.red_ndim = int32_t(rsz.size());
  for (size_t d = 0; d < rsz.size(); ++d) {
    a.red_sizes[d] = rsz[d];
    a.red_strides[d] = rst[d];
  }
  // Row kernel when each output's reduced run is contiguous (or there is one output),
  // column kernel when neighbouring outputs are neighbours in memory.
  bool red_inner_dense = rst.back() == 1;
  bool kept_inner_dense = !kin.empty() && kin.back() == 1;
  p.row = a.num_out == 1 || red_inner_dense || !kept_inner_dense;

  // Split long reductions over ~4 blocks per SM (8 for split columns), but only when
  // each chunk stays long enough (2048 elements per row chunk, 512 rows per column
  // chunk, 64 with split_columns) to be worth the second (finalize) launch.
  const int64_t target_blocks = int64_t(std::max(num_sms, 1)) * 4;
  int64_t chunks = 1;
  if (p.row) {
    if (a.num_out < target_blocks) chunks = std::min(ceil_div(target_blocks, a.num_out), ceil_div(a.num_red, 2048));
  } else {
    const int64_t col_target = split_columns ? 2 * target_blocks : target_blocks;
    const int64_t min_rows = split_columns ? 64 : 512;
    int64_t col_blocks = ceil_div(a.num_out, 32);
    if (col_blocks < col_target)
      chunks = std::min({ceil_div(col_target, col_blocks), ceil_div(a.num_red, min_rows), int64_t(65535)});
  }
  chunks = std::max<int64_t>(1, std::min(chunks, scratch_floats / std::max<int64_t>(a.num_out, 1)));
  a.chunks = chunks;
  a.chunk_len = ceil_div(a.num_red, chunks);
  a.chunks = ceil_div(a.num_red, a.chunk_len);  // no empty trailing chunk
  a.partial = scratch;
  return p;
}

}  // namespace vramlab::engine::cuda
#endif  // VRAMLAB_HAVE_CUDA
