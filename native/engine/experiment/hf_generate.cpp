// Hugging Face generate() (transformers 5.17, generation/utils.py) as hf_protocol.py calls it:
// generate(input_ids, max_new_tokens=N, min_new_tokens=N, do_sample=False, pad_token_id=0,
// eos_token_id=None), the default dynamic cache. One loop for every hf architecture: the
// tensors generate() makes before decoding (special tokens, the 2-D attention mask and the
// position_ids derived from it, unfinished_sequences), then _sample's steps: the inputs
// prepare_inputs_for_generation clones, the model call, _update_model_kwargs_for_generation's
// grown position_ids and mask, the float32 next-token logits, argmax, the grown ids, the
// stopping criteria and StopCheck's flag. Each tensor lives as long as the Python name or dict
// entry holding it (PyTorch's allocator trace of generate(), frame by frame); same-size small
// temporaries follow the trace's order.
#include "engine/autocast/autocast.h"
#include "engine/core/grad_mode.h"
#include "engine/experiment/modes.h"
#include "engine/models/hf/causal_lm.h"
#include "engine/ops/common.h"
#include "engine/ops/ops.h"

namespace vramlab::engine {

namespace {

// rows of 0, 1, ... on data backends: generate()'s position_ids without padding
void fill_positions(const Tensor& t) {
  if (!t.has_data()) return;
  const int64_t n = t.size(1);
  for (int64_t b = 0; b < t.size(0); ++b) be().arange(t.slice(0, b, b + 1).view({n}), 0.0);
}

Tensor int64(const Shape& s, const char* op) { return make_tensor(s, DType::Int64, op); }

// outputs.logits[:, -1] as a (batch, vocab) view
Tensor last_logits(const Tensor& l) {
  return make_view(l, {l.size(0), l.size(2)}, {l.strides()[0], l.strides()[2]},
                   l.storage_offset() + (l.size(1) - 1) * l.strides()[1]);
}

struct ModelKwargs {
  Tensor attention_mask, position_ids;
};

// generate() up to _sample: the special-token tensors, has_right_padding, the attention mask
// and the position_ids (kept in generate()'s model_kwargs until it returns).
std::vector<Tensor> prepare(int64_t B, int64_t P, bool bos, ModelKwargs& kw) {
  std::vector<Tensor> held;
  // _prepare_special_tokens: the config's bos_token_id (when set) and pad_token_id=0 as int64
  // scalars (eos_token_id=None makes none)
  if (bos) held.push_back(int64({}, "tensor"));
  held.push_back(int64({}, "tensor"));
  if (B > 1) {
    // batched: has_right_padding = torch.sum(inputs_tensor[:, -1] == pad_token) > 0
    Tensor eq = bool_tensor(B, "eq");
    Tensor s = int64({}, "sum");
    int64({B}, "_to_copy");  // sum's int64 copy of the flags, freed at once
    eq.reset();
    held.push_back(bool_tensor(1, "gt"));
  }
  {
    // _prepare_attention_mask_for_generation
    Tensor dflt = int64({B, P}, "ones");
    Tensor pad_in;
    {
      // torch.isin(inputs_tensor, pad_token_id).any()
      Tensor a = bool_tensor(B * P, "isin"), b = bool_tensor(B * P, "isin"), c = bool_tensor(B * P, "isin");
      c.reset();
      b.reset();
      pad_in = bool_tensor(1, "any");
    }
    Tensor can_infer = bool_tensor(1, "mul");
    Tensor from_padding;
    {
      Tensor ne = bool_tensor(B * P, "ne");
      from_padding = int64({B, P}, "_to_copy");  // .long()
    }
    {
      // from_padding * can_infer + default * ~can_infer
      Tensor x = int64({B, P}, "mul");
      Tensor inv = bool_tensor(1, "bitwise_not");
      Tensor y = int64({B, P}, "mul");
      inv.reset();
      kw.attention_mask = int64({B, P}, "add");
    }
    from_padding.reset();
    pad_in.reset();
    can_infer.reset();
  }
  {
    // _prepare_position_ids_for_generation: attention_mask.long().cumsum(-1) - 1, then
    // masked_fill(attention_mask == 0, 0)
    Tensor c = int64({B, P}, "cumsum");
    // one row scans with CUB, whose temporary storage (1279 bytes for a row that fits one tile)
    // comes from the caching allocator
    if (B == 1) bool_tensor(1279, "cub_temp").reset();
    Tensor m1 = int64({B, P}, "sub");
    c.reset();
    Tensor z = bool_tensor(B * P, "eq");
    kw.position_ids = int64({B, P}, "masked_fill");
    fill_positions(kw.position_ids);
    z.reset();
  }
  return held;
}

// _update_model_kwargs_for_generation: position_ids and the mask grown by one column each;
// the old ones stay with whatever else holds them (generate()'s kwargs, the last inputs).
void update_kwargs(ModelKwargs& kw) {
  const int64_t B = kw.position_ids.size(0), L = kw.position_ids.size(1);
  Tensor old_pos = kw.position_ids, old_mask = kw.attention_mask;  // the function's locals
  {
    // torch.arange(1) + position_ids[..., -1:] + 1, then the cat
    Tensor r = int64({1}, "arange");
    Tensor a = int64({B, 1}, "add");
    r.reset();
    Tensor next = int64({B, 1}, "add");
    a.reset();
    kw.position_ids = int64({B, L + 1}, "cat");
    fill_positions(kw.position_ids);
  }
  {
    // torch.cat([attention_mask, attention_mask.new_ones((B, 1))], dim=-1)
    Tensor ones = int64({B, 1}, "new_ones");
    kw.attention_mask = int64({B, L + 1}, "cat");
  }
}

// unfinished_sequences & ~stopping_criteria(input_ids, scores) (MaxLengthCriteria), then
// StopCheck: bool(unfinished_sequences.max() == 0).
void stopping(Tensor& unfinished) {
  const int64_t B = unfinished.size(0);
  Tensor inv;
  {
    Tensor done = bool_tensor(B, "full");  // StoppingCriteriaList: is_done = full(False)
    Tensor crit = bool_tensor(B, "full");  // MaxLengthCriteria's full((B,), is_done)
    Tensor both = bool_tensor(B, "bitwise_or");
    crit.reset();
    done = both;
    both.reset();
    inv = bool_tensor(B, "bitwise_not");
  }
  Tensor next = int64({B}, "bitwise_and");
  inv.reset();
  unfinished = next;
  next.reset();
  Tensor mx = int64({}, "max");
  Tensor eq = bool_tensor(1, "eq");
  mx.reset();
  eq.reset();
}

}  // namespace

void run_hf_generate(Measure& m, Model& base) {
  auto& model = dynamic_cast<hf::CausalLM&>(base);
  const RunSpec& spec = m.spec;
  const int64_t B = spec.batch, P = spec.prompt;
  Tensor input_ids;  // hf_protocol's x, then _sample's input_ids (the caller keeps x)
  {
    CategoryScope cs(Category::Input);
    input_ids = randint({B, P}, model.vocab());
  }
  m.read("input", m.allocated());
  m.mem.reset_peak();
  KvCache cache(size_t(model.num_blocks()), spec.cache == CacheKind::Static, spec.prompt + spec.new_tokens);
  std::vector<Tensor> cache_tensors;  // the cache's own scalars, with it
  Tensor x = input_ids;
  ModelKwargs kw;
  std::vector<Tensor> held;
  Tensor unfinished;
  {
    CategoryScope cs(Category::Other);
    held = prepare(B, P, model.generation_bos(), kw);
    unfinished = int64({B}, "ones");
  }
  // generate()'s own model_kwargs keep the first mask and position_ids until it returns
  ModelKwargs first = kw;
  {
    NoGradGuard ng;
    std::unique_ptr<AutocastGuard> ag;
    if (m.low) ag = std::make_unique<AutocastGuard>(true, m.low_dtype);
    Tensor logits, next_token_logits, next_token_scores, next_tokens;
    hf::GenerateInputs inputs;
    m.ctx.phase(true, "prefill");
    {
      hf::GenerateInputs prefill;
      {
        CategoryScope cs(Category::Other);
        prefill.input_ids = input_ids.clone();  // prepare_inputs_for_generation's clone
      }
      prefill.position_ids = kw.position_ids;
      prefill.attention_mask = kw.attention_mask;
      prefill.cache_tensors = &cache_tensors;
      CategoryScope cs(Category::Activation);
      logits = model.forward_generate(prefill, cache, 0);
    }
    m.ctx.phase(false, "prefill");
    m.ctx.phase(true, "decode");
    for (int64_t step = 0; step < spec.new_tokens; ++step) {
      CategoryScope cs(Category::Other);
      if (step > 0) {
        const int64_t L = input_ids.size(1);
        hf::GenerateInputs next;
        next.input_ids = input_ids.slice(1, L - 1, L).clone();
        next.position_ids = kw.position_ids.slice(1, L - 1, L).clone();
        next.attention_mask = kw.attention_mask;
        next.cache_tensors = &cache_tensors;
        inputs = next;  // the last step's inputs go with the old dict
        next = hf::GenerateInputs();
        CategoryScope acs(Category::Activation);
        logits = model.forward_generate(inputs, cache, L - 1);
      }
      update_kwargs(kw);
      {
        // outputs.logits[:, -1].to(copy=True, dtype=torch.float32); with no logits processor the
        // scores are the same tensor, so the last step's go at next_token_scores' rebinding
        CategoryScope lcs(Category::Logits);
        const Tensor last = last_logits(logits);
        next_token_logits = last.dtype() == DType::Float32 ? last.clone() : last.to(DType::Float32);
        next_token_scores = next_token_logits;
      }
      next_tokens = argmax(next_token_scores, false);
      {
        CategoryScope ics(Category::Input);
        input_ids = cat({input_ids, next_tokens.unsqueeze(1)}, 1);
      }
      stopping(unfinished);
      logits.reset();  // del outputs
    }
    m.ctx.phase(false, "decode");
  }
  // generate() returns the ids (the caller still holds its x): the cache, kwargs and
  // bookkeeping go with it
  cache.layers.clear();
  cache_tensors.clear();
  kw = ModelKwargs();
  first = ModelKwargs();
  held.clear();
  unfinished.reset();
  m.read("peak_generate", m.peak());
  m.read("after_generate", m.allocated());
  m.read("reserved_peak", m.reserved_peak());
}

}  // namespace vramlab::engine
