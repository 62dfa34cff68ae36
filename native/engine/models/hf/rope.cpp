#include "engine/models/hf/rope.h"

#include <stdexcept>

#include "engine/core/alloc_tag.h"
#include "engine/core/grad_mode.h"
#include "engine/ops/common.h"

namespace vramlab::engine::hf {

namespace {

const char* const kTypes[] = {"default", "linear", "dynamic", "yarn", "longrope", "llama3"};

Tensor f32(int64_t n, const char* op) { return make_tensor({n}, DType::Float32, op); }

// 1.0 / x: Tensor.__rtruediv__ is x.reciprocal() * 1.0 (the reciprocal freed after the mul)
Tensor rdiv(const Tensor& x) {
  Tensor r = f32(x.size(0), "reciprocal");
  return f32(x.size(0), "mul");
}

// base ** (torch.arange(0, dim, 2, dtype=torch.int64).to(dtype=torch.float) / dim): the
// int64 arange, its float copy, the quotient, then the power; each freed once the next
// op has run.
Tensor powers(int64_t n) {
  Tensor q;
  {
    Tensor fl;
    {
      Tensor ar = make_tensor({n}, DType::Int64, "arange");
      fl = f32(n, "_to_copy");
    }
    q = f32(n, "div");
  }
  return f32(n, "pow");
}

// 1.0 / (base ** (arange / dim)): compute_default_rope_parameters (a float arange) and the
// int64-arange variants of linear, dynamic and llama3.
Tensor plain_inv_freq(int64_t n, bool float_arange) {
  Tensor p;
  if (float_arange) {
    Tensor q;
    {
      Tensor ar = f32(n, "arange");
      q = f32(n, "div");
    }
    p = f32(n, "pow");
  } else {
    p = powers(n);
  }
  return rdiv(p);
}

// _compute_yarn_parameters: pos_freqs, the extrapolation and interpolation frequencies,
// linear_ramp_factor's ramp, then their blend.
Tensor yarn_inv_freq(int64_t n) {
  Tensor pos = powers(n);  // torch.arange(0, dim, 2) is int64 too
  Tensor extrapolation = rdiv(pos);
  Tensor interpolation;
  {
    Tensor scaled = f32(n, "mul");  // factor * pos_freqs
    interpolation = rdiv(scaled);
  }
  Tensor extrapolation_factor;
  {
    Tensor ramp;
    {
      Tensor linear;
      {
        Tensor sub;
        {
          Tensor ar = f32(n, "arange");  // torch.arange(dim // 2, dtype=torch.float32)
          sub = f32(n, "sub");
        }
        linear = f32(n, "div");
      }
      ramp = f32(n, "clamp");
    }
    extrapolation_factor = f32(n, "rsub");  // 1 - ramp
  }
  // interpolation * (1 - factor) + extrapolation * factor
  Tensor a;
  {
    Tensor one_minus = f32(n, "rsub");
    a = f32(n, "mul");
  }
  Tensor b = f32(n, "mul");
  return f32(n, "add");
}

// _compute_longrope_parameters: the chosen factors as a tensor, the int64 arange's float
// copy over dim, the power, the product, and 1.0 / it.
Tensor longrope_inv_freq(int64_t n, size_t factors) {
  Tensor ext = f32(int64_t(factors), "tensor");  // torch.tensor(factor list, device="cuda")
  Tensor p = powers(n);                          // arange(int64, device).float() / dim; base ** that
  Tensor prod = f32(n, "mul");                   // ext_factors * base**inv_freq_shape
  p.reset();
  return rdiv(prod);
}

// _compute_llama3_parameters: inv_freq, the wavelengths, the low-frequency division, the
// smoothed blend and the medium-frequency mask, each Python local alive until return.
Tensor llama3_inv_freq(int64_t n) {
  Tensor inv = plain_inv_freq(n, false);
  Tensor wavelen = rdiv(inv);  // 2 * math.pi / inv_freq
  Tensor llama;
  {
    Tensor gt = bool_tensor(n, "gt");  // wavelen > low_freq_wavelen
    Tensor d = f32(n, "div");          // inv_freq / factor
    llama = f32(n, "where");
  }
  Tensor smooth;
  {
    Tensor q;
    {
      Tensor r = rdiv(wavelen);  // old_context_len / wavelen
      q = f32(n, "sub");
    }
    smooth = f32(n, "div");
  }
  Tensor smoothed;
  {
    Tensor t3;
    {
      Tensor t2;
      {
        Tensor t1 = f32(n, "rsub");  // 1 - smooth_factor
        t2 = f32(n, "mul");          // * inv_freq_llama
      }
      t3 = f32(n, "div");  // / factor
    }
    Tensor t4 = f32(n, "mul");  // smooth_factor * inv_freq_llama
    smoothed = f32(n, "add");
  }
  Tensor medium;
  {
    Tensor a, b;
    {
      Tensor lt = bool_tensor(n, "lt");
      a = bool_tensor(n, "bitwise_not");
    }
    {
      Tensor gt = bool_tensor(n, "gt");
      b = bool_tensor(n, "bitwise_not");
    }
    medium = bool_tensor(n, "mul");
  }
  return f32(n, "where");  // inv_freq_llama rebound; the rest freed at return
}

// One rope type's init function: its inv_freq (dim / 2 float32) after the temporaries.
Tensor init_inv_freq(const Rope& r, int64_t dim, bool long_factors) {
  const int64_t n = dim / 2;
  if (r.type == "default") return plain_inv_freq(n, true);
  if (r.type == "linear") return plain_inv_freq(n, false);  // then inv_freq /= factor, in place
  if (r.type == "dynamic") return plain_inv_freq(n, false);
  if (r.type == "yarn") return yarn_inv_freq(n);
  if (r.type == "longrope") return longrope_inv_freq(n, long_factors ? r.long_factors : r.short_factors);
  return llama3_inv_freq(n);
}

}  // namespace

Rope read_rope(const Config& c, const SpecValue& rp, const std::string& p) {
  if (!rp.is_object()) throw std::invalid_argument(p + " must be an object with rope_type and rope_theta");
  // the keys each init function indexes (a KeyError in transformers when missing)
  auto key = [&](const char* k) -> const SpecValue& {
    const SpecValue* v = rp.find(k);
    if (!v)
      throw std::invalid_argument(p + "." + k + " is missing (rope_type " + rp["rope_type"].to_json() + " needs it)");
    return *v;
  };
  Rope r;
  if (!rp.find("rope_type")) throw std::invalid_argument(p + ".rope_type is missing");
  r.type = rp["rope_type"].as_string(p + ".rope_type");
  bool known = false;
  for (const char* t : kTypes) known = known || r.type == t;
  if (!known)
    throw std::invalid_argument(p + ".rope_type \"" + r.type +
                                "\" is not supported (default, linear, dynamic, yarn, longrope, llama3)");
  r.theta = key("rope_theta").as_number(p + ".rope_theta");
  r.max_positions = c.i("max_position_embeddings");
  // standardize_rope_params: llama3/yarn/longrope get original_max_position_embeddings, the
  // config's own attribute first (Phi3Config), else the parameters', else max_position_embeddings
  if (r.type == "llama3" || r.type == "yarn" || r.type == "longrope") {
    if (c.has("original_max_position_embeddings") && !c.is_null("original_max_position_embeddings"))
      r.original_max = c.i("original_max_position_embeddings");
    else if (const SpecValue* o = rp.find("original_max_position_embeddings"); o && !o->is_null())
      r.original_max = o->as_int(p + ".original_max_position_embeddings");
    else
      r.original_max = r.max_positions;
  }
  if (r.type == "linear" || r.type == "dynamic" || r.type == "llama3") key("factor").as_number(p + ".factor");
  if (r.type == "llama3") {
    key("low_freq_factor").as_number(p + ".low_freq_factor");
    key("high_freq_factor").as_number(p + ".high_freq_factor");
  }
  if (r.type == "longrope") {
    r.long_factors = key("long_factor").items().size();
    r.short_factors = key("short_factor").items().size();
  }
  return r;
}

RotaryEmbedding::RotaryEmbedding(const Rope& rope, int64_t head_dim) : rope_(rope), dim_(head_dim) {
  if (rope_.type == "longrope" && (int64_t(rope_.long_factors) != dim_ / 2 || int64_t(rope_.short_factors) != dim_ / 2))
    throw std::invalid_argument("hf: rope_parameters.long_factor and short_factor must have head_dim / 2 (" +
                                std::to_string(dim_ / 2) + ") values each");
  // inv_freq, self.attention_scaling = rope_init_fn(self.config, device) under
  // torch.device("cuda"); self.original_inv_freq = nn.Buffer(inv_freq.clone())
  CategoryScope cs(Category::Other);
  NoGradGuard ng;
  inv_freq_ = init_inv_freq(rope_, dim_, false);
  original_ = inv_freq_.clone();
  register_buffer("inv_freq", inv_freq_);
  register_buffer("original_inv_freq", original_);
}

void RotaryEmbedding::set_inv_freq(const Tensor& t) {
  // self.register_buffer("inv_freq", t): the old tensor goes unless another name holds it
  inv_freq_ = t;
  for (auto& [n, b] : buffers_)
    if (n == "inv_freq") b = t;
}

void RotaryEmbedding::update(int64_t seq) {
  const bool dynamic = rope_.type == "dynamic", longrope = rope_.type == "longrope";
  if (!dynamic && !longrope) return;
  CategoryScope cs(Category::Other);
  NoGradGuard ng;
  // seq_len = torch.max(position_ids) + 1 (a device scalar; each comparison a device bool
  // freed once `if` has read it); seq_len itself lives until the update returns
  Tensor seq_len;
  {
    Tensor m = make_tensor({}, DType::Int64, "max");
    seq_len = make_tensor({}, DType::Int64, "add");
  }
  if (dynamic) {
    // growing past max_seq_len_cached (max_position_embeddings) recomputes inv_freq from a
    // device-scalar base: not modelled (refused); below it only the two comparisons run
    if (seq > rope_.max_positions)
      throw std::invalid_argument("hf: dynamic rope beyond max_position_embeddings (" +
                                  std::to_string(rope_.max_positions) + ") is not modelled");
    { Tensor gt = bool_tensor(1, "gt"); }  // seq_len > max_seq_len_cached
    { Tensor lt = bool_tensor(1, "lt"); }  // seq_len < original_max_seq_len (and cached > original: False)
    return;
  }
  { Tensor gt = bool_tensor(1, "gt"); }  // seq_len > original_max_position_embeddings
  if (seq > rope_.original_max) {
    // the long frequencies, recomputed every forward (the hasattr check looks for
    // "None_long_inv_freq", never set), replace the previous inv_freq
    set_inv_freq(init_inv_freq(rope_, dim_, true));
  } else {
    // register_buffer("inv_freq", original_inv_freq): both names hold one tensor from now on
    set_inv_freq(original_);
  }
}

}  // namespace vramlab::engine::hf
