#include "engine/protocol.h"

#include <stdexcept>

#include "allocator/caching_allocator.h"
#include "engine/autocast/autocast.h"
#include "engine/backends/allocator_memory.h"
#include "engine/backends/backend.h"
#include "engine/core/grad_mode.h"
#include "engine/nn/module.h"
#include "engine/ops/ops.h"
#include "engine/optim/grad_scaler.h"
#include "engine/optim/optimizer.h"

namespace vramlab::engine {

int64_t ProtocolResult::at(const std::string& key) const {
  for (auto& [k, v] : readings)
    if (k == key) return v;
  throw std::out_of_range("no reading '" + key + "'");
}

namespace {

struct Session {
  std::shared_ptr<Device> device;
  std::shared_ptr<alloc::CachingAllocator> allocator;
  std::unique_ptr<AllocatorMemory> memory;
  std::unique_ptr<EngineContext> ctx;
};

Session open_session(const std::string& device_id, const std::string& backend, const std::string& conf) {
  Session s;
  s.device = std::shared_ptr<Device>(open_device(device_id));
  s.allocator = std::make_shared<alloc::CachingAllocator>(s.device, alloc::AllocatorSettings::parse(conf));
  s.memory = std::make_unique<AllocatorMemory>(s.allocator);
  std::shared_ptr<Backend> be;
  if (backend == "sim") {
    be = make_sim_backend(s.device->info());
  } else if (backend == "cpu") {
    be = make_cpu_backend();
  } else if (backend == "cuda") {
    std::string why;
    be = make_cuda_backend(&why);
    if (!be) throw std::runtime_error("cuda backend unavailable: " + why);
  } else {
    throw std::invalid_argument("unknown backend '" + backend + "' (expected sim, cpu or cuda)");
  }
  s.ctx = std::make_unique<EngineContext>(be, s.memory.get(), s.device->info());
  return s;
}

CheckpointMode parse_ckpt(const std::string& s) {
  if (s == "none") return CheckpointMode::None;
  if (s == "block") return CheckpointMode::Block;
  if (s == "sqrt") return CheckpointMode::Sqrt;
  if (s == "every_k" || s == "every-k" || s == "everyk") return CheckpointMode::EveryK;
  throw std::invalid_argument("unknown checkpoint mode '" + s + "' (expected none, block, sqrt or every_k)");
}

void validate(const ProtocolConfig& c) {
  auto pos = [](int64_t v, const char* what) {
    if (v <= 0) throw std::invalid_argument(std::string(what) + " must be positive, got " + std::to_string(v));
  };
  pos(c.batch, "batch");
  pos(c.depth, "depth");
  pos(c.iterations, "iterations");
  pos(c.accum, "accum");
  if (c.model == "mlp") {
    pos(c.in, "in");
    pos(c.hidden, "hidden");
    pos(c.out, "out");
    if (c.checkpoint != "none")
      throw std::invalid_argument("checkpointing applies to the residual model's blocks; mlp has none");
  } else if (c.model == "residual") {
    pos(c.dim, "dim");
  } else {
    throw std::invalid_argument("unknown model '" + c.model + "' (expected mlp or residual)");
  }
  if (c.precision != "fp32" && c.precision != "tf32" && c.precision != "fp16" && c.precision != "bf16")
    throw std::invalid_argument("unknown precision '" + c.precision + "' (expected fp32, tf32, fp16 or bf16)");
  if (c.mode != "train" && c.mode != "inference" && c.mode != "loss_accumulation")
    throw std::invalid_argument("unknown mode '" + c.mode + "' (expected train, inference or loss_accumulation)");
  if (c.loss != "sum" && c.loss != "mse" && c.loss != "cross_entropy")
    throw std::invalid_argument("unknown loss '" + c.loss + "' (expected sum, mse or cross_entropy)");
  if (c.warmup != "linear" && c.warmup != "matmul")
    throw std::invalid_argument("unknown warmup '" + c.warmup + "' (expected linear or matmul)");
  if (c.grad_scaler) {
    if (c.precision != "fp16")
      throw std::invalid_argument("grad_scaler applies to fp16 training (precision is " + c.precision + ")");
    if (c.mode != "train") throw std::invalid_argument("grad_scaler applies to mode train (mode is " + c.mode + ")");
    if (c.optimizer == "none") throw std::invalid_argument("grad_scaler needs an optimizer to step (optimizer is none)");
  }
}

// Creates both threads' cuBLAS workspaces before base is read, as the reference
// runs' warm-ups did (bench/torch/protocol.py warm_up). "linear" also creates the
// forward thread's cuBLASLt workspace (addmm with a bias); backward's mm does not.
void warm_up(const std::string& kind) {
  CategoryScope cs(Category::Temporary);
  Tensor a = randn({64, 64});
  a.requires_grad_(true);
  if (kind == "linear") {
    Linear lin(64, 64);
    sum(lin(a)).backward();
  } else {
    sum(mm(a, a)).backward();
  }
}

}  // namespace

ProtocolResult run_protocol(const ProtocolConfig& cfg, std::function<void(const EngineEvent&)> on_event) {
  validate(cfg);
  CheckpointMode ckpt = parse_ckpt(cfg.checkpoint);
  Session s = open_session(cfg.device, cfg.backend, cfg.allocator_conf);
  EngineContext& ctx = *s.ctx;
  ContextGuard guard(ctx);
  ctx.manual_seed(cfg.seed);
  ctx.on_event = std::move(on_event);
  ctx.sample_every = cfg.sample_every;
  ctx.allow_tf32 = cfg.precision == "tf32";
  bool low = cfg.precision == "fp16" || cfg.precision == "bf16";
  DType low_dtype = cfg.precision == "bf16" ? DType::BFloat16 : DType::Float16;

  ProtocolResult r;
  MemoryBackend& mem = ctx.memory();
  warm_up(cfg.warmup);
  r.base = mem.memory_allocated();
  auto read = [&](const std::string& key, int64_t absolute) {
    r.readings.emplace_back(key, absolute - r.base);
    EngineEvent e;
    e.kind = EngineEvent::Kind::Reading;
    e.name = key;
    e.value = absolute - r.base;
    ctx.emit(e);
  };

  std::shared_ptr<Module> model;
  {
    ctx.phase(true, "build_model");
    auto seq = cfg.model == "mlp" ? make_mlp(cfg.in, cfg.hidden, cfg.depth, cfg.out)
                                  : make_residual(cfg.dim, cfg.depth);
    model = ckpt == CheckpointMode::None
                ? std::static_pointer_cast<Module>(seq)
                : std::static_pointer_cast<Module>(
                      std::make_shared<CheckpointedSequential>(seq, ckpt, size_t(cfg.checkpoint_k)));
    model->set_path("");
    ctx.phase(false, "build_model");
  }
  r.num_parameters = model->num_parameters();
  read("params", mem.memory_allocated());
  Tensor x, target;
  {
    CategoryScope cs(Category::Input);
    x = randn({cfg.batch, cfg.model == "mlp" ? cfg.in : cfg.dim});
    // The loss's target, made with the input (bench/torch/protocol.py).
    const int64_t n_out = cfg.model == "mlp" ? cfg.out : cfg.dim;
    if (cfg.loss == "mse") target = randn({cfg.batch, n_out});
    else if (cfg.loss == "cross_entropy") target = randint({cfg.batch}, n_out);
  }
  read("input", mem.memory_allocated());

  // loss_of(y): y.float() is y itself in fp32 and a cast under autocast. mse_loss saves
  // that fp32 output and the target until backward; cross_entropy's log_softmax saves its
  // result and nll_loss the log-probs, labels and total_weight (derivatives.yaml).
  auto loss_of = [&](const Tensor& y) {
    Tensor yf = y.float_();
    if (cfg.loss == "mse") return mse_loss(yf, target);
    if (cfg.loss == "cross_entropy") return cross_entropy(yf, target);
    return sum(yf);
  };

  auto forward = [&]() {
    CategoryScope cs(Category::Activation);
    ctx.phase(true, "forward");
    Tensor y;
    if (low) {
      AutocastGuard ag(true, low_dtype);
      y = (*model)(x);
    } else {
      y = (*model)(x);
    }
    ctx.phase(false, "forward");
    return y;
  };
  double t0 = ctx.modeled_time_s();

  if (cfg.mode == "inference") {
    NoGradGuard ng;
    mem.reset_peak();
    Tensor y = forward();
    read("after_forward", mem.memory_allocated());
    read("peak", mem.max_memory_allocated());
  } else if (cfg.mode == "loss_accumulation") {
    mem.reset_peak();
    Tensor total, loss;
    double total_value = 0;
    for (int k = 0; k < cfg.loss_steps; ++k) {
      {
        CategoryScope cs(Category::Activation);
        loss = loss_of(forward());  // loss = loss_of(fwd()): y dies with the call
      }
      if (cfg.keep_loss_graph) {
        total = total.defined() ? add(total, loss) : add(loss, 0.0);  // total = total + loss
      } else if (ctx.backend().has_data()) {
        total_value += loss.item();  // total += loss.item()
      }
    }
    (void)total_value;
    loss.reset();
    read("after_loop", mem.memory_allocated());
    read("peak", mem.max_memory_allocated());
  } else {
    std::unique_ptr<Optimizer> opt;
    if (cfg.optimizer == "sgd") {
      SGDOptions o;
      o.lr = cfg.lr;
      o.momentum = cfg.momentum;
      o.nesterov = cfg.nesterov;
      o.weight_decay = cfg.weight_decay < 0 ? 0 : cfg.weight_decay;
      o.foreach = cfg.foreach;
      opt = std::make_unique<SGD>(model->parameters(), o);
    } else if (cfg.optimizer == "adam" || cfg.optimizer == "adamw") {
      AdamOptions o = cfg.optimizer == "adamw" ? adamw_options(cfg.lr) : AdamOptions{};
      o.lr = cfg.lr;
      if (cfg.weight_decay >= 0) o.weight_decay = cfg.weight_decay;
      o.foreach = cfg.foreach;
      opt = std::make_unique<Adam>(model->parameters(), o);
    } else if (cfg.optimizer != "none") {
      throw std::invalid_argument("unknown optimizer '" + cfg.optimizer + "' (expected none, sgd, adam or adamw)");
    }
    std::unique_ptr<GradScaler> scaler;
    if (cfg.grad_scaler) scaler = std::make_unique<GradScaler>();
    for (int it = 0; it < cfg.iterations; ++it) {
      ctx.phase(true, "iteration", it);
      mem.reset_peak();
      for (int m = 0; m < cfg.accum; ++m) {
        ctx.phase(true, "microbatch", it, m);
        Tensor y = forward();
        if (it == 0 && m == 0) read("after_forward", mem.memory_allocated());
        Tensor loss;
        {
          CategoryScope cs(Category::Activation);
          loss = div(loss_of(y), double(cfg.accum));  // loss_of(y) / accum
        }
        y.reset();
        ctx.phase(true, "backward", it, m);
        if (scaler) {
          Tensor scaled;
          {
            CategoryScope cs(Category::Activation);
            scaled = scaler->scale(loss);
          }
          scaled.backward();  // scaler.scale(loss).backward(): loss stays alive meanwhile
        } else {
          loss.backward();
        }
        ctx.phase(false, "backward", it, m);
        loss.reset();
        ctx.phase(false, "microbatch", it, m);
      }
      std::string p = "it" + std::to_string(it) + "_";
      read(p + "peak_fwd_bwd", mem.max_memory_allocated());
      read(p + "after_backward", mem.memory_allocated());
      mem.reset_peak();
      ctx.phase(true, "optimizer_step", it);
      if (scaler) {
        scaler->step(*opt);  // skipped when unscale_ found an inf
        scaler->update();
      } else if (opt) {
        opt->step();
      }
      ctx.phase(false, "optimizer_step", it);
      read(p + "peak_step", mem.max_memory_allocated());
      ctx.phase(true, "zero_grad", it);
      if (opt) opt->zero_grad(cfg.set_to_none);
      else model->zero_grad(cfg.set_to_none);
      ctx.phase(false, "zero_grad", it);
      read(p + "after_zero_grad", mem.memory_allocated());
      ctx.phase(false, "iteration", it);
    }
  }
  r.modeled_time_ms = (ctx.modeled_time_s() - t0) * 1e3;
  r.memory_summary = mem.memory_summary();
  return r;
}

ProtocolResult run_seed_example(const std::string& device) {
  Session s = open_session(device, "sim", "");
  ContextGuard guard(*s.ctx);
  MemoryBackend& mem = s.ctx->memory();
  ProtocolResult r;
  {
    // Warm-up: a plain matmul creates the forward thread's cuBLAS workspace only.
    Tensor a = randn({8, 8}), b = randn({8, 8});
    Tensor c = mm(a, b);
  }
  r.base = mem.memory_allocated();
  auto read = [&](const char* k, int64_t v) { r.readings.emplace_back(k, v); };
  read("base", r.base);
  std::shared_ptr<Sequential> model;
  {
    model = make_mlp(1024, 2048, 2, 10);
  }
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
