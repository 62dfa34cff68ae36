#include "engine/autograd/node.h"

#include <atomic>
#include <stdexcept>

#include "engine/core/context.h"
#include "engine/core/grad_mode.h"
#include "engine/ops/ops.h"

namespace vramlab::engine {

namespace {
thread_local std::vector<std::shared_ptr<SavedTensorHooks>> t_hooks;
std::atomic<uint64_t> g_seq{0};
}  // namespace

void push_saved_tensor_hooks(std::shared_ptr<SavedTensorHooks> h) { t_hooks.push_back(std::move(h)); }
void pop_saved_tensor_hooks() {
  if (!t_hooks.empty()) t_hooks.pop_back();
}
std::shared_ptr<SavedTensorHooks> top_saved_tensor_hooks() {
  if (t_hooks.empty()) return nullptr;
  return t_hooks.back();
}

uint64_t next_sequence_nr() { return g_seq.fetch_add(1); }

Node::Node() : seq_(next_sequence_nr()) {}

namespace {

// One graph release on this thread. Nodes freed while it runs (a saved tensor whose
// grad_fn had no other owner, a checkpoint frame's inputs) share its stack.
struct GraphRelease {
  std::vector<std::shared_ptr<Node>> stack;
  std::vector<Node*> deferred;  // owned nodes freed past the nesting bound
  int depth = 0;
};
thread_local GraphRelease* t_release = nullptr;  // trivially destructible: safe at thread exit

// A node freed inside another node's release is released there and then, as PyTorch's
// nested deleteNode calls are, up to this depth; deeper ones wait for the outermost
// release, so no chain of owners (node -> saved tensor -> grad_fn -> ...) can recurse.
constexpr int kMaxNestedReleases = 16;

// torch/csrc/autograd/function.cpp gatherFunctions.
void gather_functions(Node* fn, std::vector<std::shared_ptr<Node>>& stack) {
  fn->release_variables();
  for (auto& e : fn->next_edges()) {
    if (e.fn.use_count() == 1)
      stack.push_back(std::move(e.fn));
    else
      e.fn.reset();
  }
}

// Pops and releases down to `floor`; each popped node's last reference goes at the end
// of its turn, when its edges are already empty.
void drain(GraphRelease& r, size_t floor) {
  while (r.stack.size() > floor) {
    std::shared_ptr<Node> fn = std::move(r.stack.back());
    r.stack.pop_back();
    gather_functions(fn.get(), r.stack);
  }
}

// owned: called as the deleter (fn is deleted here); else from ~Node, fn's own members
// already gone.
void release_graph(Node* fn, bool owned) {
  GraphRelease local;
  GraphRelease* r = t_release;
  const bool outermost = r == nullptr;
  if (outermost) r = t_release = &local;
  if (r->depth >= kMaxNestedReleases) {
    if (owned)
      r->deferred.push_back(fn);
    else
      gather_functions(fn, r->stack);  // an enclosing release drains what this pushes
    return;
  }
  ++r->depth;
  const size_t floor = r->stack.size();
  gather_functions(fn, r->stack);
  if (owned) delete fn;
  drain(*r, floor);
  if (outermost) {
    while (!r->deferred.empty()) {
      Node* d = r->deferred.back();
      r->deferred.pop_back();
      gather_functions(d, r->stack);
      delete d;
      drain(*r, floor);
    }
    t_release = nullptr;
  }
  --r->depth;
}

}  // namespace

void delete_node(Node* fn) {
  if (fn) release_graph(fn, true);
}

Node::~Node() {
  // Through delete_node the edges are already empty; otherwise release them here.
  bool any = false;
  for (auto& e : next_) any = any || e.fn;
  if (any) release_graph(this, false);
}

uint32_t Node::add_input_metadata(const Tensor& t) {
  inputs_.push_back(InputMetadata{t.sizes(), t.dtype()});
  return uint32_t(inputs_.size() - 1);
}

SavedVariable::SavedVariable(const Tensor& t, bool is_output) {
  if (!t.defined()) return;
  was_defined_ = true;
  is_output_ = is_output;
  saved_version_ = t.version();
  output_nr_ = t.output_nr();
  is_leaf_ = t.is_leaf();
  requires_grad_ = t.requires_grad();
  if (t.grad_fn()) grad_fn_name_ = t.grad_fn()->name();
  if (auto hooks = top_saved_tensor_hooks()) {
    hooks_ = hooks;
    // The pack hook sees the tensor as the user would (outputs included).
    packed_ = hooks->pack(t);
    return;
  }
  if (is_output) {
    // Same storage and version counter, no grad_fn: the node must not own itself.
    data_ = make_view(t, t.sizes(), t.strides(), t.storage_offset());
    data_.impl()->is_view = t.impl()->is_view;
  } else {
    data_ = t;
  }
}

Tensor SavedVariable::unpack(const Node* owner) const {
  if (!was_defined_) return Tensor();
  if (released_)
    throw std::runtime_error(
        "Trying to backward through the graph a second time (or directly access saved tensors after they have "
        "already been freed). Saved intermediate values of the graph are freed when you call .backward() or "
        "autograd.grad(). Specify retain_graph=True if you need to backward through the graph a second time or if "
        "you need to access saved tensors after calling backward.");
  if (hooks_) {
    Tensor t = hooks_->unpack(packed_);
    if (owner) const_cast<Node*>(owner)->unpacked.push_back(t);
    return t;
  }
  uint32_t current = data_.version();
  if (current != saved_version_) {
    std::string msg =
        "one of the variables needed for gradient computation has been modified by an inplace operation: [" +
        data_.type_string() + " " + data_.shape_string() + "]";
    std::string producer = is_output_ && owner ? owner->name() : grad_fn_name_;
    if (!producer.empty()) msg += ", which is output " + std::to_string(output_nr_) + " of " + producer + ",";
    msg += " is at version " + std::to_string(current) + "; expected version " + std::to_string(saved_version_) +
           " instead. Hint: enable anomaly detection to find the operation that failed to compute its gradient, "
           "with torch.autograd.set_detect_anomaly(True).";
    throw std::runtime_error(msg);
  }
  return data_;
}

void SavedVariable::reset_data() {
  if (!was_defined_) return;
  data_.reset();
  packed_.reset();
  hooks_.reset();
  released_ = true;
}

bool obeys_layout_contract(const Tensor& grad, const Tensor& variable) {
  if (grad.sizes() != variable.sizes()) return false;
  if (variable.is_non_overlapping_and_dense()) {
    for (size_t i = 0; i < grad.sizes().size(); ++i) {
      if (grad.sizes()[i] != 1) {
        if (grad.strides()[i] != variable.strides()[i]) return false;
      } else if (grad.strides()[i] == 0) {
        return false;
      }
    }
    return true;
  }
  return grad.is_contiguous();
}

AccumulateGrad::AccumulateGrad(const Tensor& v) : Node(UINT64_MAX), variable(v.impl_ptr()) { add_input_metadata(v); }

TensorList AccumulateGrad::apply(TensorList& grads) {
  if (grads.empty() || !grads[0].defined()) return {};
  auto var_impl = variable.lock();
  if (!var_impl || !var_impl->requires_grad) return {};
  Tensor var(var_impl);
  Tensor new_grad = std::move(grads[0]);
  CategoryScope cs(Category::Gradient);
  if (!var_impl->grad) {
    if (!GradMode::is_enabled() && new_grad.use_count() <= 1 && obeys_layout_contract(new_grad, var)) {
      // Steal the incoming buffer: no copy. Backward made it as an activation gradient;
      // from here it is the parameter's gradient.
      if (new_grad.storage() && new_grad.storage()->ctx)
        new_grad.storage()->ctx->recategorize(*new_grad.storage(), Category::Gradient);
      new_grad.impl()->grad_fn.reset();
      new_grad.impl()->requires_grad = false;
      var_impl->grad = new_grad.impl_ptr();
    } else {
      // clone_obey_contract: a copy laid out like the parameter.
      Tensor g = var.is_non_overlapping_and_dense() ? empty_strided(var.sizes(), var.strides(), new_grad.dtype())
                                                    : empty(var.sizes(), new_grad.dtype());
      {
        NoGradGuard ng;
        copy_(g, new_grad);
      }
      var_impl->grad = g.impl_ptr();
    }
  } else if (!GradMode::is_enabled()) {
    Tensor g(var_impl->grad);
    add_(g, new_grad);
  } else {
    Tensor g(var_impl->grad);
    var_impl->grad = add(g, new_grad).impl_ptr();
  }
  return {};
}

GraphRoot::GraphRoot(std::vector<Edge> roots, TensorList grads) : Node(UINT64_MAX), grads_(std::move(grads)) {
  next_ = std::move(roots);
}

Edge gradient_edge(const Tensor& t) {
  if (!t.defined()) return {};
  auto* impl = t.impl();
  if (impl->grad_fn) return Edge{impl->grad_fn, impl->output_nr};
  if (!impl->requires_grad) return {};
  auto acc = impl->grad_accumulator.lock();
  if (!acc) {
    acc = new_node<AccumulateGrad>(t);
    impl->grad_accumulator = acc;
  }
  return Edge{acc, 0};
}

bool any_requires_grad(std::initializer_list<const Tensor*> ts) {
  if (!GradMode::is_enabled()) return false;
  for (auto* t : ts)
    if (t && t->defined() && t->requires_grad()) return true;
  return false;
}

void collect_next_edges(Node& n, std::initializer_list<const Tensor*> inputs) {
  for (auto* t : inputs) n.next_edges().push_back(t ? gradient_edge(*t) : Edge{});
}

void set_history(Tensor& out, const std::shared_ptr<Node>& fn) {
  out.impl()->grad_fn = fn;
  out.impl()->requires_grad = true;
  out.impl()->output_nr = fn->add_input_metadata(out);
}

Tensor apply_post_backward_hook(const Tensor& x, std::function<void()> hook) {
  if (!x.requires_grad()) return x;
  auto fn = std::make_shared<HookNode>(std::move(hook));
  collect_next_edges(*fn, {&x});
  Tensor out = make_view(x, x.sizes(), x.strides(), x.storage_offset());
  set_history(out, fn);
  return out;
}

}  // namespace vramlab::engine
