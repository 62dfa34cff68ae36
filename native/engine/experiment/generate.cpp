// mode "generate": eval, no_grad, autocast as for training. A prefill over the prompt
// (batch, prompt), then new_tokens - 1 steps of one token each (greedy argmax of the
// last logits), with a dynamic or static KV cache. Readings: after_prefill,
// peak_prefill, peak_decode, after_generate (caches still alive), reserved_peak. The hf
// family runs Hugging Face's generate() instead (hf_generate.cpp).

#include "engine/autocast/autocast.h"
#include "engine/core/grad_mode.h"
#include "engine/experiment/modes.h"
#include "engine/ops/ops.h"

namespace vramlab::engine {

namespace {
// logits[:, -1, :]: a (batch, vocab) view.
Tensor last_position(const Tensor& l) {
  return make_view(l, {l.size(0), l.size(2)}, {l.strides()[0], l.strides()[2]},
                   l.storage_offset() + (l.size(1) - 1) * l.strides()[1]);
}
}  // namespace

void run_generate(Measure& m, Model& model) {
  const RunSpec& spec = m.spec;
  if (!model.can_generate()) throw std::invalid_argument("mode \"generate\" needs a transformer family (gpt or llama)");
  if (spec.prompt < 1 || spec.new_tokens < 1)
    throw std::invalid_argument("generate needs prompt >= 1 and new_tokens >= 1");
  if (model.hf_generate()) return run_hf_generate(m, model);
  Tensor idx;
  {
    CategoryScope cs(Category::Input);
    idx = randint({spec.batch, spec.prompt}, model.vocab());
  }
  m.read("input", m.allocated());
  KvCache cache(size_t(model.num_blocks()), spec.cache == CacheKind::Static, spec.prompt + spec.new_tokens);
  {
    NoGradGuard ng;
    std::unique_ptr<AutocastGuard> ag;
    if (m.low) ag = std::make_unique<AutocastGuard>(true, m.low_dtype);
    CategoryScope cs(Category::Activation);
    m.ctx.phase(true, "prefill");
    m.mem.reset_peak();
    Tensor logits = model.forward_cached(idx, cache, 0);
    m.ctx.phase(false, "prefill");
    m.read("after_prefill", m.allocated());
    m.read("peak_prefill", m.peak());
    m.mem.reset_peak();
    m.ctx.phase(true, "decode");
    int64_t pos = spec.prompt;
    Tensor nxt;
    for (int64_t step = 0; step + 1 < spec.new_tokens; ++step) {
      nxt = argmax(last_position(logits), true);  // logits[:, -1, :].argmax(-1, keepdim=True)
      logits.reset();
      logits = model.forward_cached(nxt, cache, pos);
      ++pos;
    }
    m.ctx.phase(false, "decode");
    m.read("peak_decode", m.peak());
    logits.reset();
    nxt.reset();
  }
  m.read("after_generate", m.allocated());
  m.read("reserved_peak", m.reserved_peak());
}

}  // namespace vramlab::engine
