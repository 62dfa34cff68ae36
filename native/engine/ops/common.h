#pragma once
// Internals shared by the op files.
#include "engine/autograd/node.h"
#include "engine/backends/backend.h"
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

template <class N>
std::shared_ptr<N> make_node(std::initializer_list<const Tensor*> inputs) {
  if (!any_requires_grad(inputs)) return nullptr;
  auto n = new_node<N>();
  collect_next_edges(*n, inputs);
  return n;
}

}  // namespace vramlab::engine
