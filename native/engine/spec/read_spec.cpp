#include <stdexcept>

#include "engine/spec/run_spec.h"

namespace vramlab::engine {

namespace {

// key is a const char*: a std::string temporary in the call would make GCC 13's
// -Wdangling-reference flag `const SpecValue& x = need(...)`, though x refers into o.
const SpecValue& need(const SpecValue& o, const char* key, const std::string& path) {
  const SpecValue* v = o.find(key);
  if (!v) throw std::invalid_argument(path + "." + key + " is missing");
  return *v;
}

KindArgs read_kind_args(const SpecValue& v, const std::string& path) {
  if (!v.is_object()) throw std::invalid_argument(path + " must be an object with a kind");
  KindArgs k;
  k.kind = need(v, "kind", path).as_string(path + ".kind");
  k.args = v;
  k.path = path;
  return k;
}

CheckpointSpec read_checkpoint(const SpecValue& v) {
  CheckpointSpec c;
  if (v.is_object()) {
    c.mode = CheckpointSpec::Mode::Every;
    c.every = need(v, "every", "spec.checkpoint").as_int("spec.checkpoint.every");
    if (c.every < 1) throw std::invalid_argument("spec.checkpoint.every must be at least 1");
    return c;
  }
  const std::string& s = v.as_string("spec.checkpoint");
  if (s == "none")
    c.mode = CheckpointSpec::Mode::None;
  else if (s == "block")
    c.mode = CheckpointSpec::Mode::Block;
  else if (s == "sqrt")
    c.mode = CheckpointSpec::Mode::Sqrt;
  else
    throw std::invalid_argument("spec.checkpoint must be \"none\", \"block\", \"sqrt\" or {\"every\": k}");
  return c;
}

FinetuneSpec read_finetune(const SpecValue& v) {
  const std::string p = "spec.finetune";
  FinetuneSpec f;
  f.method = need(v, "method", p).as_string(p + ".method");
  if (f.method == "freeze") {
    f.blocks = need(v, "blocks", p).as_int(p + ".blocks");
  } else if (f.method == "lora") {
    f.rank = need(v, "rank", p).as_int(p + ".rank");
    f.alpha = need(v, "alpha", p).as_number(p + ".alpha");
    const SpecValue& t = need(v, "targets", p);
    if (t.kind() != SpecValue::Kind::Array) throw std::invalid_argument(p + ".targets must be an array");
    for (size_t i = 0; i < t.items().size(); ++i)
      f.targets.push_back(t.items()[i].as_string(p + ".targets[" + std::to_string(i) + "]"));
    if (const SpecValue* d = v.find("dropout")) f.dropout = d->as_number(p + ".dropout");
  } else if (f.method != "full") {
    throw std::invalid_argument(p + ".method must be \"full\", \"freeze\" or \"lora\"");
  }
  return f;
}

// A word-valued field: one of `words` (spec_words.h), as its enum.
template <typename E, size_t N>
E one_of(const SpecValue& o, const char* key, const std::array<const char*, N>& words) {
  const std::string path = std::string("spec.") + key;
  const std::string& got = need(o, key, "spec").as_string(path);
  if (auto i = word_index(words, got)) return E(*i);
  std::string list;
  for (const char* w : words) list += std::string(list.empty() ? "" : ", ") + w;
  throw std::invalid_argument(path + ": unknown value \"" + got + "\" (expected " + list + ")");
}

}  // namespace

int64_t KindArgs::i(const std::string& key) const { return need(args, key.c_str(), path).as_int(path + "." + key); }
double KindArgs::f(const std::string& key) const { return need(args, key.c_str(), path).as_number(path + "." + key); }
bool KindArgs::b(const std::string& key) const { return need(args, key.c_str(), path).as_bool(path + "." + key); }
const std::string& KindArgs::s(const std::string& key) const {
  return need(args, key.c_str(), path).as_string(path + "." + key);
}
std::vector<std::string> KindArgs::strings(const std::string& key) const {
  const SpecValue& a = need(args, key.c_str(), path);
  if (a.kind() != SpecValue::Kind::Array) throw std::invalid_argument(path + "." + key + " must be an array");
  std::vector<std::string> out;
  for (auto& v : a.items()) out.push_back(v.as_string(path + "." + key));
  return out;
}

RunSpec read_run_spec(const SpecValue& v) {
  if (!v.is_object()) throw std::invalid_argument("spec must be an object");
  const std::string p = "spec";
  auto str = [&](const char* k) { return need(v, k, p).as_string(p + "." + k); };
  auto int_ = [&](const char* k) { return need(v, k, p).as_int(p + "." + k); };
  auto flag = [&](const char* k) { return need(v, k, p).as_bool(p + "." + k); };
  RunSpec s;
  s.model = read_kind_args(need(v, "model", p), "spec.model");
  s.optimizer = read_kind_args(need(v, "optimizer", p), "spec.optimizer");
  s.batch = int_("batch");
  s.iterations = int_("iterations");
  s.accum = int_("accum");
  s.checkpoint = read_checkpoint(need(v, "checkpoint", p));
  s.precision = one_of<Precision>(v, "precision", kPrecisionWords);
  s.weights = kWeightsDTypes[size_t(one_of<uint8_t>(v, "weights", kWeightsWords))];
  s.set_to_none = flag("set_to_none");
  s.mode = one_of<RunMode>(v, "mode", kModeWords);
  s.keep_loss_graph = flag("keep_loss_graph");
  s.loss = one_of<LossKind>(v, "loss", kLossWords);
  s.finetune = read_finetune(need(v, "finetune", p));
  if (const SpecValue* sh = v.find("shapes"); sh && !sh->is_null()) {
    if (sh->kind() != SpecValue::Kind::Array) throw std::invalid_argument("spec.shapes must be an array or null");
    for (size_t i = 0; i < sh->items().size(); ++i) {
      std::string q = "spec.shapes[" + std::to_string(i) + "]";
      const SpecValue& e = sh->items()[i];
      s.shapes.push_back({need(e, "batch", q).as_int(q + ".batch"), need(e, "seq", q).as_int(q + ".seq")});
    }
  }
  s.prompt = int_("prompt");
  s.new_tokens = int_("new_tokens");
  s.cache = one_of<CacheKind>(v, "cache", kCacheWords);
  s.empty_cache_every = int_("empty_cache_every");
  if (s.empty_cache_every < 0) throw std::invalid_argument("spec.empty_cache_every must not be negative");
  s.alloc_conf = str("alloc_conf");
  s.device = str("device");
  const SpecValue& cap = need(v, "capacity", p);
  s.capacity = cap.is_null() ? 0 : cap.as_int("spec.capacity");
  if (s.capacity < 0) throw std::invalid_argument("spec.capacity must not be negative");
  s.history = flag("history");
  if (const SpecValue* pv = v.find("parallel"); pv && !pv->is_null()) {
    const std::string q = "spec.parallel";
    ParallelSpec& ps = s.parallel;
    ps.kind = need(*pv, "kind", q).as_string(q + ".kind");
    if (ps.kind != "ddp" && ps.kind != "fsdp2")
      throw std::invalid_argument(q + ".kind must be \"ddp\" or \"fsdp2\" (got \"" + ps.kind + "\")");
    ps.world = need(*pv, "world", q).as_int(q + ".world");
    if (ps.world < 1) throw std::invalid_argument(q + ".world must be at least 1");
    auto opt_str = [&](const char* k) {
      const SpecValue* e = pv->find(k);
      return !e || e->is_null() ? std::string() : e->as_string(q + "." + k);
    };
    if (ps.kind == "ddp") {
      ps.bucket_cap_mb = need(*pv, "bucket_cap_mb", q).as_number(q + ".bucket_cap_mb");
      ps.gradient_as_bucket_view = need(*pv, "gradient_as_bucket_view", q).as_bool(q + ".gradient_as_bucket_view");
    } else {
      ps.reshard_after_forward = need(*pv, "reshard_after_forward", q).as_bool(q + ".reshard_after_forward");
      ps.param_dtype = opt_str("param_dtype");
      ps.reduce_dtype = opt_str("reduce_dtype");
    }
  }
  return s;
}

RunOptions read_run_options(const SpecValue& v) {
  RunOptions o;
  if (v.is_null()) return o;
  if (!v.is_object()) throw std::invalid_argument("options must be an object");
  for (auto& [k, f] : v.fields()) {
    const std::string p = "options." + k;
    if (k == "backend")
      o.backend = f.as_string(p);
    else if (k == "warmup")
      o.warmup = f.as_string(p);
    else if (k == "grad_scaler")
      o.grad_scaler = f.as_bool(p);
    else if (k == "sample_every")
      o.sample_every = f.as_int(p);
    else if (k == "seed")
      o.seed = uint64_t(f.as_int(p));
    else
      throw std::invalid_argument(p + " is not a run option (backend, warmup, grad_scaler, sample_every, seed)");
  }
  return o;
}

SpecValue write_run_spec(const RunSpec& s) {
  std::map<std::string, SpecValue> f;
  f["model"] = s.model.args;
  f["optimizer"] = s.optimizer.args;
  f["batch"] = SpecValue::number(double(s.batch));
  f["iterations"] = SpecValue::number(double(s.iterations));
  f["accum"] = SpecValue::number(double(s.accum));
  std::string buf;
  if (s.checkpoint.mode == CheckpointSpec::Mode::Every)
    f["checkpoint"] = SpecValue::object({{"every", SpecValue::number(double(s.checkpoint.every))}});
  else
    f["checkpoint"] = SpecValue::string(checkpoint_label(s.checkpoint, buf));
  f["precision"] = SpecValue::string(word(s.precision));
  f["weights"] = SpecValue::string(weights_word(s.weights));
  f["set_to_none"] = SpecValue::boolean(s.set_to_none);
  f["mode"] = SpecValue::string(word(s.mode));
  f["keep_loss_graph"] = SpecValue::boolean(s.keep_loss_graph);
  f["loss"] = SpecValue::string(word(s.loss));
  std::map<std::string, SpecValue> ft{{"method", SpecValue::string(s.finetune.method)}};
  if (s.finetune.method == "freeze") ft["blocks"] = SpecValue::number(double(s.finetune.blocks));
  if (s.finetune.method == "lora") {
    ft["rank"] = SpecValue::number(double(s.finetune.rank));
    ft["alpha"] = SpecValue::number(s.finetune.alpha);
    std::vector<SpecValue> t;
    for (auto& x : s.finetune.targets) t.push_back(SpecValue::string(x));
    ft["targets"] = SpecValue::array(std::move(t));
    if (s.finetune.dropout != 0) ft["dropout"] = SpecValue::number(s.finetune.dropout);
  }
  f["finetune"] = SpecValue::object(std::move(ft));
  if (s.shapes.empty()) {
    f["shapes"] = SpecValue();
  } else {
    std::vector<SpecValue> sh;
    for (auto& e : s.shapes)
      sh.push_back(SpecValue::object(
          {{"batch", SpecValue::number(double(e.batch))}, {"seq", SpecValue::number(double(e.seq))}}));
    f["shapes"] = SpecValue::array(std::move(sh));
  }
  f["prompt"] = SpecValue::number(double(s.prompt));
  f["new_tokens"] = SpecValue::number(double(s.new_tokens));
  f["cache"] = SpecValue::string(word(s.cache));
  f["empty_cache_every"] = SpecValue::number(double(s.empty_cache_every));
  f["alloc_conf"] = SpecValue::string(s.alloc_conf);
  f["device"] = SpecValue::string(s.device);
  f["capacity"] = s.capacity ? SpecValue::number(double(s.capacity)) : SpecValue();
  f["history"] = SpecValue::boolean(s.history);
  if (s.parallel.kind.empty()) {
    f["parallel"] = SpecValue();
  } else {
    const ParallelSpec& ps = s.parallel;
    std::map<std::string, SpecValue> pf{{"kind", SpecValue::string(ps.kind)},
                                        {"world", SpecValue::number(double(ps.world))}};
    auto dt = [](const std::string& d) { return d.empty() ? SpecValue() : SpecValue::string(d); };
    if (ps.kind == "ddp") {
      pf["bucket_cap_mb"] = SpecValue::number(ps.bucket_cap_mb);
      pf["gradient_as_bucket_view"] = SpecValue::boolean(ps.gradient_as_bucket_view);
    } else {
      pf["reshard_after_forward"] = SpecValue::boolean(ps.reshard_after_forward);
      pf["param_dtype"] = dt(ps.param_dtype);
      pf["reduce_dtype"] = dt(ps.reduce_dtype);
    }
    f["parallel"] = SpecValue::object(std::move(pf));
  }
  return SpecValue::object(std::move(f));
}

const char* checkpoint_label(const CheckpointSpec& c, std::string& buf) {
  switch (c.mode) {
    case CheckpointSpec::Mode::None:
      return "none";
    case CheckpointSpec::Mode::Block:
      return "block";
    case CheckpointSpec::Mode::Sqrt:
      return "sqrt";
    case CheckpointSpec::Mode::Every:
      buf = "every:" + std::to_string(c.every);
      return buf.c_str();
  }
  return "none";
}

}  // namespace vramlab::engine
