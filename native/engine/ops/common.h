#pragma once
// Internals shared by the op files.
#include "engine/autograd/node.h"
#include "engine/backends/backend.h"
#include "engine/core/alloc_tag.h"
#include "engine/core/context.h"
#include "engine/core/grad_mode.h"
#include "engine/ops/ops.h"

namespace vramlab::engine {

inline Backend& be() { return current_context().backend(); }

// Undefined-gradient-safe list of n undefined tensors.
inline TensorList undefined_grads(size_t n) { return TensorList(n); }

// The output of an op that recorded `node` (if any).
inline Tensor& with_history(Tensor& out, const std::shared_ptr<Node>& node) {
  if (node) set_history(out, node);
  return out;
}

// A byte buffer from the caching allocator for one kernel's duration (CUB's temp storage,
// grouped-GEMM arguments): exactly `bytes` requested, as ATen asks; none for 0.
inline std::shared_ptr<Storage> scratch(size_t bytes, const char* op) {
  if (bytes == 0) return nullptr;
  return current_context().allocate_storage(bytes, current_tag(op));
}

// A torch.bool tensor of `numel` elements. The engine has no bool dtype: a half tensor of
// the same rounded size (the allocator sees one byte per element, rounded to 512).
inline Tensor bool_tensor(int64_t numel, const char* op) { return make_tensor({(numel + 1) / 2}, DType::Float16, op); }

template <class N>
std::shared_ptr<N> make_node(std::initializer_list<const Tensor*> inputs) {
  if (!any_requires_grad(inputs)) return nullptr;
  auto n = new_node<N>();
  collect_next_edges(*n, inputs);
  return n;
}

}  // namespace vramlab::engine
