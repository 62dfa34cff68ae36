#include "engine/autograd/engine.h"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <stdexcept>
#include <unordered_map>
#include <unordered_set>

#include "engine/autocast/autocast.h"
#include "engine/core/context.h"
#include "engine/core/grad_mode.h"
#include "engine/ops/ops.h"

namespace vramlab::engine {

namespace {

std::atomic<uint64_t> g_task_ids{1};
thread_local uint64_t t_task_id = 0;
thread_local std::vector<std::function<void()>>* t_final_callbacks = nullptr;

struct ReadyTask {
  std::shared_ptr<Node> fn;
  TensorList inputs;
};
struct ReadyOrder {
  bool operator()(const ReadyTask& a, const ReadyTask& b) const {
    return a.fn->sequence_nr() < b.fn->sequence_nr();  // max-heap: newest node first
  }
};

bool is_expandable_to(const Shape& shape, const Shape& desired) {
  if (shape.size() > desired.size()) return false;
  for (size_t i = 0; i < shape.size(); ++i) {
    int64_t s = shape[shape.size() - 1 - i], d = desired[desired.size() - 1 - i];
    if (s != d && s != 1) return false;
  }
  return true;
}

// torch/csrc/autograd/engine.cpp validate_outputs: reduce broadcast gradients to the
// input's shape and cast them to its dtype.
void validate_outputs(Node& fn, TensorList& outputs) {
  auto& edges = fn.next_edges();
  if (outputs.size() != edges.size())
    throw std::logic_error("function " + fn.name() + " returned an incorrect number of gradients (expected " +
                           std::to_string(edges.size()) + ", got " + std::to_string(outputs.size()) + ")");
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (!edges[i].valid() || !outputs[i].defined()) continue;
    const auto& meta = edges[i].fn->input_metadata(edges[i].input_nr);
    Tensor& g = outputs[i];
    if (g.sizes() != meta.shape) {
      if (!is_expandable_to(meta.shape, g.sizes()))
        throw std::runtime_error("Function " + fn.name() + " returned an invalid gradient at index " +
                                 std::to_string(i) + " - got " + g.shape_string() +
                                 " but expected shape compatible with " + shape_str(meta.shape));
      g = sum_to(g, meta.shape);
    }
    if (g.dtype() != meta.dtype) g = g.to(meta.dtype);
  }
}

// A view can't be reused: PyTorch's view keeps its base (and so a second reference to the
// storage) alive, so e.g. a tied weight's transposed lm_head gradient is added out of place.
bool can_accumulate_inplace(const Tensor& v) {
  return !v.impl()->is_view && v.is_non_overlapping_and_dense() && v.use_count() == 1 && v.storage() &&
         v.storage().use_count() == 1;
}

void accumulate_into(Tensor& slot, Tensor&& var) {
  if (!var.defined()) return;
  if (!slot.defined()) {
    slot = std::move(var);
  } else if (GradMode::is_enabled()) {
    slot = add(slot, var);
  } else if (can_accumulate_inplace(slot)) {
    add_(slot, var);
  } else {
    slot = add(slot, var);
  }
}

class RoleGuard {
 public:
  explicit RoleGuard(ThreadRole r) : saved_(thread_role()) { thread_role() = r; }
  ~RoleGuard() { thread_role() = saved_; }

 private:
  ThreadRole saved_;
};

class TaskIdGuard {
 public:
  explicit TaskIdGuard(uint64_t id) : saved_(t_task_id) { t_task_id = id; }
  ~TaskIdGuard() { t_task_id = saved_; }

 private:
  uint64_t saved_;
};

}  // namespace

uint64_t current_graph_task_id() { return t_task_id; }

namespace {
std::mutex g_post_hooks_mu;
std::unordered_map<Node*, std::vector<std::function<void()>>> g_post_hooks;
std::atomic<size_t> g_post_hook_nodes{0};

void run_post_hooks(Node* fn) {
  if (g_post_hook_nodes.load(std::memory_order_relaxed) == 0) return;
  std::vector<std::function<void()>> hooks;
  {
    std::lock_guard<std::mutex> lock(g_post_hooks_mu);
    auto it = g_post_hooks.find(fn);
    if (it == g_post_hooks.end()) return;
    hooks = it->second;
  }
  for (auto& h : hooks) h();
}
}  // namespace

void add_post_hook(Node* fn, std::function<void()> hook) {
  std::lock_guard<std::mutex> lock(g_post_hooks_mu);
  g_post_hooks[fn].push_back(std::move(hook));
  g_post_hook_nodes.store(g_post_hooks.size());
}

void remove_post_hooks(Node* fn) {
  std::lock_guard<std::mutex> lock(g_post_hooks_mu);
  g_post_hooks.erase(fn);
  g_post_hook_nodes.store(g_post_hooks.size());
}

void queue_backward_callback(std::function<void()> cb) {
  if (!t_final_callbacks) throw std::logic_error("queue_callback outside backward");
  t_final_callbacks->push_back(std::move(cb));
}

void run_backward(const TensorList& roots, const TensorList& grad_outputs, bool retain_graph, bool create_graph) {
  if (roots.empty()) throw std::invalid_argument("backward() needs at least one tensor");
  if (!grad_outputs.empty() && grad_outputs.size() != roots.size())
    throw std::invalid_argument("grad_tensors has " + std::to_string(grad_outputs.size()) +
                                " elements but tensors has " + std::to_string(roots.size()));
  std::vector<Edge> root_edges;
  TensorList grads;
  for (size_t i = 0; i < roots.size(); ++i) {
    const Tensor& r = roots[i];
    if (!r.defined() || !r.requires_grad())
      throw std::runtime_error("element " + std::to_string(i) +
                               " of tensors does not require grad and does not have a grad_fn");
    Tensor g = grad_outputs.empty() ? Tensor() : grad_outputs[i];
    if (!g.defined()) {
      if (r.numel() != 1) throw std::runtime_error("grad can be implicitly created only for scalar outputs");
      CategoryScope cs(Category::ActivationGradient);  // d(loss)/d(loss): no parameter's gradient
      g = ones_like(r);
    } else if (g.sizes() != r.sizes()) {
      auto sz = [](const Shape& s) {
        std::string o = "torch.Size([";
        for (size_t k = 0; k < s.size(); ++k) o += (k ? ", " : "") + std::to_string(s[k]);
        return o + "])";
      };
      throw std::runtime_error("Mismatch in shape: grad_output[" + std::to_string(i) + "] has a shape of " +
                               sz(g.sizes()) + " and output[" + std::to_string(i) + "] has a shape of " +
                               sz(r.sizes()) + ".");
    }
    root_edges.push_back(gradient_edge(r));
    grads.push_back(g);
  }
  auto graph_root = new_node<GraphRoot>(std::move(root_edges), std::move(grads));

  // Dependencies: how many edges point at each node.
  std::unordered_map<Node*, int> deps;
  {
    std::vector<Node*> stack{graph_root.get()};
    std::unordered_set<Node*> seen{graph_root.get()};
    while (!stack.empty()) {
      Node* n = stack.back();
      stack.pop_back();
      for (auto& e : n->next_edges()) {
        if (!e.valid()) continue;
        ++deps[e.fn.get()];
        if (seen.insert(e.fn.get()).second) stack.push_back(e.fn.get());
      }
    }
  }

  RoleGuard role(ThreadRole::Backward);
  // The autograd device thread has its own (disabled) autocast state.
  struct AutocastSwap {
    AutocastState saved;
    AutocastSwap() : saved(std::move(autocast_state())) { autocast_state() = AutocastState{}; }
    ~AutocastSwap() { autocast_state() = std::move(saved); }
  } autocast_swap;
  TaskIdGuard tid(g_task_ids.fetch_add(1));
  bool saved_grad_mode = GradMode::is_enabled();
  struct GradRestore {
    bool v;
    ~GradRestore() { GradMode::set_enabled(v); }
  } restore{saved_grad_mode};
  GradMode::set_enabled(create_graph);
  // What backward allocates is an activation's gradient until AccumulateGrad keeps it as a
  // parameter's .grad (node.cpp files it under Gradient then).
  CategoryScope cat(Category::ActivationGradient);

  std::vector<std::function<void()>> final_callbacks;
  struct CallbacksGuard {
    std::vector<std::function<void()>>* saved;
    explicit CallbacksGuard(std::vector<std::function<void()>>* c) : saved(t_final_callbacks) { t_final_callbacks = c; }
    ~CallbacksGuard() { t_final_callbacks = saved; }
  } callbacks_guard(&final_callbacks);
  std::unordered_map<Node*, TensorList> buffers;
  std::vector<ReadyTask> ready;
  ready.push_back(ReadyTask{graph_root, {}});
  while (!ready.empty()) {
    std::pop_heap(ready.begin(), ready.end(), ReadyOrder{});
    ReadyTask task = std::move(ready.back());
    ready.pop_back();
    Node& fn = *task.fn;
    for (auto& h : fn.pre_hooks) h();
    TensorList outputs = fn.apply(task.inputs);
    // apply's locals: the generated code unpacks them at its top, so they go in reverse
    while (!fn.unpacked.empty()) fn.unpacked.pop_back();
    run_post_hooks(&fn);
    validate_outputs(fn, outputs);
    task.inputs.clear();  // incoming gradients die here, as at the end of call_function
    if (!retain_graph) fn.release_variables();
    auto& edges = fn.next_edges();
    for (size_t i = 0; i < outputs.size(); ++i) {
      if (!edges[i].valid()) continue;
      Node* next = edges[i].fn.get();
      auto& buf = buffers[next];
      if (buf.empty()) buf.resize(next->num_inputs());
      accumulate_into(buf[edges[i].input_nr], std::move(outputs[i]));
      if (--deps[next] == 0) {
        ready.push_back(ReadyTask{edges[i].fn, std::move(buf)});
        buffers.erase(next);
        std::push_heap(ready.begin(), ready.end(), ReadyOrder{});
      }
    }
    outputs.clear();
  }
  // exec_post_processing: callbacks may queue more callbacks
  for (size_t i = 0; i < final_callbacks.size(); ++i) final_callbacks[i]();
}

void Tensor::backward(const Tensor& gradient, bool retain_graph) const {
  TensorList g;
  if (gradient.defined()) g.push_back(gradient);
  run_backward({*this}, g, retain_graph);
}

}  // namespace vramlab::engine
