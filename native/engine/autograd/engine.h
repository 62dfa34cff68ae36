#pragma once
// The backward pass: runs the graph in PyTorch's order (a ready queue keyed by
// sequence number, leaf accumulators first), frees each saved tensor right after
// its node ran and each incoming gradient once consumed.
#include <cstdint>
#include <functional>

#include "engine/autograd/node.h"

namespace vramlab::engine {

void run_backward(const TensorList& roots, const TensorList& grad_outputs, bool retain_graph,
                  bool create_graph = false);

// Id of the backward pass running on this thread (0 outside backward); checkpoint
// recomputation is keyed by it like PyTorch's _current_graph_task_id().
uint64_t current_graph_task_id();

// Variable._execution_engine.queue_callback: runs once the current backward pass has run
// every node (FSDP's post-backward final callback). Only valid inside backward.
void queue_backward_callback(std::function<void()> cb);

// Node post hooks (Node::add_post_hook): run right after `fn` applies, on the backward's
// thread; DDP's on each parameter's AccumulateGrad (the gradient is then in .grad). Kept
// beside the graph; the owner removes them before the node can die.
void add_post_hook(Node* fn, std::function<void()> hook);
void remove_post_hooks(Node* fn);

}  // namespace vramlab::engine
