#include "engine/models/hf/modules.h"

#include <cmath>
#include <stdexcept>

#include "engine/autocast/autocast.h"
#include "engine/core/driver_use.h"
#include "engine/core/grad_mode.h"
#include "engine/ops/common.h"
#include "engine/ops/cub_temp.h"
#include "engine/ops/ops.h"

namespace vramlab::engine::hf {

void Container::add_parameter(const std::string& name, const Tensor& p) {
  Tensor t = p;
  t.requires_grad_(true);
  register_parameter(name, t);
}

std::shared_ptr<Module> Container::get(const std::string& name) const {
  for (auto& [n, c] : children_)
    if (n == name) return c;
  throw std::logic_error(type_ + " has no module " + name);
}

RmsNorm::RmsNorm(int64_t dim, double eps, DType dtype, NormStyle style) : eps_(eps), style_(style) {
  const bool gemma = style == NormStyle::Gemma;
  // nn.Parameter(torch.ones(dim)) / torch.zeros(dim) in the default dtype
  weight = new_parameter({dim}, dtype, gemma ? "zeros" : "ones");
  {
    NoGradGuard ng;
    fill_(weight, gemma ? 0.0 : 1.0);
  }
  weight.requires_grad_(true);
  register_parameter("weight", weight);
}

Tensor RmsNorm::forward(const Tensor& x) {
  if (style_ == NormStyle::Gemma) {
    // output = self._norm(x.float()); output = output * (1.0 + self.weight.float()); output.type_as(x)
    Tensor out;
    {
      Tensor xf = x.float_();
      Tensor r;
      {
        Tensor m;
        {
          Tensor p = pow(xf, 2.0);
          m = mean(p, {-1}, true);
        }
        Tensor a = add(m, eps_);
        m.reset();
        r = rsqrt(a);
      }
      out = mul(xf, r);
    }
    {
      Tensor w1;
      {
        Tensor wf = weight.float_();
        w1 = add(wf, 1.0);
      }
      out = mul(out, w1);
    }
    return out.to(x.dtype());
  }
  // input_dtype = x.dtype; h = x.to(float32); variance = h.pow(2).mean(-1, keepdim=True)
  // h = h * torch.rsqrt(variance + eps); return self.weight * h.to(input_dtype)
  Tensor h = x.float_();
  Tensor variance;
  {
    Tensor p = pow(h, 2.0);
    variance = mean(p, {-1}, true);
  }
  {
    // the rsqrt temporary goes when the product is made, before the rebinding frees the
    // float32 copy (they differ where nothing saves them: checkpointed or no-grad forwards)
    Tensor hn;
    {
      Tensor r;
      {
        Tensor a = add(variance, eps_);
        r = rsqrt(a);
      }
      hn = mul(h, r);
    }
    h = hn;
  }
  Tensor out;
  if (style_ == NormStyle::Olmo) {
    Tensor p = mul(weight, h);
    out = p.to(x.dtype());
  } else {
    Tensor t = h.to(x.dtype());
    out = mul(weight, t);
  }
  // the frame's locals go in slot order at return: hidden_states, then variance
  h.reset();
  variance.reset();
  return out;
}

void rotary_cos_sin(const Tensor& inv_freq, const Tensor& position_ids, DType dtype, double theta, Tensor& cos,
                    Tensor& sin, int64_t first) {
  NoGradGuard ng;
  AutocastGuard off(false, DType::Float32);  // maybe_autocast(enabled=False)
  // position_ids (1, T) in training, (batch, T) in generate(): the tables follow them
  const int64_t P = position_ids.size(0), T = position_ids.size(1), half = inv_freq.size(0), D = 2 * half;
  // every local (position_ids_expanded, freqs, emb, cos, sin) lives until the return
  Tensor pos = position_ids.unsqueeze(1).float_();                  // position_ids[:, None, :].float()
  Tensor freqs = make_tensor({P, half, T}, DType::Float32, "bmm");  // inv_freq_expanded @ position_ids_expanded
  Tensor emb = make_tensor({P, T, D}, DType::Float32, "cat");       // cat((freqs, freqs), -1)
  Tensor c32, s32;
  {
    Tensor c0 = make_tensor({P, T, D}, DType::Float32, "cos");  // emb.cos() * attention_scaling
    c32 = mul(c0, 1.0);
  }
  {
    Tensor s0 = make_tensor({P, T, D}, DType::Float32, "sin");
    s32 = mul(s0, 1.0);
  }
  if (c32.has_data()) {
    // angle[p, t, i] = (first + t) * inv_freq[i] in both halves (cat((freqs, freqs), -1)),
    // every row from the same position (generate() without padding)
    for (int64_t p = 0; p < P; ++p)
      for (int64_t h : {int64_t(0), half}) {
        Tensor ch = make_view(c32, {T, half}, {D, 1}, p * T * D + h),
               sh = make_view(s32, {T, half}, {D, 1}, p * T * D + h);
        be().rope_tables(ch, sh, theta, first);
      }
  }
  cos = c32.to(dtype);
  sin = s32.to(dtype);
  // at return CPython clears the locals in slot order
  pos.reset();
  freqs.reset();
  emb.reset();
  c32.reset();
  s32.reset();
}

Tensor positions_from(const Tensor& ar, int64_t past) {
  if (!ar.has_data()) return add(ar, double(past));
  Tensor out = make_tensor(ar.sizes(), DType::Int64, "add");
  be().arange(out, double(past));
  return out;
}

void packed_sequence_check(const Tensor& position_ids, int64_t batch) {
  // find_packed_sequence_indices: its locals (first_dummy_value, position_diff,
  // packed_sequence_mask) live until it returns.
  NoGradGuard ng;
  const int64_t T = position_ids.size(1);
  Tensor first = make_tensor({batch, 1}, DType::Int64, "sub");  // position_ids[:, :1] - 1
  Tensor diff;
  {
    // torch.diff(position_ids, prepend=first_dummy_value, dim=-1): the joined input, then the difference
    Tensor joined = make_tensor({batch, T + 1}, DType::Int64, "cat");
    diff = make_tensor({batch, T}, DType::Int64, "sub");
  }
  Tensor mask;
  {
    // (position_diff != 1).cumsum(-1): the int64 result, then cumsum's cast of its bool
    // input (impl_func_cum_ops: self.to(result dtype)); a scan over the whole tensor (one
    // row) runs through CUB, whose scratch ATen takes from the allocator (scan_dim).
    Tensor ne = bool_tensor(batch * T, "ne");
    mask = make_tensor({batch, T}, DType::Int64, "cumsum");
    Tensor cast = make_tensor({batch, T}, DType::Int64, "cumsum");
    if (batch == 1) scratch(cub_scan_bytes(T), "cub::DeviceScan::InclusiveScan");
    driver_use(DriverUse::FirstScan);  // the scan kernel's code, loaded at its launch
    cast.reset();
  }
  {
    // (packed_sequence_mask[:, -1] == 0).all(): the comparison goes first
    Tensor eq = bool_tensor(batch, "eq");
    Tensor all = bool_tensor(1, "all");
    eq.reset();
  }
  first.reset();
  diff.reset();
  mask.reset();
}

Tensor new_gelu(const Tensor& x) {
  // left to right: 0.5 * x first; pow saves x, tanh its result, the last mul both operands
  Tensor half = mul(x, 0.5);
  Tensor inner;
  {
    Tensor cubic;
    {
      Tensor p = pow(x, 3.0);
      cubic = mul(p, 0.044715);
    }
    Tensor sum = add(x, cubic);
    cubic.reset();
    inner = mul(sum, std::sqrt(2.0 / M_PI));
  }
  Tensor t = engine::tanh(inner);
  inner.reset();
  Tensor one_plus = add(t, 1.0);
  t.reset();
  // the expression's temporaries go left to right once the product exists (seen under no_grad)
  Tensor out = mul(half, one_plus);
  half.reset();
  one_plus.reset();
  return out;
}

Tensor causal_lm_loss(const Tensor& logits_in, const Tensor& labels, int64_t vocab) {
  // logits = logits.float(); labels = pad(labels, (0, 1), value=-100);
  // shift_labels = labels[..., 1:].contiguous(); cross_entropy(logits.view(-1, V), shift_labels.view(-1))
  Tensor logits = logits_in.float_();
  const int64_t B = labels.size(0), T = labels.size(1);
  Tensor padded = full({B, T + 1}, -100.0, DType::Int64);
  {
    NoGradGuard ng;
    Tensor head = padded.slice(1, 0, T);
    copy_(head, labels);
  }
  Tensor shift = padded.slice(1, 1, T + 1).contiguous();
  Tensor loss = cross_entropy(logits.view({-1, vocab}), shift.view({-1}));
  // the frame's locals go in slot order: logits (the float copy), then the padded labels
  logits.reset();
  padded.reset();
  return loss;
}

}  // namespace vramlab::engine::hf
