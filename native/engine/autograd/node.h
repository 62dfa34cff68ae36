#pragma once
// Autograd graph: nodes (one per differentiable op, named as in PyTorch's
// derivatives.yaml), edges, saved variables with version checks, and the leaf
// gradient accumulator.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/core/tensor.h"

namespace vramlab::engine {

using TensorList = std::vector<Tensor>;

struct Edge {
  std::shared_ptr<Node> fn;
  uint32_t input_nr = 0;
  bool valid() const { return fn != nullptr; }
};

// Shape and dtype of a forward output: the engine sums/casts incoming gradients to it.
struct InputMetadata {
  Shape shape;
  DType dtype = DType::Float32;
};

// Saved-tensor hooks (torch.autograd.graph.saved_tensors_hooks): checkpointing packs
// saved tensors into holders instead of keeping them.
struct SavedTensorHooks {
  std::function<std::shared_ptr<void>(const Tensor&)> pack;
  std::function<Tensor(const std::shared_ptr<void>&)> unpack;
};
// Thread-local stack; SavedVariable uses the top one.
void push_saved_tensor_hooks(std::shared_ptr<SavedTensorHooks> h);
void pop_saved_tensor_hooks();
std::shared_ptr<SavedTensorHooks> top_saved_tensor_hooks();

class SavedVariable {
 public:
  SavedVariable() = default;
  // is_output: the tensor is an output of the node saving it (kept without grad_fn so
  // the node does not own itself).
  SavedVariable(const Tensor& t, bool is_output);
  Tensor unpack(const Node* owner) const;
  void reset_data();
  bool defined() const { return was_defined_; }

 private:
  Tensor data_;
  std::shared_ptr<void> packed_;
  std::shared_ptr<SavedTensorHooks> hooks_;
  uint32_t saved_version_ = 0;
  uint32_t output_nr_ = 0;
  std::string grad_fn_name_;  // producer of the saved tensor (for the version error)
  bool is_output_ = false, was_defined_ = false, released_ = false, is_leaf_ = false;
  bool requires_grad_ = false;
};

class Node : public std::enable_shared_from_this<Node> {
 public:
  Node();
  explicit Node(uint64_t sequence_nr) : seq_(sequence_nr) {}
  // Releases the next edges without recursing (see delete_node): a node made without
  // delete_node still frees a deep graph in bounded stack.
  virtual ~Node();
  virtual std::string name() const = 0;
  // grads[i] is the gradient of forward output i (may be undefined).
  virtual TensorList apply(TensorList& grads) = 0;
  virtual void release_variables() {}
  // Tensors a saved-tensor hook handed to apply (checkpoint recomputations): held until
  // apply returns, as the generated PyTorch code holds them in locals unpacked at its top.
  std::vector<Tensor> unpacked;
  // Tensor hooks (t.register_hook on a non-leaf output of this node): run when the node is
  // about to run, i.e. once the gradient of its outputs is complete. FSDP's pre-backward.
  std::vector<std::function<void()>> pre_hooks;

  uint64_t sequence_nr() const { return seq_; }
  std::vector<Edge>& next_edges() { return next_; }
  const std::vector<Edge>& next_edges() const { return next_; }
  bool should_compute_output(size_t i) const { return i < next_.size() && next_[i].valid(); }
  uint32_t add_input_metadata(const Tensor& t);
  const InputMetadata& input_metadata(size_t i) const { return inputs_[i]; }
  size_t num_inputs() const { return inputs_.size(); }

 protected:
  uint64_t seq_;
  std::vector<Edge> next_;
  std::vector<InputMetadata> inputs_;
};

// The deleter of every node (torch::autograd::deleteNode): frees a graph iteratively, so
// a chain of any length is released in bounded stack. The node's saved variables go
// first, then each next node whose last owner this was is moved onto an explicit stack
// instead of being destroyed inside this one, the last edge first, as PyTorch frees them.
void delete_node(Node* fn);

// A node owned through delete_node, as PyTorch's generated code makes them.
template <class N, class... Args>
std::shared_ptr<N> new_node(Args&&... args) {
  return std::shared_ptr<N>(new N(std::forward<Args>(args)...), delete_node);
}

// Gradient sink of a leaf tensor: steals the incoming buffer on first use when
// nothing else references it and it obeys the parameter's layout; adds in place after.
class AccumulateGrad : public Node {
 public:
  explicit AccumulateGrad(const Tensor& variable);
  std::string name() const override { return "torch::autograd::AccumulateGrad"; }
  TensorList apply(TensorList& grads) override;
  std::weak_ptr<TensorImpl> variable;
};

// An identity autograd.Function over one input (FSDP's RegisterPostBackwardFunction): its
// backward runs `hook` once the input's whole gradient has been computed, then passes the
// gradient on unchanged.
class HookNode : public Node {
 public:
  explicit HookNode(std::function<void()> hook) : hook_(std::move(hook)) {}
  std::string name() const override { return "RegisterPostBackwardFunctionBackward"; }
  TensorList apply(TensorList& grads) override {
    if (hook_) hook_();
    return {grads.empty() ? Tensor() : grads[0]};
  }

 private:
  std::function<void()> hook_;
};
// x viewed through a HookNode (x itself when it does not require grad).
Tensor apply_post_backward_hook(const Tensor& x, std::function<void()> hook);

class GraphRoot : public Node {
 public:
  GraphRoot(std::vector<Edge> roots, TensorList grads);
  std::string name() const override { return "GraphRoot"; }
  TensorList apply(TensorList&) override { return grads_; }

 private:
  TensorList grads_;
};

// Wires a new node into the graph: next edges from the inputs that require grad.
Edge gradient_edge(const Tensor& t);
bool any_requires_grad(std::initializer_list<const Tensor*> ts);
void collect_next_edges(Node& n, std::initializer_list<const Tensor*> inputs);
// Makes `out` the output of `fn` (output number = order of calls).
void set_history(Tensor& out, const std::shared_ptr<Node>& fn);

uint64_t next_sequence_nr();
bool obeys_layout_contract(const Tensor& grad, const Tensor& variable);

}  // namespace vramlab::engine
