#include "engine/experiment/experiment.h"

#include <map>
#include <stdexcept>

#include "engine/autocast/autocast.h"
#include "engine/backends/backend.h"
#include "engine/core/driver_use.h"
#include "engine/core/grad_mode.h"
#include "engine/experiment/modes.h"
#include "engine/experiment/session.h"
#include "engine/models/family.h"
#include "engine/ops/ops.h"
#include "device/sim_device.h"
#include "engine/parallel/ddp.h"
#include "engine/parallel/fsdp.h"
#include "engine/parallel/nccl.h"
#include "engine/parallel/process_group.h"

namespace vramlab::engine {

int64_t RunResult::at(const std::string& key) const {
  for (auto& [k, v] : readings)
    if (k == key) return v;
  throw std::out_of_range("no reading '" + key + "'");
}

void Measure::read(const std::string& key, int64_t value) {
  r.readings.emplace_back(key, value);
  EngineEvent e;
  e.kind = EngineEvent::Kind::Reading;
  e.name = key;
  e.value = value;
  ctx.emit(e);
}

Tensor Measure::forward(Model& m, const Tensor& x) {
  CategoryScope cs(Category::Activation);
  ctx.phase(true, "forward");
  Tensor y;
  if (low) {
    AutocastGuard ag(true, low_dtype);
    y = m(x);
  } else {
    y = m(x);
  }
  ctx.phase(false, "forward");
  return y;
}

namespace {

std::unique_ptr<Model> build_for(const RunSpec& spec) {
  std::unique_ptr<Model> model = build_model(spec.model, spec.weights);
  model->apply_finetune(spec.finetune);
  model->set_checkpoint(spec.checkpoint);
  return model;
}

}  // namespace

void check_run_spec(const RunSpec& spec) {
  // The contract validated every value at the boundary; what only the engine knows is
  // whether it models what the spec asks for. The model as the run would build it, on a
  // simulated device of unbounded size: families refuse what they do not model (an hf
  // architecture's unmodelled features), fine-tuning its targets, checkpointing its blocks.
  Session s = open_session("sim:custom:1024TiB", "sim", "");
  ContextGuard guard(*s.ctx);
  auto model = build_for(spec);
  if (spec.mode == RunMode::Generate && !model->can_generate()) {
    if (spec.model.kind == "hf")
      throw std::invalid_argument("mode \"generate\": " + model->type_name() + " generation is not modelled yet");
    throw std::invalid_argument("mode \"generate\" needs a transformer family; " + spec.model.kind +
                                " has no KV cache");
  }
}

namespace {

DType parse_mp_dtype(const std::string& d, const char* field) {
  if (d == "fp32") return DType::Float32;
  if (d == "bf16") return DType::BFloat16;
  if (d == "fp16") return DType::Float16;
  throw std::invalid_argument(std::string("spec.parallel.") + field + ": unknown dtype \"" + d +
                              "\" (expected fp32, bf16, fp16 or null)");
}

FsdpOptions fsdp_options(const RunSpec& spec, int64_t rank) {
  FsdpOptions o;
  o.world = spec.parallel.world;
  o.rank = rank;
  o.reshard_after_forward = spec.parallel.reshard_after_forward;
  if (!spec.parallel.param_dtype.empty()) {
    o.has_param_dtype = true;
    o.param_dtype = parse_mp_dtype(spec.parallel.param_dtype, "param_dtype");
    if (o.param_dtype == DType::Float32) o.has_param_dtype = false;  // == orig: no cast (init_dtype_attrs)
  }
  if (!spec.parallel.reduce_dtype.empty()) {
    o.has_reduce_dtype = true;
    o.reduce_dtype = parse_mp_dtype(spec.parallel.reduce_dtype, "reduce_dtype");
  }
  return o;
}

RunResult run_rank(const RunSpec& spec, const RunOptions& options, std::function<void(const EngineEvent&)> on_event,
                   int64_t rank, bool ddp_hold = false, const std::vector<uintptr_t>* addresses = nullptr,
                   ProcessGroup* group = nullptr);

// DDP: every rank runs the same program on the same sizes, so one simulation stands for
// all; what PyTorch leaves to timing (when the watchdog releases the first iteration's
// buckets, see ddp.h) is simulated at both ends, and every reading that differs between
// them is reported as the range [low, high]. The readings, timeline and peaks are the held
// side's: what fit and the OOM verdict must plan for (and what most launches measured).
RunResult run_ddp(const RunSpec& spec, const RunOptions& options, std::function<void(const EngineEvent&)> on_event,
                  const std::vector<uintptr_t>* addresses) {
  RunResult out = run_rank(spec, options, std::move(on_event), 0, true, addresses);
  RunResult released = run_rank(spec, options, nullptr, 0, false, addresses);
  for (size_t i = 0; i < out.readings.size(); ++i) {
    const auto& [k, v] = out.readings[i];
    const int64_t h = released.at(k);
    if (h != v) out.ranges.push_back({k, {std::min(v, h), std::max(v, h)}});
  }
  for (int64_t r = 0; r < spec.parallel.world; ++r) {
    out.rank_class.push_back(0);
    out.ranks.push_back(out.readings);
  }
  return out;
}

RunResult run_any(const RunSpec& spec, const RunOptions& options, std::function<void(const EngineEvent&)> on_event,
                  const std::vector<uintptr_t>* addresses, ProcessGroup* group) {
  if (spec.parallel.kind.empty()) return run_rank(spec, options, std::move(on_event), 0, false, addresses, group);
  if (spec.mode != RunMode::Train) throw std::invalid_argument("spec.parallel applies to mode \"train\"");
  if (spec.parallel.kind == "ddp") {
    // A rank of a real job runs its own program once, with the Works held: the side the
    // simulation reports as `readings` (see run_ddp).
    if (group) return run_rank(spec, options, std::move(on_event), group->rank(), true, addresses, group);
    return run_ddp(spec, options, std::move(on_event), addresses);
  }
  if (spec.parallel.kind != "fsdp2")
    throw std::invalid_argument("spec.parallel.kind \"" + spec.parallel.kind + "\" is not simulated yet");
  // a rank of a real job (or a group of one) runs its own shard's program
  if (group) return run_rank(spec, options, std::move(on_event), group->rank(), false, addresses, group);
  // Ranks differ only where a parameter's rows do not split evenly: rank r's shard (and
  // so its optimizer state) is smaller, or empty. Ranks with the same local row counts
  // run the same program on the same sizes: one simulation serves them all.
  std::vector<int64_t> dim0;
  {
    Session s = open_session("sim:custom:1024TiB", "sim", "");
    ContextGuard guard(*s.ctx);
    RoundingMemory meta;
    s.ctx->swap_memory(&meta);
    auto model = build_for(spec);  // LoRA adapters are sharded too
    for (auto& p : model->parameters()) dim0.push_back(p.dim() ? p.size(0) : 1);
    model.reset();
    s.ctx->swap_memory(s.memory.get());
  }
  const int64_t W = spec.parallel.world;
  std::map<std::vector<int64_t>, int64_t> first_rank;
  RunResult out;
  std::map<int64_t, RunResult> sims;
  for (int64_t r = 0; r < W; ++r) {
    std::vector<int64_t> sig;
    for (int64_t rows : dim0) sig.push_back(fsdp_local_rows(rows, W, r));
    if (first_rank.emplace(sig, r).second)
      sims.emplace(r, run_rank(spec, options, r == 0 ? on_event : nullptr, r, false, addresses));
  }
  out = std::move(sims.at(0));
  for (int64_t r = 0; r < W; ++r) {
    std::vector<int64_t> sig;
    for (int64_t rows : dim0) sig.push_back(fsdp_local_rows(rows, W, r));
    const int64_t c = first_rank.at(sig);
    out.rank_class.push_back(c);
    out.ranks.push_back(c == 0 ? out.readings : sims.at(c).readings);
  }
  return out;
}

}  // namespace

RunResult run_experiment(const RunSpec& spec, const RunOptions& options,
                         std::function<void(const EngineEvent&)> on_event, ProcessGroup* group) {
  return run_any(spec, options, std::move(on_event), nullptr, group);
}

RunResult run_experiment_at_addresses(const RunSpec& spec, const std::vector<uintptr_t>& segment_addresses,
                                      const RunOptions& options) {
  return run_any(spec, options, nullptr, &segment_addresses, nullptr);
}

namespace {

RunResult run_rank(const RunSpec& spec, const RunOptions& options, std::function<void(const EngineEvent&)> on_event,
                   int64_t rank, bool ddp_hold, const std::vector<uintptr_t>* addresses, ProcessGroup* group) {
  Session s = open_session(spec.device, options.backend, spec.alloc_conf);
  if (addresses) {
    auto* sim = dynamic_cast<SimDevice*>(s.device.get());
    if (!sim) throw std::invalid_argument("recorded segment addresses apply to the simulated device only");
    sim->set_address_script(*addresses);
  }
  EngineContext& ctx = *s.ctx;
  int64_t nccl = 0;
  if (!spec.parallel.kind.empty()) {
    // init_process_group + the protocol's warm-up all_reduce: the communicator exists
    // before the base reading, its buffers outside the allocator.
    auto* sim = dynamic_cast<SimDevice*>(s.device.get());
    if (sim) {
      nccl = nccl_device_bytes(spec.parallel.world);
      sim->hold_outside(uint64_t(nccl));
    } else if (!group) {
      throw std::invalid_argument(
          "spec.parallel runs on the simulated device (a sim: device) or as a launched job on cuda:N (vramlab_dist)");
    }  // a real job: the communicator already holds NCCL's own memory
  }
  ContextGuard guard(ctx);
  ctx.manual_seed(options.seed);
  ctx.on_event = std::move(on_event);
  ctx.sample_every = options.sample_every;
  ctx.allow_tf32 = spec.precision == Precision::Tf32;

  RunResult r;
  r.nccl = nccl;
  Measure m{ctx, *s.memory, spec, options, r};
  m.group = group;
  m.low = spec.precision == Precision::Fp16 || spec.precision == Precision::Bf16;
  m.low_dtype = spec.precision == Precision::Bf16 ? DType::BFloat16 : DType::Float16;

  warm_up(options.warmup);
  // the protocol's warm-up all_reduce: NCCL's communicator comes up in the address space.
  // Probed for dist_protocol.py's families; an hf model's DDP launch (Qwen2 bf16 weights,
  // checkpointed) reserves 2 MiB more under it, so hf launches keep the single-GPU layout.
  if (spec.parallel.world > 1 && spec.model.kind != "hf") driver_use(DriverUse::NcclInit);
  r.base = s.memory->memory_allocated();
  m.rbase = s.memory->memory_reserved();
  auto st = s.memory->allocator().stats();
  m.base_device_alloc = st.num_device_alloc;
  m.base_device_free = st.num_device_free;

  std::unique_ptr<Model> model;
  std::shared_ptr<Fsdp> fsdp;
  std::shared_ptr<Ddp> ddp;
  {
    ctx.phase(true, "build_model");
    if (spec.parallel.kind == "fsdp2") {
      if (!group && (!ctx.on_device() || options.backend == "cuda" || spec.device.rfind("cuda:", 0) == 0))
        throw std::invalid_argument("spec.parallel runs on the simulated device only (a sim: device)");
      // the lab's families are built on the meta device in fp32; hf models are built as
      // users build them (any weights, LoRA) and sharded in place
      if (spec.model.kind != "hf" && (spec.weights != DType::Float32 || spec.finetune.method != "full"))
        throw std::invalid_argument("spec.parallel fsdp2 trains fp32 weights in full (weights fp32, finetune full)");
      FsdpOptions fo = fsdp_options(spec, rank);
      fo.group = group;
      fsdp = fully_shard_model(spec, fo, model);
      if (fo.has_param_dtype) m.low = false;  // the policy casts; the protocol runs no autocast
      m.optimizer_params = &fsdp->sharded_parameters();
    } else if (spec.parallel.kind == "ddp") {
      if (!group && (!ctx.on_device() || options.backend == "cuda" || spec.device.rfind("cuda:", 0) == 0))
        throw std::invalid_argument("spec.parallel runs on the simulated device only (a sim: device)");
      if (!(spec.parallel.bucket_cap_mb > 0))
        throw std::invalid_argument("spec.parallel.bucket_cap_mb must be above 0");
      model = build_for(spec);
      DdpOptions d;
      d.world = spec.parallel.world;
      d.bucket_bytes_cap = size_t(spec.parallel.bucket_cap_mb * 1024 * 1024);  // int(bucket_cap_mb * 1024 * 1024)
      d.gradient_as_bucket_view = spec.parallel.gradient_as_bucket_view;
      d.hold = ddp_hold;
      d.group = group;
      ddp = distributed_data_parallel(*model, d);
    } else {
      model = build_for(spec);
    }
    ctx.phase(false, "build_model");
  }
  r.num_parameters = model->num_parameters();
  for (auto& p : model->parameters())
    if (p.requires_grad()) r.trainable_parameters += p.numel();
  m.read("params", m.allocated());

  const double t0 = ctx.modeled_time_s();
  switch (spec.mode) {
    case RunMode::Generate:
      run_generate(m, *model);
      break;
    case RunMode::Inference:
      run_inference(m, *model);
      break;
    case RunMode::LossAccumulation:
      run_loss_accumulation(m, *model);
      break;
    case RunMode::Train:
      run_train(m, *model);
      break;
  }
  r.modeled_time_ms = (ctx.modeled_time_s() - t0) * 1e3;
  if (group) r.params_fingerprint = fsdp ? fsdp->fingerprint(*group) : group->fingerprint(model->parameters());
  r.sdpa_backend = ctx.last_sdpa_backend;
  r.memory_summary = s.memory->memory_summary();
  return r;
}

}  // namespace

RunResult run_seed_example(const std::string& device) {
  Session s = open_session(device, "sim", "");
  ContextGuard guard(*s.ctx);
  MemoryBackend& mem = *s.memory;
  RunResult r;
  {
    // Warm-up: a plain matmul creates the forward thread's cuBLAS workspace only.
    Tensor a = randn({8, 8}), b = randn({8, 8});
    Tensor c = mm(a, b);
  }
  r.base = mem.memory_allocated();
  auto read = [&](const char* k, int64_t v) { r.readings.emplace_back(k, v); };
  read("base", r.base);
  auto model = make_mlp(1024, 2048, 2, 10);
  read("after_model", mem.memory_allocated());
  Tensor x = randn({256, 1024});
  read("after_input", mem.memory_allocated());
  Tensor y = (*model)(x);
  read("after_forward", mem.memory_allocated());
  Tensor loss = sum(y);
  loss.backward();
  read("after_backward", mem.memory_allocated());
  read("peak", mem.max_memory_allocated());
  read("reserved", mem.memory_reserved());
  r.num_parameters = model->num_parameters();
  r.memory_summary = mem.memory_summary();
  return r;
}

}  // namespace vramlab::engine
