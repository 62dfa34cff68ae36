// modes "inference" (one forward under no_grad: after_forward and peak) and
// "loss_accumulation" (iterations forwards whose losses are summed; keep_loss_graph:
// total = total + loss keeps every graph alive, else total += loss.item()).
#include "engine/backends/backend.h"
#include "engine/core/grad_mode.h"
#include "engine/experiment/modes.h"
#include "engine/ops/ops.h"

namespace vramlab::engine {

namespace {
Batch make_input(Measure& m, Model& model) {
  Batch b;
  {
    CategoryScope cs(Category::Input);
    b = model.make_batch(m.spec.batch, 0, m.spec.loss);
  }
  m.read("input", m.allocated());
  return b;
}
}  // namespace

void run_inference(Measure& m, Model& model) {
  Batch b = make_input(m, model);
  NoGradGuard ng;
  m.mem.reset_peak();
  Tensor y = m.forward(model, b.input);
  m.read("after_forward", m.allocated());
  m.read("peak", m.peak());
}

void run_loss_accumulation(Measure& m, Model& model) {
  Batch b = make_input(m, model);
  m.mem.reset_peak();
  const bool keep = m.spec.keep_loss_graph;
  Tensor total = keep ? zeros({}) : Tensor();  // torch.zeros((), device="cuda") | 0.0
  Tensor loss;
  for (int64_t k = 0; k < m.spec.iterations; ++k) {
    {
      CategoryScope cs(Category::Logits);
      loss = model.loss(m.forward(model, b.input), b, m.spec.loss);  // loss = loss_of(fwd())
    }
    if (keep)
      total = add(total, loss);
    else if (m.ctx.backend().has_data())
      (void)loss.item();  // total += loss.item()
  }
  loss.reset();
  m.read("after_loop", m.allocated());
  m.read("peak", m.peak());
}

}  // namespace vramlab::engine
