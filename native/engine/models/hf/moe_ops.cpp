#include "engine/models/hf/moe_ops.h"

#include <algorithm>
#include <stdexcept>

#include "engine/autocast/autocast.h"
#include "engine/core/alloc_tag.h"
#include "engine/ops/common.h"
#include "engine/ops/cub_temp.h"

namespace vramlab::engine::hf {

namespace {

// A values-only copy on the data backends (no allocation, no autograd).
void copy_values(const Tensor& out, const Tensor& in) { be().unary(UnaryOp::Copy, out, in, 0); }

constexpr int64_t kSmallSort = 4096;  // should_use_small_sort: one slice sorted in place

// cuda::cub::get_num_bits: the key bits a radix sort over [0, max_key] needs.
int bits_for(uint64_t max_key) {
  int n = 1;
  while (max_key > 1) {
    max_key >>= 1;
    ++n;
  }
  return n;
}

// In-place ops under autograd replace the tensor's history (rebase_history).
void rebase(Tensor& a, const std::shared_ptr<Node>& n) {
  if (!n) return;
  if (a.impl()->is_view)
    throw std::runtime_error("in-place operations on views of tensors that require grad are not supported");
  a.impl()->grad_fn.reset();
  set_history(a, n);
}

struct SoftmaxBackward0 : Node {
  SavedVariable result_;
  std::string name() const override { return "SoftmaxBackward0"; }
  TensorList apply(TensorList& g) override {
    if (!g[0].defined()) return undefined_grads(1);
    Tensor y = result_.unpack(this);
    Tensor out = make_tensor(y.sizes(), y.dtype(), "_softmax_backward_data");
    if (out.has_data()) be().softmax_backward(out, g[0], y);
    return {out};
  }
  void release_variables() override { result_.reset_data(); }
};

// value_selecting_reduction_backward: zeros of the input's shape, the gradient scattered in.
struct TopkBackward0 : Node {
  SavedVariable indices_;
  Shape self_sizes;
  std::string name() const override { return "TopkBackward0"; }
  TensorList apply(TensorList& g) override {
    if (!g[0].defined()) return undefined_grads(1);
    Tensor indices = indices_.unpack(this);  // unpacked first, as the generated node does
    Tensor out = zeros(self_sizes, g[0].dtype());
    if (out.has_data()) be().scatter_rows(out, g[0], indices);
    return {out};
  }
  void release_variables() override { indices_.reset_data(); }
};

// index_put_(zeros, [index], grad, accumulate=True) on CUDA (index_put_with_sort_kernel):
// the linear index (remainder, then times the row stride), the sorted keys and their
// original positions, and CUB's radix sort of them over an arange.
void index_put_accumulate(const Tensor& self, const Tensor& index, const Tensor& values) {
  const int64_t n = index.numel();
  const int64_t slice = self.dim() > 1 ? self.numel() / self.size(0) : 1;
  Tensor linear;
  {
    Tensor wrapped = make_tensor({n}, DType::Int64, "remainder");
    linear = make_tensor({n}, DType::Int64, "mul");
  }
  Tensor src = values.is_contiguous() ? values : values.contiguous();
  if (n == 0 || slice == 0) return;
  // the sums themselves: rows of `self` (a 1-D self as one column)
  if (self.has_data()) be().index_add_rows(self.view({self.size(0), slice}), src.view({n, slice}), index.contiguous());
  Tensor sorted = make_tensor({n}, DType::Int64, "index_put_with_sort");
  Tensor orig = make_tensor({n}, DType::Int64, "index_put_with_sort");
  {
    Tensor range = arange(0, n);
    const int bits = bits_for(uint64_t(std::max<int64_t>(self.numel() - 1, 0) / slice));
    auto tmp = scratch(cub_radix_sort_pairs_bytes(n, 8, 8, bits), "cub::DeviceRadixSort");
  }
}

struct IndexBackward0 : Node {
  SavedVariable indices_;
  Shape self_sizes;
  std::string name() const override { return "IndexBackward0"; }
  TensorList apply(TensorList& g) override {
    if (!g[0].defined()) return undefined_grads(1);
    // index_backward: grad.new_zeros(self_sizes), then index_put_ with accumulate
    Tensor out = zeros(self_sizes, g[0].dtype());
    index_put_accumulate(out, indices_.unpack(this), g[0]);
    return {out};
  }
  void release_variables() override { indices_.reset_data(); }
};

struct MaskedFillBackward0 : Node {
  SavedVariable mask_;
  std::string name() const override { return "MaskedFillBackward0"; }
  TensorList apply(TensorList& g) override {
    if (!g[0].defined()) return undefined_grads(1);
    // grad.masked_fill(mask, 0): the routing's sentinel mask is all false (top-k expert
    // ids are < num_experts), so on the data backends the gradient passes unchanged
    Tensor out = make_tensor(g[0].sizes(), g[0].dtype(), "masked_fill");
    if (out.has_data()) copy_values(out, g[0]);
    return {out};
  }
  void release_variables() override { mask_.reset_data(); }
};

// The output create_grouped_gemm_output_tensor makes (last dim padded to 16 bytes), and
// on the cutlass path (bf16 on sm90/sm100) what bf16bf16_grouped_mm takes from the caching
// allocator for the kernel's length: the argument buffer (per group three pointers, the
// count rounded up to 2, the problem shape, 3 x int32, and three 8-byte strides), then
// cutlass's workspace.
Tensor grouped_mm_out(const Tensor& a, const Tensor& b, int64_t groups, const Tensor* offs = nullptr) {
  const bool a2 = a.dim() == 2, b2 = b.dim() == 2;
  Shape size;
  if (a2 && b2)
    size = {groups, a.size(0), b.size(1)};
  else if (a2)
    size = {a.size(0), b.size(-1)};
  else
    size = {a.size(1), b.size(1)};
  const int64_t align = 16 / int64_t(itemsize(a.dtype()));
  const int64_t padded = (size.back() + align - 1) / align * align;
  Shape strides = a2 != b2 ? Shape{padded, 1} : Shape{size[1] * padded, padded, 1};
  Tensor out = empty_strided(size, strides, a.dtype());
  const int cc = current_context().compute_capability();
  const bool fast = (cc == 90 || cc == 100) && a.dtype() == DType::BFloat16 && b.dtype() == DType::BFloat16;
  if (fast) {
    const int64_t aligned_groups = (groups + 1) / 2 * 2;
    auto args = scratch(size_t(aligned_groups * 3 * 8 + groups * 12 + 3 * groups * 8), "bf16bf16_grouped_mm");
    // Gemm::get_workspace_size: 512 bytes per SM for the persistent group tile scheduler
    // (67584 on a 132-SM H100, seen in the allocator's trace)
    auto workspace = scratch(size_t(current_context().sm_count()) * 512, "bf16bf16_grouped_mm");
    if (offs && out.has_data()) be().grouped_mm(out, a, b, *offs);  // while the kernel's buffers are held
    return out;
  }
  if (offs && out.has_data()) be().grouped_mm(out, a, b, *offs);
  return out;
}

struct GroupedMmBackward0 : Node {
  SavedVariable self_, mat2_, offs_;
  Shape self_sizes, self_strides, mat2_sizes, mat2_strides;
  int64_t groups = 0;
  std::string name() const override { return "GroupedMmBackward0"; }
  TensorList apply(TensorList& g) override {
    if (!g[0].defined()) return undefined_grads(2);
    const Tensor& grad = g[0];
    TensorList r(2);  // by argument name: mat2's gradient before self's
    if (should_compute_output(1)) {
      // _grouped_mm_mat2_backward: a column-major mat2 (a transposed weight) gets its
      // gradient column-major, so the weight's own gradient comes out contiguous
      Tensor mat1 = self_.unpack(this), offs = offs_.unpack(this);
      if (mat2_strides[1] == 1 && mat2_strides[2] == mat2_sizes[1]) {
        Tensor gt = grad.transpose(0, 1);
        r[1] = grouped_mm_out(gt, mat1, groups, &offs).transpose(1, 2);
      } else {
        r[1] = grouped_mm_out(mat1.transpose(0, 1), grad, groups, &offs);
      }
    }
    if (should_compute_output(0)) {
      Tensor mat2 = mat2_.unpack(this), offs = offs_.unpack(this);
      if (self_strides[0] == 1 && self_strides[1] == self_sizes[0]) {
        if (grad.has_data())
          throw std::invalid_argument("grouped_mm: a column-major input's gradient runs on the simulated devices only");
        r[0] = grouped_mm_out(mat2, grad.transpose(0, 1), groups).transpose(0, 1);
      } else {
        r[0] = grouped_mm_out(grad, mat2.transpose(1, 2), groups, &offs);
      }
    }
    return r;
  }
  void release_variables() override {  // the generated node's order: saved inputs by name
    mat2_.reset_data();
    offs_.reset_data();
    self_.reset_data();
  }
};

}  // namespace

Tensor int32_tensor(const Shape& sizes, const char* op) { return make_tensor(sizes, DType::Float32, op); }

Tensor softmax_last(const Tensor& x) {
  auto n = make_node<SoftmaxBackward0>({&x});
  Tensor out = make_tensor(x.sizes(), x.dtype(), "_softmax");
  if (out.has_data()) be().softmax(out, x);
  if (n) {
    with_history(out, n);
    n->result_ = SavedVariable(out, true);
  }
  return out;
}

void topk_last(const Tensor& x, int64_t k, Tensor& values, Tensor& indices) {
  auto n = make_node<TopkBackward0>({&x});
  Shape s = x.sizes();
  s.back() = k;
  // one block per row for short rows; k <= 4096 results are sorted in place
  values = make_tensor(s, x.dtype(), "topk");
  indices = make_tensor(s, DType::Int64, "topk");
  if (values.has_data()) be().topk_rows(values, indices, x, k);
  if (n) {
    n->self_sizes = x.sizes();
    with_history(values, n);
    n->indices_ = SavedVariable(indices, false);
  }
}

void sort_1d(const Tensor& x, Tensor& values, Tensor& indices) {
  const int64_t n = x.numel();
  values = make_tensor({n}, x.dtype(), "sort");
  indices = make_tensor({n}, DType::Int64, "sort");
  if (n > kSmallSort) {
    // segmented_sort_large_segments: an index array, then CUB's radix sort of the pairs
    auto initial = scratch(size_t(n) * 8, "sort");
    auto tmp = scratch(cub_radix_sort_pairs_bytes(n, 8, 8, 64), "cub::DeviceRadixSort");
    if (values.has_data()) be().sort_int64(values, indices, x.contiguous());
    return;
  }
  if (values.has_data()) be().sort_int64(values, indices, x.contiguous());
}

Tensor index_rows(const Tensor& src, const Tensor& index) {
  auto n = make_node<IndexBackward0>({&src});
  if (n) {
    n->indices_ = SavedVariable(index, false);
    n->self_sizes = src.sizes();
  }
  Shape s = src.sizes();
  s[0] = index.numel();
  Tensor out = make_tensor(s, src.dtype(), "index");
  if (out.has_data()) {
    const int64_t cols = src.dim() > 1 ? src.numel() / std::max<int64_t>(src.size(0), 1) : 1;
    be().index_select_rows(out.view({index.numel(), cols}), src.view({src.size(0), cols}), index);
  }
  return with_history(out, n);
}

Tensor masked_fill(const Tensor& x, const Tensor& mask) {
  auto n = make_node<MaskedFillBackward0>({&x});
  if (n) n->mask_ = SavedVariable(mask, false);
  Tensor out = make_tensor(x.sizes(), x.dtype(), "masked_fill");
  if (out.has_data()) copy_values(out, x);  // the sentinel mask is all false (see MaskedFillBackward0)
  return with_history(out, n);
}

void masked_fill_(Tensor& x, const Tensor& mask) {
  check_inplace(x);
  auto n = make_node<MaskedFillBackward0>({&x});
  if (n) n->mask_ = SavedVariable(mask, false);
  x.bump_version();
  rebase(x, n);
}

Tensor grouped_mm(const Tensor& a, const Tensor& b, const Tensor& offs) {
  if (a.dim() != 2 || b.dim() != 3 || a.size(1) != b.size(1))
    throw std::invalid_argument("grouped_mm: expected (tokens, K) and (groups, K, N)");
  auto n = make_node<GroupedMmBackward0>({&a, &b});
  if (n) {
    // each operand is kept only for the other's gradient (frozen experts keep no activations)
    if (n->should_compute_output(1)) n->self_ = SavedVariable(a, false);
    if (n->should_compute_output(0)) n->mat2_ = SavedVariable(b, false);
    n->offs_ = SavedVariable(offs, false);
    n->self_sizes = a.sizes();
    n->self_strides = a.strides();
    n->mat2_sizes = b.sizes();
    n->mat2_strides = b.strides();
    n->groups = offs.size(0);
  }
  Tensor out = grouped_mm_out(a, b, offs.size(0), &offs);
  return with_history(out, n);
}

Tensor bmm_no_grad(const Tensor& a_in, const Tensor& b_in) {
  if (GradMode::is_enabled() && (a_in.requires_grad() || b_in.requires_grad()))
    throw std::invalid_argument("hf: batched_mm experts are modelled for generation (no gradient) only");
  // autocast's lower-precision list: arguments cast last to first
  Tensor b = autocast_lower(b_in), a = autocast_lower(a_in);
  return make_tensor({a.size(0), a.size(1), b.size(2)}, a.dtype(), "bmm");
}

}  // namespace vramlab::engine::hf
