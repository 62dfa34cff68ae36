#include "engine/parallel/fsdp.h"

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <stdexcept>

#include "engine/autograd/engine.h"
#include "engine/autograd/node.h"
#include "engine/backends/backend.h"
#include "engine/backends/scratch_memory.h"
#include "engine/core/driver_use.h"
#include "engine/core/grad_mode.h"
#include "engine/nn/forward_inputs.h"
#include "engine/ops/ops.h"

namespace vramlab::engine {

int64_t fsdp_padded_rows(int64_t rows, int64_t world) { return (rows + world - 1) / world; }

int64_t fsdp_local_rows(int64_t rows, int64_t world, int64_t rank) {
  const int64_t c = fsdp_padded_rows(rows, world);
  return std::max<int64_t>(0, std::min(c, rows - rank * c));
}

namespace {

enum class Training { Idle, Forward, PreBackward, PostBackward };

struct FParam {
  Tensor p;                       // the module's parameter: the unsharded view, storage resized 0 <-> full
  int64_t rows = 1, per_row = 0;  // dim 0 and the elements of one row
  Tensor padded;                  // _sharded_param_data: the padded shard (orig dtype)
  Tensor sharded;                 // the local view the optimizer steps
  int64_t padded_numel = 0;
  size_t unsharded_bytes = 0;  // padded_numel * world in the unsharded dtype
};

struct Group {
  Module* module = nullptr;
  bool is_root = false;
  std::vector<FParam*> params;
  bool unsharded = false;
  Tensor all_gather_result;  // pending all-gather output (between unshard and its wait)
  Training training = Training::Idle;
  std::vector<size_t> post_forward_indices;
  bool reshard_after_forward = true;
};

// t.data = src: t's tensor now uses src's block (its own goes once nothing else holds it).
void set_data(const Tensor& t, const Tensor& src) {
  TensorImpl* impl = t.impl();
  impl->storage = src.impl()->storage;
  impl->dtype = src.dtype();
  impl->strides = src.strides();
  impl->offset = src.storage_offset();
}

Shape rest_shape(const Shape& s, int64_t rows) {
  Shape r = s;
  if (!r.empty()) r[0] = rows;
  return r;
}

// n elements of t's storage from element `at` (t's dtype), as a flat view.
Tensor flat(const Tensor& t, int64_t at, int64_t n) { return make_view(t, {n}, {1}, at); }

void copy_values(const Tensor& dst, const Tensor& src) {
  current_context().backend().unary(UnaryOp::Copy, dst, src, 0.0);
}

// Rows [first, first + n) of a contiguous parameter-shaped tensor, flattened.
Tensor rows_of(const Tensor& t, int64_t first, int64_t n) {
  const int64_t rows = t.dim() ? t.size(0) : 1;
  const int64_t per_row = rows ? t.numel() / rows : 0;
  return flat(t, t.storage_offset() + first * per_row, n * per_row);
}

// The padded shard's values: zeros (new_zeros) with rows [rank * chunk, + local) of the
// full parameter in front.
void fill_shard(const Tensor& padded, const Tensor& full, int64_t world, int64_t rank) {
  const int64_t rows = full.dim() ? full.size(0) : 1;
  const int64_t pr = fsdp_padded_rows(rows, world), lr = fsdp_local_rows(rows, world, rank);
  if (!full.is_contiguous() || !padded.is_contiguous())
    throw std::logic_error("fsdp: sharding needs contiguous parameters");
  if (lr < pr) current_context().backend().fill(padded, 0.0);
  if (lr > 0) copy_values(rows_of(padded, 0, lr), rows_of(full, rank * pr, lr));
}

}  // namespace

struct Fsdp::Impl : ForwardHooks, ForwardInputCast {
  EngineContext* ctx = nullptr;
  FsdpOptions o;
  std::vector<std::unique_ptr<FParam>> params;
  std::vector<std::unique_ptr<Group>> groups;  // root first, then the blocks (named_modules order)
  std::map<Module*, Group*> by_module;
  Tensor all_gather_state;      // the previous forward all-gather output, until the next copy-out
  Tensor reduce_scatter_state;  // the previous reduce-scatter input, until the next reduce-scatter
  std::vector<Group*> post_forward_order;
  bool callback_queued = false;
  std::vector<FParam*> param_order;  // model.parameters() order

  bool data() const { return ctx->backend().has_data(); }

  DType unsharded_dtype(const FParam& fp) const { return o.has_param_dtype ? o.param_dtype : fp.padded.dtype(); }
  bool casts(const FParam& fp) const { return o.has_param_dtype && o.param_dtype != fp.padded.dtype(); }

  Tensor empty(int64_t numel, DType dt, const char* op, Category c) { return make_tensor({numel}, dt, op, c); }

  void unshard(Group& g) {
    if (g.all_gather_result.defined() || g.unsharded) return;
    if (o.world == 1) return;  // world 1: no all-gather buffers (copy from the shard)
    StreamScope ss(ctx->memory(), kAllGatherCopyIn);
    NoGradGuard ng;
    int64_t numel = 0;
    bool cast = false;
    for (FParam* fp : g.params) {
      numel += fp->padded_numel;
      cast = cast || casts(*fp);
    }
    // _get_param_all_gather_inputs: the parameters that cast are copied into one flat
    // param_dtype block; the others all-gather their shard as it is. Inputs of different
    // dtypes (a LoRA adapter upcast beside bf16 weights) are gathered as uint8: the same
    // bytes (our engine has no byte dtype, so the block is counted in 2-byte elements).
    int64_t cast_numel = 0, bytes = 0;
    bool mixed = false;
    const DType dt = unsharded_dtype(*g.params.front());
    for (FParam* fp : g.params) {
      if (casts(*fp)) cast_numel += fp->padded_numel;
      const DType in = unsharded_dtype(*fp);
      mixed = mixed || in != dt;
      bytes += fp->padded_numel * int64_t(itemsize(in));
    }
    Tensor flat_in;
    if (cast) flat_in = empty(cast_numel, o.param_dtype, "fsdp_all_gather_input", Category::Parameter);
    Tensor out = mixed ? empty(bytes / 2 * o.world, DType::BFloat16, "fsdp_all_gather_output", Category::Parameter)
                       : empty(numel * o.world, dt, "fsdp_all_gather_output", Category::Parameter);
    if (data()) {
      if (mixed)
        throw std::invalid_argument(
            "fsdp2 on a backend with data: parameters of different unsharded dtypes in one group (gathered as "
            "bytes) are simulated only");
      // copy-in: each padded shard, cast to param_dtype, into this rank's slice of the output
      int64_t off = o.rank * numel;
      for (FParam* fp : g.params) {
        copy_values(flat(out, off, fp->padded_numel), flat(fp->padded, fp->padded.storage_offset(), fp->padded_numel));
        off += fp->padded_numel;
      }
    }
    flat_in.reset();
    if (o.group) o.group->all_gather_into_tensor(out, flat(out, o.rank * numel, numel));
    g.all_gather_result = out;
  }

  void wait_for_unshard(Group& g) {
    if (o.world == 1) {
      if (g.unsharded) return;
      // world 1: every parameter's unsharded block is a copy of its shard
      for (FParam* fp : g.params)
        if (alloc_unsharded(*fp) && data())
          copy_values(flat(fp->p, 0, fp->padded_numel),
                      flat(fp->padded, fp->padded.storage_offset(), fp->padded_numel));
      g.unsharded = true;
      return;
    }
    if (!g.all_gather_result.defined()) return;
    if (g.training == Training::Forward) all_gather_state.reset();
    // copy-out: parameter i's unsharded block is its chunk of every rank's slice
    int64_t seg = 0;
    for (FParam* fp : g.params) seg += fp->padded_numel;
    int64_t off = 0;
    for (FParam* fp : g.params) {
      if (alloc_unsharded(*fp) && data()) {
        const Tensor& out = g.all_gather_result;
        copy_values(make_view(fp->p, {o.world, fp->padded_numel}, {fp->padded_numel, 1}, 0),
                    make_view(out, {o.world, fp->padded_numel}, {seg, 1}, off));
      }
      off += fp->padded_numel;
    }
    g.unsharded = true;
    if (g.training == Training::Forward) all_gather_state = g.all_gather_result;
    g.all_gather_result.reset();
  }

  bool alloc_unsharded(FParam& fp) {
    Storage& s = *fp.p.storage();
    if (s.block) return false;
    ctx->resize_storage(s, fp.unsharded_bytes);
    return true;
  }

  void to_sharded(Group& g) {
    if (!g.unsharded) return;
    for (FParam* fp : g.params) ctx->resize_storage(*fp->p.storage(), 0);
    g.unsharded = false;
  }

  void reshard(Group& g) {
    if (g.training == Training::Forward && !g.reshard_after_forward) return;
    to_sharded(g);
  }

  // FSDPState._pre_forward's cast_forward_inputs: every floating input to param_dtype (a
  // new block). A checkpoint recomputation returns before the cast, so what it recomputes
  // from such an input has another dtype than what the forward saved, and PyTorch's
  // checkpoint refuses it when backward unpacks it (measured: Llama's rotary tables).
  Tensor cast_input(Module& m, const Tensor& t) override {
    if (!o.has_param_dtype || !t.defined() || !is_floating(t.dtype()) || t.dtype() == o.param_dtype) return t;
    if (by_module.at(&m)->training == Training::PreBackward)
      throw std::runtime_error(
          "torch.utils.checkpoint.CheckpointError: recomputed values have different metadata than during the "
          "forward pass (" +
          m.path() +
          ": fully_shard casts its floating forward inputs to param_dtype in the forward but not in the "
          "checkpoint recomputation; PyTorch 2.11 fails this run in its first backward)");
    return t.to(o.param_dtype);
  }

  // ForwardHooks
  Tensor pre(Module& m, const Tensor& x) override {
    Group& g = *by_module.at(&m);
    if (g.training == Training::PreBackward) {  // checkpoint recomputation
      if (!g.unsharded) {
        unshard(g);
        wait_for_unshard(g);
      }
      return x;
    }
    Tensor in = cast_input(m, x);
    g.training = Training::Forward;
    unshard(g);
    wait_for_unshard(g);
    Group* gp = &g;
    return apply_post_backward_hook(in, [this, gp] { post_backward(*gp); });
  }

  void post(Module& m, Tensor& out) override {
    Group& g = *by_module.at(&m);
    if (g.training == Training::PreBackward) return;
    reshard(g);
    g.post_forward_indices.push_back(post_forward_order.size());
    post_forward_order.push_back(&g);
    // _register_pre_backward_hook: every output tensor that requires grad; an HF model's
    // output holds its loss beside the logits, and the loss's hook runs first
    std::vector<Tensor> outs{out};
    if (auto* model = dynamic_cast<Model*>(&m)) outs.push_back(model->forward_loss());
    for (const Tensor& t : outs)
      if (GradMode::is_enabled() && t.defined() && t.requires_grad() && t.grad_fn()) {
        Group* gp = &g;
        t.grad_fn()->pre_hooks.push_back([this, gp] { pre_backward(*gp); });
      }
    g.training = Training::Idle;
    if (g.is_root) all_gather_state.reset();
  }

  void pre_backward(Group& g) {
    if (!callback_queued) {
      callback_queued = true;
      queue_backward_callback([this] { final_callback(); });
    }
    if (g.training == Training::PreBackward) return;
    g.training = Training::PreBackward;
    unshard(g);
    wait_for_unshard(g);
    // _backward_prefetch: the group that ran forward just before this one
    if (g.post_forward_indices.empty()) return;
    const size_t cur = g.post_forward_indices.back();
    g.post_forward_indices.pop_back();
    if (cur == 0) return;
    Group& target = *post_forward_order[cur - 1];
    const Training saved = target.training;
    target.training = Training::PreBackward;
    unshard(target);
    target.training = saved;
  }

  void post_backward(Group& g) {
    g.training = Training::PostBackward;
    std::vector<FParam*> with_grad;
    std::vector<Tensor> grads;
    for (FParam* fp : g.params) {
      Tensor gr = fp->p.grad();
      if (!gr.defined()) continue;
      with_grad.push_back(fp);
      grads.push_back(gr);
      fp->p.set_grad(Tensor());
    }
    to_sharded(g);  // reshard_after_backward
    if (with_grad.empty()) return;
    reduce_scatter_state.reset();
    NoGradGuard ng;
    const DType grad_dtype = grads.front().dtype();
    const DType orig = with_grad.front()->padded.dtype();
    const DType reduce = o.has_reduce_dtype ? o.reduce_dtype : grad_dtype;
    int64_t out_numel = 0;
    for (FParam* fp : with_grad) out_numel += fp->padded_numel;
    Tensor rs_in = empty(out_numel * o.world, reduce, "fsdp_reduce_scatter_input", Category::Gradient);
    if (data()) copy_in_gradients(rs_in, with_grad, grads, out_numel);
    grads.clear();
    Tensor rs_out;
    {
      StreamScope ss(ctx->memory(), kReduceScatter);
      rs_out = empty(out_numel, reduce, "fsdp_reduce_scatter_output", Category::Gradient);
      // fp32 and bf16 reduce with NCCL's average (_get_gradient_divide_factors); world 1
      // copies (a sum of one)
      if (o.group)
        o.group->reduce_scatter_tensor(rs_out, rs_in, o.world > 1);
      else if (data())
        copy_values(rs_out, rs_in);
      if (reduce != orig) rs_out = rs_out.to(orig);
    }
    int64_t off = 0;
    for (FParam* fp : with_grad) {
      const Shape& sz = fp->sharded.sizes();
      Tensor view = make_view(rs_out, sz, contiguous_strides(sz), off);
      Tensor cur = fp->sharded.grad();
      if (cur.defined())
        add_(cur, view);
      else
        fp->sharded.set_grad(view);
      off += fp->padded_numel;
    }
    rs_out.reset();
    if (o.world > 1) reduce_scatter_state = rs_in;
  }

  // foreach_reduce_scatter_copy_in (chunk_cat): rs_in viewed as (world, out_numel); row r
  // holds each gradient's rank-r chunk of padded rows (zeros past the last row), cast to
  // the reduce dtype.
  void copy_in_gradients(const Tensor& rs_in, const std::vector<FParam*>& ps, const std::vector<Tensor>& grads,
                         int64_t seg) {
    if (o.world > 1 && rs_in.dtype() == DType::Float16)
      throw std::invalid_argument(
          "fsdp2 on a backend with data: an fp16 reduce-scatter (divided before and after the sum) is simulated only");
    bool uneven = false;
    for (FParam* fp : ps) uneven = uneven || fp->rows != fsdp_padded_rows(fp->rows, o.world) * o.world;
    if (uneven) ctx->backend().fill(rs_in, 0.0);
    int64_t off = 0;
    for (size_t i = 0; i < ps.size(); ++i) {
      const FParam& fp = *ps[i];
      const Tensor& gr = grads[i];
      if (!gr.is_contiguous()) throw std::logic_error("fsdp: a non-contiguous unsharded gradient");
      const int64_t pr = fsdp_padded_rows(fp.rows, o.world);
      for (int64_t r = 0; r < o.world; ++r) {
        const int64_t lr = fsdp_local_rows(fp.rows, o.world, r);
        if (lr > 0) copy_values(flat(rs_in, r * seg + off, lr * fp.per_row), rows_of(gr, r * pr, lr));
      }
      off += fp.padded_numel;
    }
  }

  void final_callback() {
    for (auto& g : groups) {
      if (g->training != Training::PostBackward) post_backward(*g);
      g->training = Training::Idle;
      g->all_gather_result.reset();  // finalize_backward: an unused prefetch
      g->post_forward_indices.clear();
    }
    post_forward_order.clear();
    reduce_scatter_state.reset();
    callback_queued = false;
  }
};

namespace {

// The modules fully_shard is applied to before the root: the lab's `blocks`, or an HF
// model's decoder layers (model.model.layers[i]).
Module* fsdp_blocks(Module& root) {
  for (auto& [n, c] : root.children())
    if (n == "blocks") return c.get();
  for (auto& [n, c] : root.children())
    if (n == "model")
      for (auto& [n2, c2] : c->children())
        if (n2 == "layers") return c2.get();
  return nullptr;
}

// FSDPParam._init_sharded_param on a parameter already on the device: each rank's padded
// chunk is a new block (new_zeros, then the rows copied in); the originals are held by
// fully_shard's parameter list until it returns, then freed. The module's parameter
// becomes the unsharded view (no storage until an all-gather), in param_dtype.
void shard_group_in_place(EngineContext& ctx, const FsdpOptions& o, Group& g) {
  for (FParam* fp : g.params) {
    const Tensor& p = fp->p;
    const Shape full = p.sizes().empty() ? Shape{1} : p.sizes();
    const int64_t rows = full[0];
    const int64_t pr = fsdp_padded_rows(rows, o.world), lr = fsdp_local_rows(rows, o.world, o.rank);
    {
      CategoryScope cs(Category::Parameter);
      NoGradGuard ng;
      fp->padded = make_tensor(rest_shape(full, pr), p.dtype(), "fsdp_shard", Category::Parameter);
      if (ctx.backend().has_data()) fill_shard(fp->padded, p, o.world, o.rank);
    }
    Tensor v = make_view(fp->padded, rest_shape(full, lr), contiguous_strides(rest_shape(full, lr)), 0);
    v.impl()->is_view = false;  // a leaf nn.Parameter (DTensor local tensor)
    v.requires_grad_(p.requires_grad());
    fp->sharded = v;
  }
  for (FParam* fp : g.params) {
    ctx.resize_storage(*fp->p.storage(), 0);
    if (o.has_param_dtype && is_floating(fp->p.dtype())) fp->p.impl()->dtype = o.param_dtype;
  }
}

void install_hooks(const std::shared_ptr<Fsdp>& f) {
  for (auto& g : f->impl->groups) {
    std::shared_ptr<ForwardHooks> h(f, f->impl.get());
    g->module->forward_hooks = h;
  }
}

}  // namespace

Fsdp::~Fsdp() = default;

uint64_t Fsdp::fingerprint(ProcessGroup& g) const {
  uint64_t h = fnv1a(nullptr, 0);
  bool any = false;
  for (const FParam* fp : impl->param_order) {
    // every rank's padded shard, rank-major: the padded full parameter; its first rows are it
    std::vector<uint8_t> b = g.gather_to_host(fp->padded);
    if (b.empty()) continue;
    any = true;
    const size_t n = size_t(fp->rows * fp->per_row) * itemsize(fp->padded.dtype());
    if (b.size() < n) throw std::logic_error("fsdp fingerprint: a gathered parameter is short");
    h = fnv1a(b.data(), n, h);
  }
  return any ? h : 0;
}

std::shared_ptr<Fsdp> fully_shard_model(const RunSpec& spec, const FsdpOptions& o, std::unique_ptr<Model>& model) {
  EngineContext& ctx = current_context();
  auto f = std::make_shared<Fsdp>();
  f->impl = std::make_unique<Fsdp::Impl>();
  Fsdp::Impl& I = *f->impl;
  I.ctx = &ctx;
  I.o = o;
  const bool data = ctx.backend().has_data();
  if (o.group && o.group->world() != o.world)
    throw std::invalid_argument("fsdp2: the process group has " + std::to_string(o.group->world()) +
                                " ranks, spec.parallel.world is " + std::to_string(o.world));
  if (data && o.world > 1 && !o.group)
    throw std::invalid_argument("fsdp2 with values on " + std::to_string(o.world) +
                                " ranks needs a process group (a launched job: vramlab_dist)");

  // hf: built on the device as the user builds it (weights, LoRA, checkpointing), then
  // sharded in place. The lab's families: built on the meta device, to_empty afterwards;
  // with data, "meta" is scratch memory outside the allocator that keeps each parameter's
  // and buffer's initial values (the values an unsharded build gets from the same seed)
  // until to_empty has copied them into the shards and the new buffers.
  const bool in_place = spec.model.kind == "hf";
  std::unique_ptr<MemoryBackend> meta = make_scratch_memory(ctx.backend());
  std::map<const TensorImpl*, Tensor> init;  // parameter or buffer -> its initial values (data only)
  std::vector<std::shared_ptr<Storage>> kept;
  struct ReleaseKept {
    std::vector<std::shared_ptr<Storage>>& kept;
    std::map<const TensorImpl*, Tensor>& init;
    MemoryBackend& meta;
    ~ReleaseKept() {
      init.clear();
      for (auto& s : kept) {
        meta.release(s->block);
        s->block = MemBlock{};
      }
    }
  } release_kept{kept, init, *meta};
  if (in_place) {
    model = build_model(spec.model, spec.weights);
    model->apply_finetune(spec.finetune);
    model->set_checkpoint(spec.checkpoint);
  } else {
    MemoryBackend* real = ctx.swap_memory(meta.get());
    struct Restore {
      EngineContext& c;
      MemoryBackend* m;
      ~Restore() { c.swap_memory(m); }
    } restore{ctx, real};
    model = build_model(spec.model);
    model->set_checkpoint(spec.checkpoint);
    if (data) {
      // each tensor keeps its values in `init`; the module's tensor gets a storage of its
      // own with no block (one per shared storage: tied weights stay tied)
      std::map<Storage*, std::shared_ptr<Storage>> fresh;
      auto keep = [&](const Tensor& t) {
        if (init.count(t.impl())) return;
        std::shared_ptr<Storage> old = t.impl()->storage;
        init[t.impl()] = make_view(t, t.sizes(), t.strides(), t.storage_offset());
        auto [it, added] = fresh.emplace(old.get(), nullptr);
        if (added) {
          ctx.storage_freed(*old);
          old->ctx = nullptr;  // released through `meta` (release_kept)
          kept.push_back(old);
          it->second = std::make_shared<Storage>();
          it->second->ctx = &ctx;
          it->second->nbytes = old->nbytes;
          it->second->tag = old->tag;
        }
        t.impl()->storage = it->second;
      };
      for (auto& p : model->parameters()) keep(p);
      std::function<void(Module&)> keep_buffers = [&](Module& m) {
        for (auto& [n, c] : m.children()) keep_buffers(*c);
        for (auto& [n, b] : m.own_buffers()) keep(b);
      };
      keep_buffers(*model);
      if (o.has_param_dtype && o.param_dtype != DType::Float32)
        for (auto& p : model->parameters()) p.impl()->dtype = o.param_dtype;
    }
    // the unsharded parameters compute in param_dtype; buffers keep their dtype (the policy
    // casts parameters only)
    if (!data && o.has_param_dtype && o.param_dtype != DType::Float32) {
      NoGradGuard ng;
      for (auto& p : model->parameters()) set_data(p, p.detach().to(o.param_dtype));
    }
    for (auto& p : model->parameters()) ctx.resize_storage(*p.storage(), 0);  // (none left with data)
    std::function<void(Module&)> drop_buffers = [&](Module& m) {
      for (auto& [n, c] : m.children()) drop_buffers(*c);
      for (auto& [n, b] : m.own_buffers())
        if (b.storage()->block) ctx.resize_storage(*b.storage(), 0);
    };
    drop_buffers(*model);
  }

  // fully_shard(block) for each block, then fully_shard(root): groups and their parameters
  Module* blocks = fsdp_blocks(*model);
  if (!blocks)
    throw std::invalid_argument("parallel.kind fsdp2 shards a model's blocks (model.layers[i] of an hf decoder); " +
                                model->type_name() + " is not wrapped yet (use gpt, llama or an hf decoder)");
  std::map<const TensorImpl*, FParam*> managed;
  // _move_states_to_device: a buffer the model made on the CPU goes to the device with the
  // fully_shard whose subtree holds it. The protocol's families make their rope tables on
  // the CPU; a Hugging Face model's buffers are made on the meta device and stay there.
  const bool cpu_buffers = spec.model.kind != "hf";
  std::set<const TensorImpl*> moved;
  std::function<void(Module&)> move_buffers = [&](Module& m) {
    if (!cpu_buffers) return;
    for (auto& [n, b] : m.own_buffers())
      if (moved.insert(b.impl()).second) {
        CategoryScope cs(Category::Other);
        ctx.resize_storage(*b.storage(), b.storage()->nbytes);
      }
    for (auto& [n, c] : m.children()) move_buffers(*c);
  };
  auto make_group = [&](Module& m, bool root) {
    move_buffers(m);
    auto g = std::make_unique<Group>();
    g->module = &m;
    g->is_root = root;
    g->reshard_after_forward = o.reshard_after_forward;
    for (auto& p : m.parameters()) {
      if (managed.count(p.impl())) continue;
      auto fp = std::make_unique<FParam>();
      fp->p = p;
      const int64_t rows = p.dim() ? p.size(0) : 1;
      const int64_t per_row = rows ? p.numel() / rows : 0;
      fp->rows = rows;
      fp->per_row = per_row;
      fp->padded_numel = fsdp_padded_rows(rows, o.world) * per_row;
      const DType unsharded = o.has_param_dtype ? o.param_dtype : p.dtype();
      fp->unsharded_bytes = size_t(fp->padded_numel * o.world) * itemsize(unsharded);
      managed[p.impl()] = fp.get();
      g->params.push_back(fp.get());
      I.params.push_back(std::move(fp));
    }
    return g;
  };
  std::vector<std::unique_ptr<Group>> block_groups;
  for (auto& [n, b] : blocks->children()) {
    block_groups.push_back(make_group(*b, false));
    if (in_place) shard_group_in_place(ctx, o, *block_groups.back());
  }
  I.groups.push_back(make_group(*model, true));
  if (in_place) shard_group_in_place(ctx, o, *I.groups.back());
  for (auto& g : block_groups) I.groups.push_back(std::move(g));
  for (auto& g : I.groups) I.by_module[g->module] = g.get();
  for (auto& p : model->parameters()) I.param_order.push_back(managed.at(p.impl()));
  if (in_place) {
    for (auto& p : model->parameters()) f->sharded_.push_back(managed.at(p.impl())->sharded);
    install_hooks(f);
    return f;
  }

  // model.to_empty(device): Module._apply order (children, then own parameters, then
  // buffers); each parameter gets its unpadded local shard, each buffer its whole size.
  // After an FSDP module's subtree, reset_sharded_param pads shards that are uneven.
  const DType orig = DType::Float32;
  // A parameter several modules hold (tied weights) is materialised by each holder in turn
  // (Module._apply sets param.data per module): the later block replaces the earlier,
  // which is freed once the new one exists.
  std::map<const TensorImpl*, Tensor> local;  // unpadded to_empty result
  auto shard_dims = [&](FParam& fp, int64_t rows_of) {
    return rest_shape(fp.p.sizes().empty() ? Shape{1} : fp.p.sizes(), rows_of);
  };
  std::function<void(Module&)> to_empty = [&](Module& m) {
    for (auto& [n, c] : m.children()) to_empty(*c);
    for (auto& [n, p] : m.own_parameters()) {
      FParam& fp = *managed.at(p.impl());
      const int64_t rows = p.dim() ? p.size(0) : 1;
      const int64_t lr = fsdp_local_rows(rows, o.world, o.rank);
      CategoryScope cs(Category::Parameter);
      local[p.impl()] = make_tensor(shard_dims(fp, lr), orig, "fsdp_shard", Category::Parameter);
    }
    for (auto& [n, b] : m.own_buffers()) {  // empty_like: the new block, then the moved one freed
      CategoryScope cs(Category::Other);
      set_data(b, make_tensor(b.sizes(), b.dtype(), "to_empty", Category::Other));
      // the protocol copies its tables in after to_empty (Llama's cos/sin)
      if (data) copy_values(b, init.at(b.impl()));
    }
    auto it = I.by_module.find(&m);
    if (it == I.by_module.end()) return;
    for (FParam* fp : it->second->params) {
      Tensor& l = local.at(fp->p.impl());
      const int64_t rows = fp->p.dim() ? fp->p.size(0) : 1;
      const int64_t pr = fsdp_padded_rows(rows, o.world), lr = fsdp_local_rows(rows, o.world, o.rank);
      if (lr == pr) {
        fp->padded = l;
      } else {  // new_zeros(padded) and copy: the unpadded block goes
        fp->padded = make_tensor(shard_dims(*fp, pr), orig, "fsdp_shard", Category::Parameter);
        l.reset();
      }
      // reset_parameters on the local shard: the full build's rows of this rank
      if (data) fill_shard(fp->padded, init.at(fp->p.impl()), o.world, o.rank);
      Tensor v = make_view(fp->padded, shard_dims(*fp, lr), contiguous_strides(shard_dims(*fp, lr)), 0);
      v.impl()->is_view = false;  // a leaf nn.Parameter (DTensor local tensor)
      v.requires_grad_(fp->p.requires_grad());
      fp->sharded = v;
    }
  };
  to_empty(*model);
  local.clear();
  driver_use(DriverUse::NcclReload);  // reset_parameters' init kernels: the first loaded since NCCL's init
  for (auto& p : model->parameters()) f->sharded_.push_back(managed.at(p.impl())->sharded);
  install_hooks(f);
  return f;
}

}  // namespace vramlab::engine
