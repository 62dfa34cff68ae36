#include "engine/checkpoint/checkpoint.h"

#include <atomic>
#include <stdexcept>
#include <unordered_map>

#include "engine/autocast/autocast.h"
#include "engine/autograd/engine.h"
#include "engine/autograd/node.h"
#include "engine/core/context.h"
#include "engine/core/grad_mode.h"

namespace vramlab::engine {

namespace {

struct Holder;

struct Frame {
  std::function<Tensor(const std::vector<Tensor>&)> fn;
  std::vector<Tensor> inputs;  // kept like _NoopSaveInputs keeps the region's inputs
  bool autocast_enabled = false;
  DType autocast_dtype = DType::Float16;
  bool autocast_cache = true;
  std::vector<std::weak_ptr<Holder>> weak_holders;
  std::unordered_map<uint64_t, bool> is_recomputed;
  std::unordered_map<uint64_t, std::unordered_map<Holder*, Tensor>> recomputed;
  std::unordered_map<uint64_t, size_t> recomp_counter;
  std::mt19937_64 rng;  // preserve_rng_state: the generator as the forward found it
  // HF checkpoints partial(layer.__call__, **kwargs) on the hidden states: PyTorch's trace shows
  // the kwargs (inputs[1..], in the order the caller passed them) going before the region's input
  ~Frame() {
    for (size_t i = 1; i < inputs.size(); ++i) inputs[i].reset();
    if (!inputs.empty()) inputs[0].reset();
  }
};

struct Holder {
  std::shared_ptr<Frame> frame;  // the unpack hook's closure keeps the frame alive
};

struct StopRecomputation {};

std::atomic<uint64_t> g_outside_ids{1ull << 62};

class HooksGuard {
 public:
  explicit HooksGuard(std::shared_ptr<SavedTensorHooks> h) { push_saved_tensor_hooks(std::move(h)); }
  ~HooksGuard() { pop_saved_tensor_hooks(); }
};

void recompute(const std::shared_ptr<Frame>& frame, uint64_t gid) {
  auto hooks = std::make_shared<SavedTensorHooks>();
  Frame* f = frame.get();
  hooks->pack = [f, gid](const Tensor& x) -> std::shared_ptr<void> {
    size_t idx = f->recomp_counter[gid]++;
    if (idx >= f->weak_holders.size())
      throw std::runtime_error(
          "torch.utils.checkpoint: trying to save more tensors during recomputation than during the original "
          "forward pass.");
    if (auto h = f->weak_holders[idx].lock()) f->recomputed[gid][h.get()] = x.requires_grad() ? x.detach() : x;
    if (f->recomp_counter[gid] == f->weak_holders.size()) throw StopRecomputation{};  // early stop
    // The recomputed graph is never differentiated; keeping x without its grad_fn
    // avoids a node -> saved output -> node cycle that would leak the recomputation.
    return std::make_shared<Tensor>(x.detach());
  };
  hooks->unpack = [](const std::shared_ptr<void>& p) { return *std::static_pointer_cast<Tensor>(p); };
  // the region's random draws (dropout masks) repeat: the forward's generator state for
  // the recomputation, the caller's restored after it
  auto& ctx = current_context();
  const std::mt19937_64 outer = ctx.rng_state();
  ctx.set_rng_state(frame->rng);
  try {
    HooksGuard hg(hooks);
    EnableGradGuard eg;
    AutocastGuard ag(frame->autocast_enabled, frame->autocast_dtype, frame->autocast_cache);
    Tensor out = frame->fn(frame->inputs);
    (void)out;
  } catch (const StopRecomputation&) {
  } catch (...) {
    ctx.set_rng_state(outer);
    throw;
  }
  ctx.set_rng_state(outer);
}

}  // namespace

Tensor checkpoint(std::function<Tensor(const Tensor&)> fn, const Tensor& input) {
  return checkpoint([fn = std::move(fn)](const std::vector<Tensor>& in) { return fn(in[0]); },
                    std::vector<Tensor>{input});
}

Tensor checkpoint(std::function<Tensor(const std::vector<Tensor>&)> fn, std::vector<Tensor> inputs) {
  if (!GradMode::is_enabled()) return fn(inputs);
  auto frame = std::make_shared<Frame>();
  frame->fn = std::move(fn);
  frame->inputs = std::move(inputs);
  auto& as = autocast_state();
  frame->autocast_enabled = as.enabled;
  frame->autocast_dtype = as.dtype;
  frame->autocast_cache = as.cache_enabled;
  frame->rng = current_context().rng_state();

  auto hooks = std::make_shared<SavedTensorHooks>();
  std::weak_ptr<Frame> wframe = frame;
  hooks->pack = [wframe](const Tensor&) -> std::shared_ptr<void> {
    auto h = std::make_shared<Holder>();
    h->frame = wframe.lock();
    h->frame->weak_holders.push_back(h);
    return h;
  };
  hooks->unpack = [](const std::shared_ptr<void>& p) -> Tensor {
    auto holder = std::static_pointer_cast<Holder>(p);
    auto frame = holder->frame;
    uint64_t gid = current_graph_task_id();
    if (gid == 0) gid = g_outside_ids.fetch_add(1);
    if (!frame->is_recomputed[gid]) {
      recompute(frame, gid);
      frame->is_recomputed[gid] = true;
    }
    auto& m = frame->recomputed[gid];
    auto it = m.find(holder.get());
    if (it == m.end())
      throw std::runtime_error(
          "torch.utils.checkpoint: Unpack is being triggered for a tensor that was already unpacked once. If you are "
          "calling ctx.saved_tensors in backward, make sure to do so only once. Otherwise please open an issue with "
          "details on your use case.");
    Tensor r = std::move(it->second);
    m.erase(it);
    return r;
  };
  HooksGuard hg(hooks);
  return frame->fn(frame->inputs);
}

}  // namespace vramlab::engine
