#pragma once
// torch.autocast: lower-precision ops (linear, matmul, mm, addmm) cast their floating
// inputs to the autocast dtype; fp32 ops (sum, mean, losses, log_softmax) run in
// float32. Casts of fp32 leaf tensors that require grad (the weights) are cached
// per region and the cache is dropped when the outermost region exits.
//
// Cast order: PyTorch's wrapper calls `F(cached_cast(dtype, args)...)`, and GCC (which
// builds the Linux wheels) evaluates call arguments right to left, so an op's LAST
// tensor argument is cast first. That order fixes the sequence numbers of the casts'
// ToCopyBackward0 nodes, hence which cast's gradient the backward pass converts first
// (linear: the weight's before the bias's), which shows in peaks. Ops call
// autocast_lower on their arguments from last to first.
#include <memory>
#include <unordered_map>

#include "engine/core/tensor.h"

namespace vramlab::engine {

struct AutocastState {
  bool enabled = false;
  DType dtype = DType::Float16;
  bool cache_enabled = true;
  int nesting = 0;
  int excluded = 0;  // >0 inside an op autocast already handled
  std::unordered_map<TensorImpl*, std::pair<std::weak_ptr<TensorImpl>, Tensor>> cache;
};
AutocastState& autocast_state();

bool autocast_active();
Tensor cached_cast(DType to, const Tensor& t);
Tensor autocast_lower(const Tensor& t);  // to the autocast dtype when active
Tensor autocast_fp32(const Tensor& t);   // to float32 when active
void clear_autocast_cache();

class AutocastGuard {
 public:
  AutocastGuard(bool enabled, DType dtype, bool cache_enabled = true);
  ~AutocastGuard();
  AutocastGuard(const AutocastGuard&) = delete;
  AutocastGuard& operator=(const AutocastGuard&) = delete;

 private:
  bool saved_enabled_, saved_cache_;
  DType saved_dtype_;
};

// Inside an op whose inputs autocast already cast (PyTorch excludes the Autocast key).
class AutocastExcludeGuard {
 public:
  AutocastExcludeGuard() { ++autocast_state().excluded; }
  ~AutocastExcludeGuard() { --autocast_state().excluded; }
};

}  // namespace vramlab::engine
