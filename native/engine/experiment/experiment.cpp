#include "engine/experiment/experiment.h"

#include <stdexcept>

#include "engine/autocast/autocast.h"
#include "engine/backends/backend.h"
#include "engine/core/grad_mode.h"
#include "engine/experiment/modes.h"
#include "engine/experiment/session.h"
#include "engine/models/family.h"
#include "engine/ops/ops.h"

namespace vramlab::engine {

int64_t RunResult::at(const std::string& key) const {
  for (auto& [k, v] : readings)
    if (k == key) return v;
  throw std::out_of_range("no reading '" + key + "'");
}

DType parse_weights(const std::string& w) {
  if (w == "fp32") return DType::Float32;
  if (w == "bf16") return DType::BFloat16;
  if (w == "fp16") return DType::Float16;
  throw std::invalid_argument("unknown weights dtype \"" + w + "\" (expected fp32, bf16 or fp16)");
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

void one_of(const std::string& field, const std::string& got, std::initializer_list<const char*> allowed) {
  std::string list;
  for (const char* a : allowed) {
    if (got == a) return;
    list += std::string(list.empty() ? "" : ", ") + a;
  }
  throw std::invalid_argument("spec." + field + ": unknown value \"" + got + "\" (expected " + list + ")");
}

std::unique_ptr<Model> build_for(const RunSpec& spec) {
  std::unique_ptr<Model> model = build_model(spec.model, parse_weights(spec.weights));
  model->apply_finetune(spec.finetune);
  model->set_checkpoint(spec.checkpoint);
  return model;
}

void check_values(const RunSpec& spec) {
  one_of("precision", spec.precision, {"fp32", "tf32", "fp16", "bf16"});
  one_of("weights", spec.weights, {"fp32", "bf16", "fp16"});
  one_of("mode", spec.mode, {"train", "inference", "loss_accumulation", "generate"});
  one_of("loss", spec.loss, {"sum", "mse", "cross_entropy"});
  one_of("cache", spec.cache, {"dynamic", "static"});
  if (spec.batch < 1 || spec.iterations < 1 || spec.accum < 1)
    throw std::invalid_argument("spec.batch, iterations and accum must be at least 1");
}

}  // namespace

void check_run_spec(const RunSpec& spec) {
  check_values(spec);
  // The model as the run would build it, on a simulated device of unbounded size:
  // families check their arguments, fine-tuning its targets, checkpointing its blocks.
  Session s = open_session("sim:custom:1024TiB", "sim", "");
  ContextGuard guard(*s.ctx);
  auto model = build_for(spec);
  if (spec.mode == "generate" && !model->can_generate())
    throw std::invalid_argument("mode \"generate\" needs a transformer family; " + spec.model.kind +
                                " has no KV cache");
}

RunResult run_experiment(const RunSpec& spec, const RunOptions& options,
                         std::function<void(const EngineEvent&)> on_event) {
  check_values(spec);
  Session s = open_session(spec.device, options.backend, spec.alloc_conf);
  EngineContext& ctx = *s.ctx;
  ContextGuard guard(ctx);
  ctx.manual_seed(options.seed);
  ctx.on_event = std::move(on_event);
  ctx.sample_every = options.sample_every;
  ctx.allow_tf32 = spec.precision == "tf32";

  RunResult r;
  Measure m{ctx, *s.memory, spec, options, r};
  m.low = spec.precision == "fp16" || spec.precision == "bf16";
  m.low_dtype = spec.precision == "bf16" ? DType::BFloat16 : DType::Float16;

  warm_up(options.warmup);
  r.base = s.memory->memory_allocated();
  m.rbase = s.memory->memory_reserved();
  auto st = s.memory->allocator().stats();
  m.base_device_alloc = st.num_device_alloc;
  m.base_device_free = st.num_device_free;

  std::unique_ptr<Model> model;
  {
    ctx.phase(true, "build_model");
    model = build_for(spec);
    ctx.phase(false, "build_model");
  }
  r.num_parameters = model->num_parameters();
  for (auto& p : model->parameters())
    if (p.requires_grad()) r.trainable_parameters += p.numel();
  m.read("params", m.allocated());

  const double t0 = ctx.modeled_time_s();
  if (spec.mode == "generate")
    run_generate(m, *model);
  else if (spec.mode == "inference")
    run_inference(m, *model);
  else if (spec.mode == "loss_accumulation")
    run_loss_accumulation(m, *model);
  else if (spec.mode == "train")
    run_train(m, *model);
  else
    throw std::invalid_argument("unknown mode \"" + spec.mode +
                                "\" (expected train, inference, loss_accumulation or generate)");
  r.modeled_time_ms = (ctx.modeled_time_s() - t0) * 1e3;
  r.sdpa_backend = ctx.last_sdpa_backend;
  r.memory_summary = s.memory->memory_summary();
  return r;
}

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
