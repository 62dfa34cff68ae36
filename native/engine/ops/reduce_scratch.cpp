#include "engine/ops/reduce_scratch.h"

#include <algorithm>
#include <cstdint>
#include <limits>

#include "engine/backends/backend.h"
#include "engine/core/context.h"

namespace vramlab::engine {

namespace {

constexpr int kWarpSize = 32;
constexpr int kMaxNumThreads = 512;  // mnt_wrapper<T>::MAX_NUM_THREADS (no complex<double> here)
constexpr int kInputVecSize = 4;     // ReduceConfig::input_vec_size
constexpr int kVt0 = 4;

int64_t div_up(int64_t a, int64_t b) { return (a + b - 1) / b; }

int last_pow2(int64_t n) {  // floor to a power of two, at least 1
  int64_t p = 1;
  while (p * 2 <= n) p *= 2;
  return int(std::max<int64_t>(p, 1));
}

// A reduction's TensorIterator after reorder_dimensions and coalesce_dimensions:
// dim 0 is the innermost, reduced dims (output stride 0) come first.
struct Iter {
  std::vector<int64_t> shape;
  std::vector<int64_t> out_stride, in_stride;  // bytes
  int64_t in_offset_elems = 0;
  int in_elem_size = 4;
  int num_reduce_dims() const {
    int n = 0;
    while (n < int(shape.size()) && out_stride[size_t(n)] == 0) ++n;
    return n;
  }
  int64_t numel() const {
    int64_t n = 1;
    for (int64_t s : shape) n *= s;
    return n;
  }
  int64_t num_outputs() const {
    int64_t n = 1;
    for (size_t d = size_t(num_reduce_dims()); d < shape.size(); ++d) n *= shape[d];
    return n;
  }
};

Iter make_iter(const Tensor& out, const Tensor& in) {
  // TensorIterator order: innermost dim first; drop size-1 dims (their order is moot).
  Iter it;
  it.in_elem_size = int(in.element_size());
  it.in_offset_elems = in.storage_offset();
  size_t osz = out.element_size(), isz = in.element_size();
  for (size_t k = in.sizes().size(); k-- > 0;) {
    if (in.sizes()[k] == 1) continue;
    bool reduced = out.sizes()[k] == 1;
    it.shape.push_back(in.sizes()[k]);
    it.out_stride.push_back(reduced ? 0 : out.strides()[k] * int64_t(osz));
    it.in_stride.push_back(in.strides()[k] * int64_t(isz));
  }
  // reorder_dimensions: insertion sort with TensorIterator's should_swap (output first).
  size_t n = it.shape.size();
  std::vector<size_t> perm(n);
  for (size_t i = 0; i < n; ++i) perm[i] = i;
  auto should_swap = [&](size_t d0, size_t d1) {
    const std::vector<int64_t>* ops[2] = {&it.out_stride, &it.in_stride};
    for (int a = 0; a < 2; ++a) {
      int64_t s0 = (*ops[a])[d0], s1 = (*ops[a])[d1];
      if (a == 0 && ((s0 == 0) != (s1 == 0))) return s1 == 0 ? 1 : -1;  // reduced dims to the front
      if (s0 == 0 || s1 == 0) continue;
      if (s0 < s1) return -1;
      if (s0 > s1) return 1;
      if (it.shape[d0] > it.shape[d1]) return 1;
    }
    return 0;
  };
  for (size_t i = 1; i < n; ++i) {
    size_t dim1 = i;
    for (size_t dim0 = i; dim0-- > 0;) {
      int c = should_swap(perm[dim0], perm[dim1]);
      if (c > 0) {
        std::swap(perm[dim0], perm[dim1]);
        dim1 = dim0;
      } else if (c < 0) {
        break;
      }
    }
  }
  Iter s = it;
  for (size_t i = 0; i < n; ++i) {
    s.shape[i] = it.shape[perm[i]];
    s.out_stride[i] = it.out_stride[perm[i]];
    s.in_stride[i] = it.in_stride[perm[i]];
  }
  // coalesce_dimensions
  if (s.shape.size() > 1) {
    Iter c = s;
    size_t prev = 0;
    for (size_t d = 1; d < s.shape.size(); ++d) {
      int64_t sh0 = c.shape[prev], sh1 = s.shape[d];
      bool can = sh0 == 1 || sh1 == 1 ||
                 (sh0 * c.out_stride[prev] == s.out_stride[d] && sh0 * c.in_stride[prev] == s.in_stride[d]);
      if (can) {
        if (sh0 == 1) {
          c.out_stride[prev] = s.out_stride[d];
          c.in_stride[prev] = s.in_stride[d];
        }
        c.shape[prev] *= sh1;
      } else {
        ++prev;
        c.shape[prev] = s.shape[d];
        c.out_stride[prev] = s.out_stride[d];
        c.in_stride[prev] = s.in_stride[d];
      }
    }
    c.shape.resize(prev + 1);
    c.out_stride.resize(prev + 1);
    c.in_stride.resize(prev + 1);
    s = c;
  }
  return s;
}

bool can_use_32bit_indexing(const Iter& it) {
  const int64_t max_value = std::numeric_limits<int32_t>::max();
  if (it.numel() > max_value) return false;
  for (const auto* st : {&it.out_stride, &it.in_stride}) {
    int64_t max_offset = 1;
    for (size_t d = 0; d < it.shape.size(); ++d) max_offset += (it.shape[d] - 1) * (*st)[d];
    if (max_offset > max_value) return false;
  }
  return true;
}

// get_output_vec_size<scalar_t>
int output_vec_size(const Iter& it) {
  int vec = 4;
  auto update = [&vec](int64_t v) {
    while (vec > 1 && v % vec != 0) vec /= 2;
  };
  update(it.in_offset_elems);  // base address in elements (storage bases are 512-byte aligned)
  int output_index = it.num_reduce_dims();
  update(it.shape[size_t(output_index)]);
  for (size_t j = 0; j < it.in_stride.size(); ++j)
    if (int(j) != output_index) update(it.in_stride[j] / it.in_elem_size);
  return vec;
}

// setReduceConfig + ReduceConfig::global_memory_size / semaphore_size.
ReduceLaunch launch_of(const Iter& it, int acc_size, const ReduceDevice& dev) {
  int64_t num_outputs = it.num_outputs();
  int64_t inputs_per_output = it.numel() / std::max<int64_t>(num_outputs, 1);
  int nrd = it.num_reduce_dims();
  int64_t dim0, dim1, fastest;
  bool on_fastest;
  if (!it.shape.empty()) {
    on_fastest = nrd == int(it.shape.size()) || it.in_stride[0] < it.in_stride[size_t(nrd)];
    if (on_fastest) {
      dim0 = inputs_per_output;
      dim1 = num_outputs;
      fastest = it.in_stride[0];
    } else {
      dim0 = num_outputs;
      dim1 = inputs_per_output;
      fastest = it.in_stride[size_t(nrd)];
    }
  } else {
    on_fastest = true;
    fastest = it.in_elem_size;
    dim0 = dim1 = 1;
  }
  int out_vec = 1;
  if (fastest == it.in_elem_size) {
    if (on_fastest && dim0 > 128 && nrd == 1 && kVt0 >= kInputVecSize) {
      dim0 /= kInputVecSize;  // vectorize along input
    } else if (!on_fastest) {
      out_vec = output_vec_size(it);
      dim0 /= out_vec;
    }
  }
  // set_block_dimension
  int max_threads = kMaxNumThreads / out_vec;
  int dim0_pow2 = dim0 < max_threads ? last_pow2(dim0) : max_threads;
  int dim1_pow2 = dim1 < max_threads ? last_pow2(dim1) : max_threads;
  int block_width = std::min(dim0_pow2, kWarpSize);
  int block_height = std::min(dim1_pow2, max_threads / block_width);
  block_width = std::min(dim0_pow2, max_threads / block_height);
  int num_threads = block_width * block_height;

  int64_t step_input = 1, step_output = 1;
  bool block_x_reduce = false, global_reduce = false;
  if (it.shape.empty() || on_fastest) {
    block_x_reduce = true;
    step_input *= block_width;
  } else {
    step_output *= block_width;
  }
  auto values_per_thread = [&] { return div_up(inputs_per_output, step_input); };
  constexpr int min_vpt = 16, max_vpt = 256;
  bool block_y_reduce = false;
  if (values_per_thread() >= int64_t(block_height) * 16 || values_per_thread() >= max_vpt) {
    block_y_reduce = true;
    step_input *= block_height;
  } else {
    step_output *= block_height;
  }
  int blocks_per_sm = dev.max_threads_per_sm / num_threads;
  int64_t target_grid = int64_t(dev.sm_count) * blocks_per_sm;
  int64_t grid_x = div_up(num_outputs / out_vec, step_output);
  int64_t ctas = 1;
  if (block_y_reduce && values_per_thread() >= max_vpt && grid_x <= target_grid) {
    int64_t c1 = div_up(target_grid, grid_x), c2 = div_up(values_per_thread(), min_vpt),
            c3 = div_up(values_per_thread(), max_vpt);
    ctas = std::max(std::min(c1, c2), c3);
    if (ctas > 1) global_reduce = true;
  }
  ReduceLaunch l;
  if (global_reduce) {
    l.buffer_bytes = int64_t(acc_size) * num_outputs * ctas;
    if (!block_x_reduce) l.buffer_bytes *= int64_t(block_width) * out_vec;
    l.semaphore_bytes = int64_t(sizeof(int)) * grid_x;
  }
  return l;
}

// TensorIteratorBase::split at the dim with the largest extent (get_dim_to_split), in halves.
void split_launches(const Iter& it, int acc_size, const ReduceDevice& dev, std::vector<ReduceLaunch>& out) {
  if (can_use_32bit_indexing(it)) {
    out.push_back(launch_of(it, acc_size, dev));
    return;
  }
  size_t dim = 0;
  int64_t max_extent = -1;
  for (size_t d = 0; d < it.shape.size(); ++d) {
    if (it.shape[d] == 1) continue;
    for (const auto* st : {&it.out_stride, &it.in_stride}) {
      int64_t extent = (it.shape[d] - 1) * (*st)[d];
      if (extent > max_extent) {
        max_extent = extent;
        dim = d;
      }
    }
  }
  if (max_extent <= 0) {  // nothing left to split
    out.push_back(launch_of(it, acc_size, dev));
    return;
  }
  Iter a = it, b = it;
  int64_t copy = it.shape[dim] / 2;
  a.shape[dim] = copy;
  b.shape[dim] = it.shape[dim] - copy;
  b.in_offset_elems += copy * it.in_stride[dim] / it.in_elem_size;
  split_launches(a, acc_size, dev, out);
  split_launches(b, acc_size, dev, out);
}

}  // namespace

ReducePlanModel model_cuda_reduction(const Tensor& out, const Tensor& in, int acc_size, const ReduceDevice& dev) {
  ReducePlanModel m;
  if (in.numel() == 0) return m;
  Iter it = make_iter(out, in);
  if (!can_use_32bit_indexing(it)) {
    // AccumulationBuffer when the output can't accumulate in place (half/bfloat16 in and out).
    bool low_in_out = (in.dtype() == DType::Float16 && out.dtype() == DType::Float16) ||
                      (in.dtype() == DType::BFloat16 && out.dtype() == DType::BFloat16);
    if (low_in_out) {
      int64_t osz = int64_t(out.element_size()), mem = osz;
      for (size_t d = 0; d < it.shape.size(); ++d) mem = std::max(mem, it.shape[d] * it.out_stride[d]);
      m.accumulation_bytes = mem / osz * acc_size;
    }
  }
  split_launches(it, acc_size, dev, m.launches);
  return m;
}

ReduceScratchScope::ReduceScratchScope(const Tensor& out, const Tensor& in) {
  auto& ctx = current_context();
  if (!ctx.backend().models_cuda()) return;
  int acc = in.dtype() == DType::Float64 || in.dtype() == DType::Int64 ? 8 : 4;  // opmath / accumulate type
  ReduceDevice dev{ctx.sm_count(), ctx.max_threads_per_sm()};
  ReducePlanModel m = model_cuda_reduction(out, in, acc, dev);
  if (m.accumulation_bytes > 0)
    accumulation_ = ctx.allocate_storage(size_t(m.accumulation_bytes), current_tag("reduce_accumulation_buffer"));
  for (const auto& l : m.launches) {
    if (l.buffer_bytes == 0) continue;
    // buffer, then semaphores; freed in reverse when gpu_reduce_kernel returns.
    auto buffer = ctx.allocate_storage(size_t(l.buffer_bytes), current_tag("reduce_buffer"));
    auto semaphores = ctx.allocate_storage(size_t(l.semaphore_bytes), current_tag("reduce_semaphores"));
    semaphores.reset();
    buffer.reset();
  }
}

ReduceScratchScope::~ReduceScratchScope() = default;

}  // namespace vramlab::engine
