#include "engine/parallel/ddp.h"

#include <algorithm>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <stdexcept>

#include "engine/autograd/engine.h"
#include "engine/autograd/node.h"
#include "engine/core/driver_use.h"
#include "engine/core/grad_mode.h"
#include "engine/ops/ops.h"

namespace vramlab::engine {

std::vector<std::vector<size_t>> ddp_bucket_assignment(const std::vector<size_t>& bytes,
                                                       const std::vector<size_t>& limits) {
  std::vector<std::vector<size_t>> out;
  std::vector<size_t> cur;
  size_t size = 0, li = 0;
  for (size_t i = 0; i < bytes.size(); ++i) {
    cur.push_back(i);
    size += bytes[i];
    if (size >= limits[li]) {
      out.push_back(std::move(cur));
      cur.clear();
      size = 0;
      if (li + 1 < limits.size()) ++li;
    }
  }
  if (!cur.empty()) out.push_back(std::move(cur));
  return out;
}

namespace {

// Buckets per dtype (BucketKey), each dtype walking its own limits; `order` lists tensor
// indices in the order they are considered. sort: by smallest index (the constructor's
// assignment); the rebuild keeps the gradient-ready order.
std::vector<std::vector<size_t>> assign_by_dtype(const std::vector<Tensor>& ts, const std::vector<size_t>& order,
                                                 const std::vector<size_t>& limits, bool sort) {
  struct Acc {
    std::vector<size_t> idx;
    size_t size = 0, li = 0;
  };
  std::map<DType, Acc> accs;
  std::vector<std::vector<size_t>> out;
  for (size_t i : order) {
    Acc& a = accs[ts[i].dtype()];
    a.idx.push_back(i);
    a.size += ts[i].nbytes();
    if (a.size >= limits[a.li]) {
      out.push_back(std::move(a.idx));
      a.idx.clear();
      a.size = 0;
      if (a.li + 1 < limits.size()) ++a.li;
    }
  }
  for (auto& [dt, a] : accs)
    if (!a.idx.empty()) out.push_back(std::move(a.idx));
  if (sort)
    std::stable_sort(out.begin(), out.end(), [](const std::vector<size_t>& a, const std::vector<size_t>& b) {
      return *std::min_element(a.begin(), a.end()) < *std::min_element(b.begin(), b.end());
    });
  return out;
}

bool same_storage(const Tensor& a, const Tensor& b) { return a.defined() && b.defined() && a.storage() == b.storage(); }

constexpr size_t kBroadcastBucket = size_t(250) << 20;  // DDP's broadcast_bucket_size

}  // namespace

struct Ddp::Impl : ForwardHooks {
  struct Bucket {
    std::vector<size_t> vars;
    Tensor gradients;
    std::vector<Tensor> views;  // bucket_views_in (== out: the all-reduce is in place)
    size_t pending = 0;
  };

  EngineContext* ctx = nullptr;
  DdpOptions o;
  Module* root = nullptr;
  std::vector<Tensor> params;  // the Reducer's: requires_grad, each tensor once, module order
  std::vector<Tensor> buffers;
  std::vector<std::shared_ptr<Node>> accumulators;  // kept alive as the Reducer keeps them
  std::vector<std::pair<size_t, size_t>> locator;   // param -> (bucket, index in bucket)
  std::vector<Bucket> buckets;
  std::vector<size_t> ready_order;  // rebuilt_param_indices_: the first backward's ready order
  bool has_rebuilt = false, expect_hooks = false;
  size_t next_bucket = 0;
  std::vector<Tensor> held;  // tensors stashed on Works the watchdog has not released

  Tensor device_empty(int64_t numel, DType dt, const char* op, Category c) { return make_tensor({numel}, dt, op, c); }

  // A collective that DDP waits on (Work::wait unstashes its tensors): nothing is kept.
  // One it never waits on (the buckets' all-reduce) keeps them until the watchdog runs.
  void launch_unwaited(const Tensor& t) {
    if (o.hold) held.push_back(t);
  }

  // dist._broadcast_coalesced: 250 MiB buckets per dtype, a bucket of several tensors
  // flattened into one new block (one tensor is broadcast in place), two in flight.
  void broadcast_coalesced(const std::vector<Tensor>& ts) {
    if (ts.empty()) return;
    std::vector<size_t> order(ts.size());
    for (size_t i = 0; i < ts.size(); ++i) order[i] = i;
    NoGradGuard ng;
    std::deque<Tensor> in_flight;
    for (auto& b : assign_by_dtype(ts, order, {kBroadcastBucket}, true)) {
      if (in_flight.size() >= 2) in_flight.pop_front();  // finish(): wait, copy back, drop the flat
      Tensor flat;
      if (b.size() > 1) {
        int64_t n = 0;
        for (size_t i : b) n += ts[i].numel();
        flat = device_empty(n, ts[b.front()].dtype(), "broadcast_coalesced_flat", Category::Temporary);
      }
      if (o.group) broadcast_for_real(ts, b, flat);
      in_flight.push_back(flat);
    }
  }

  // The real job's side of one broadcast bucket: flatten (torch.cat into the flat block
  // allocated above), broadcast from rank 0, copy back; a lone tensor goes in place.
  void broadcast_for_real(const std::vector<Tensor>& ts, const std::vector<size_t>& b, const Tensor& flat) {
    if (!flat.defined()) {
      o.group->broadcast(ts[b.front()], 0);
      return;
    }
    std::vector<Tensor> parts;
    int64_t off = 0;
    for (size_t i : b) {
      parts.push_back(make_view(flat, ts[i].sizes(), contiguous_strides(ts[i].sizes()), off));
      off += ts[i].numel();
      copy_(parts.back(), ts[i]);
    }
    o.group->broadcast(flat, 0);
    for (size_t k = 0; k < b.size(); ++k) {
      Tensor dst = ts[b[k]];  // shares the parameter's storage
      copy_(dst, parts[k]);
    }
  }

  // Reducer::initialize_buckets: the previous buckets go first, then each new flat bucket
  // and its views; with gradient_as_bucket_view a defined .grad moves into its view.
  void initialize_buckets(const std::vector<std::vector<size_t>>& assignment) {
    buckets.clear();
    locator.assign(params.size(), {0, 0});
    CategoryScope cs(Category::Gradient);
    NoGradGuard ng;
    for (size_t bi = 0; bi < assignment.size(); ++bi) {
      Bucket b;
      b.vars = assignment[bi];
      int64_t n = 0;
      for (size_t v : b.vars) n += params[v].numel();
      b.gradients = device_empty(n, params[b.vars.front()].dtype(), "ddp_bucket", Category::Gradient);
      int64_t off = 0;
      for (size_t k = 0; k < b.vars.size(); ++k) {
        Tensor& p = params[b.vars[k]];
        Tensor view = make_view(b.gradients, p.sizes(),
                                p.is_non_overlapping_and_dense() ? p.strides() : contiguous_strides(p.sizes()), off);
        off += p.numel();
        if (o.gradient_as_bucket_view) {
          Tensor g = p.grad();
          if (g.defined() && !same_storage(g, view)) {
            copy_(view, g);
            p.set_grad(view);
          }
        }
        b.views.push_back(view);
        locator[b.vars[k]] = {bi, k};
      }
      buckets.push_back(std::move(b));
    }
  }

  // Reducer::rebuild_buckets at the start of the second forward.
  void rebuild_buckets() {
    if (has_rebuilt || ready_order.size() != params.size()) return;
    const std::vector<size_t> limits = {o.bucket_bytes_cap, o.bucket_bytes_cap};
    auto assignment = assign_by_dtype(params, ready_order, limits, false);
    {
      // sync_bucket_indices: rank 0's assignment broadcast as two int32 tensors (waited on;
      // float32 stands in for int32: same size)
      NoGradGuard ng;
      Tensor idx =
          device_empty(int64_t(params.size()) + 1, DType::Float32, "ddp_sync_bucket_indices", Category::Temporary);
      Tensor sizes =
          device_empty(int64_t(assignment.size()), DType::Float32, "ddp_sync_bucket_sizes", Category::Temporary);
      sizes.reset();
      idx.reset();
    }
    has_rebuilt = true;
    ready_order.clear();
    initialize_buckets(assignment);
  }

  void mark_variable_ready(size_t index) {
    auto [bi, k] = locator[index];
    Bucket& b = buckets[bi];
    Tensor& p = params[index];
    Tensor& view = b.views[k];
    Tensor g = p.grad();
    {
      NoGradGuard ng;
      if (g.defined()) {
        if (!same_storage(g, view)) {
          copy_(view, g);  // mul_out(view, grad, 1 / world): in place
          if (o.gradient_as_bucket_view) p.set_grad(view);
        }
      } else {
        zero_(view);
      }
    }
    g.reset();
    if (--b.pending == 0) mark_bucket_ready(bi);
    if (next_bucket == buckets.size()) queue_backward_callback([this] { finalize_backward(); });
  }

  void mark_bucket_ready(size_t bi) {
    if (bi > next_bucket) return;
    for (; next_bucket < buckets.size() && buckets[next_bucket].pending == 0; ++next_bucket) {
      // all-reduce in place on NCCL's stream (a real job's on the compute stream: ncclAvg
      // is the Reducer's divide-by-world then sum, bit for bit at world 2)
      if (o.group) o.group->all_reduce_mean(buckets[next_bucket].gradients);
      launch_unwaited(buckets[next_bucket].gradients);
    }
  }

  void autograd_hook(size_t index) {
    if (!expect_hooks) return;
    if (!has_rebuilt) ready_order.push_back(index);
    mark_variable_ready(index);
  }

  // Reducer::finalize_backward: every bucket view back into its .grad.
  void finalize_backward() {
    expect_hooks = false;
    CategoryScope cs(Category::Gradient);
    NoGradGuard ng;
    for (Bucket& b : buckets)
      for (size_t k = 0; k < b.vars.size(); ++k) {
        Tensor& p = params[b.vars[k]];
        Tensor g = p.grad();
        if (!o.gradient_as_bucket_view) {
          if (!g.defined()) {  // clone_obey_contract
            Tensor c = p.is_non_overlapping_and_dense() ? empty_strided(p.sizes(), p.strides(), p.dtype())
                                                        : empty(p.sizes(), p.dtype());
            copy_(c, b.views[k]);
            p.set_grad(c);
          } else {
            copy_(g, b.views[k]);
          }
        } else if (!g.defined()) {
          p.set_grad(b.views[k]);
        }
      }
  }

  // DistributedDataParallel._pre_forward / _post_forward on the root module.
  Tensor pre(Module&, const Tensor& x) override {
    if (GradMode::is_enabled()) rebuild_buckets();
    broadcast_coalesced(buffers);  // _sync_buffers (broadcast_buffers)
    return x;
  }

  void post(Module&, Tensor&) override {
    if (!GradMode::is_enabled()) return;
    // prepare_for_backward
    expect_hooks = true;
    next_bucket = 0;
    for (Bucket& b : buckets) b.pending = b.vars.size();
  }
};

Ddp::~Ddp() {
  if (impl)
    for (auto& acc : impl->accumulators) remove_post_hooks(acc.get());  // Reducer::remove_autograd_hooks
}

std::shared_ptr<Ddp> distributed_data_parallel(Model& model, const DdpOptions& o) {
  auto d = std::make_shared<Ddp>();
  d->impl = std::make_unique<Ddp::Impl>();
  Ddp::Impl& I = *d->impl;
  // the first kernel family loaded since NCCL's init (in DDP's constructor, before the
  // parameters' broadcast) moves NCCL's range lower
  driver_use(DriverUse::NcclReload);
  I.ctx = &current_context();
  I.o = o;
  I.root = &model;
  for (auto& p : model.parameters())
    if (p.requires_grad()) I.params.push_back(p);
  if (I.params.empty())
    throw std::invalid_argument("DistributedDataParallel needs at least one parameter that requires grad");
  std::function<void(Module&)> collect = [&](Module& m) {
    for (auto& [n, b] : m.own_buffers()) I.buffers.push_back(b);
    for (auto& [n, c] : m.children()) collect(*c);
  };
  collect(model);

  {
    // _verify_param_shape_across_processes: the parameter count all-gathered (one int64
    // per rank), then every parameter's sizes and strides broadcast; all waited on.
    NoGradGuard ng;
    CategoryScope cs(Category::Temporary);
    Tensor count = I.device_empty(1, DType::Int64, "ddp_verify_param_count", Category::Temporary);
    std::vector<Tensor> gathered;
    for (int64_t r = 0; r < o.world; ++r)
      gathered.push_back(I.device_empty(1, DType::Int64, "ddp_verify_param_count", Category::Temporary));
    int64_t dims = 0;
    for (auto& p : I.params) dims += 2 * p.dim();
    Tensor meta = I.device_empty(dims, DType::Int64, "ddp_verify_param_shapes", Category::Temporary);
    meta.reset();
    gathered.clear();
    count.reset();
  }
  // _sync_module_states: parameters (every one, by named_parameters) then buffers
  std::vector<Tensor> states = model.parameters();
  states.insert(states.end(), I.buffers.begin(), I.buffers.end());
  I.broadcast_coalesced(states);

  // The Reducer: one bucket per dtype over every parameter (limit sys.maxsize), the
  // bucket list reversed as DDP passes it.
  std::vector<size_t> order(I.params.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  auto first = assign_by_dtype(I.params, order, {SIZE_MAX}, true);
  std::reverse(first.begin(), first.end());
  I.initialize_buckets(first);

  for (size_t i = 0; i < I.params.size(); ++i) {
    std::shared_ptr<Node> acc = gradient_edge(I.params[i]).fn;
    Ddp::Impl* ip = &I;
    add_post_hook(acc.get(), [ip, i] { ip->autograd_hook(i); });
    I.accumulators.push_back(acc);
  }
  std::shared_ptr<ForwardHooks> h(d, d->impl.get());
  model.forward_hooks = h;
  return d;
}

}  // namespace vramlab::engine
