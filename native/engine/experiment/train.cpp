// mode "train": iterations (or one per spec.shapes entry) of accum micro-batches, each
// y = model(x), loss = loss_of(y) / accum, del y, loss.backward(); then optimizer.step()
// and zero_grad (then empty_cache() every empty_cache_every iterations), with the
// readings of both protocols.
#include "engine/core/grad_mode.h"
#include "engine/experiment/modes.h"
#include "engine/ops/ops.h"
#include "engine/optim/grad_scaler.h"
#include "engine/optim/optimizer.h"

namespace vramlab::engine {

void run_train(Measure& m, Model& model) {
  const RunSpec& spec = m.spec;
  EngineContext& ctx = m.ctx;
  const bool shaped = !spec.shapes.empty();
  auto batch_of = [&](size_t it) { return shaped ? spec.shapes[it].batch : spec.batch; };
  auto seq_of = [&](size_t it) { return shaped ? spec.shapes[it].seq : int64_t(0); };
  Batch b;
  {
    CategoryScope cs(Category::Input);
    b = model.make_batch(batch_of(0), seq_of(0), spec.loss);
  }
  m.read("input", m.allocated());

  std::vector<Tensor> trainable;
  for (auto& p : m.optimizer_params ? *m.optimizer_params : model.parameters())
    if (p.requires_grad()) trainable.push_back(p);
  std::unique_ptr<Optimizer> opt = make_optimizer(spec.optimizer, trainable);
  std::unique_ptr<GradScaler> scaler;
  if (m.options.grad_scaler) {
    if (spec.precision != Precision::Fp16) throw std::invalid_argument("grad_scaler applies to fp16 training");
    if (!opt) throw std::invalid_argument("grad_scaler needs an optimizer to step (optimizer is none)");
    scaler = std::make_unique<GradScaler>();
  }

  const size_t iterations = shaped ? spec.shapes.size() : size_t(spec.iterations);
  for (size_t it = 0; it < iterations; ++it) {
    const int64_t i = int64_t(it);
    ctx.phase(true, "iteration", i);
    if (shaped && it > 0) {
      // Each iteration's batch replaces the previous one: new input, then new target.
      CategoryScope cs(Category::Input);
      b.input = model.make_input(batch_of(it), seq_of(it));
      b.target = model.make_target(batch_of(it), seq_of(it), spec.loss);
    }
    m.mem.reset_peak();
    for (int64_t mb = 0; mb < spec.accum; ++mb) {
      ctx.phase(true, "microbatch", i, mb);
      Tensor y = m.forward(model, b.input);
      if (it == 0 && mb == 0) m.read("after_forward", m.allocated());
      Tensor loss;
      {
        CategoryScope cs(Category::Logits);
        loss = model.loss(y, b, spec.loss);
        if (!model.loss_in_forward() || spec.accum > 1) loss = div(loss, double(spec.accum));  // loss_of(y) / accum
      }
      y.reset();
      if (m.group && loss.has_data()) m.r.losses.push_back(loss.item());  // compared across ranks
      ctx.phase(true, "backward", i, mb);
      if (scaler) {
        Tensor scaled;
        {
          CategoryScope cs(Category::Logits);
          scaled = scaler->scale(loss);
        }
        scaled.backward();
      } else {
        loss.backward();
      }
      ctx.phase(false, "backward", i, mb);
      loss.reset();
      ctx.phase(false, "microbatch", i, mb);
    }
    const std::string p = "it" + std::to_string(it) + "_";
    m.read(p + "peak_fwd_bwd", m.peak());
    m.read(p + "after_backward", m.allocated());
    m.mem.reset_peak();
    ctx.phase(true, "optimizer_step", i);
    if (scaler) {
      scaler->step(*opt);
      scaler->update();
    } else if (opt) {
      opt->step();
    }
    ctx.phase(false, "optimizer_step", i);
    m.read(p + "peak_step", m.peak());
    ctx.phase(true, "zero_grad", i);
    if (opt)
      opt->zero_grad(spec.set_to_none);
    else
      model.zero_grad(spec.set_to_none);
    ctx.phase(false, "zero_grad", i);
    m.read(p + "after_zero_grad", m.allocated());
    if (spec.empty_cache_every > 0 && (i + 1) % spec.empty_cache_every == 0) m.mem.empty_cache();
    ctx.phase(false, "iteration", i);
  }
  m.read("reserved_peak", m.reserved_peak());
  if (shaped) {
    auto st = m.mem.allocator().stats();
    m.read("reserved_end", m.mem.memory_reserved() - m.rbase);
    m.read("num_device_alloc", st.num_device_alloc - m.base_device_alloc);
    m.read("num_device_free", st.num_device_free - m.base_device_free);
  }
}

}  // namespace vramlab::engine
