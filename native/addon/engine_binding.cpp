// Engine bindings: runExperiment (one experiment, synchronous), runSeedExample,
// and a small Session class for the tensor playground.
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "addon/bindings.h"
#include "addon/js_value.h"
#include "allocator/caching_allocator.h"
#include "engine/backends/allocator_memory.h"
#include "engine/backends/backend.h"
#include "engine/core/context.h"
#include "engine/ops/ops.h"
#include "engine/core/alloc_tag.h"
#include "engine/experiment/experiment.h"
#include "engine/models/model.h"
#include "engine/optim/optimizer.h"

namespace vramlab::addon {

namespace {

using namespace vramlab::engine;

Napi::Object result_to_js(Napi::Env env, const RunResult& r) {
  auto o = Napi::Object::New(env);
  auto readings = Napi::Object::New(env);
  auto order = Napi::Array::New(env, r.readings.size());
  for (size_t i = 0; i < r.readings.size(); ++i) {
    readings.Set(r.readings[i].first, double(r.readings[i].second));
    order.Set(uint32_t(i), r.readings[i].first);
  }
  o.Set("readings", readings);
  o.Set("order", order);
  o.Set("base", double(r.base));
  o.Set("numParameters", double(r.num_parameters));
  o.Set("trainableParameters", double(r.trainable_parameters));
  o.Set("sdpaBackend", r.sdpa_backend);
  o.Set("modeledTimeMs", r.modeled_time_ms);
  o.Set("memorySummary", r.memory_summary);
  auto ranges = Napi::Object::New(env);  // readings PyTorch does not fix: [low, high]
  for (auto& [k, lh] : r.ranges) {
    auto pair = Napi::Array::New(env, 2);
    pair.Set(uint32_t(0), double(lh.first));
    pair.Set(uint32_t(1), double(lh.second));
    ranges.Set(k, pair);
  }
  o.Set("ranges", ranges);
  return o;
}

// runExperiment(spec, options?): the validated spec (main/contract/spec.ts), run to the
// end on this thread; readings as run_experiment returns them.
Napi::Value RunExperiment(const Napi::CallbackInfo& info) {
  if (info.Length() < 1 || !info[0].IsObject())
    throw Napi::TypeError::New(info.Env(), "runExperiment(spec, options?): spec must be an object");
  // node-addon-api converts only Napi::Error; engine errors (bad spec, OOM) become JS errors here.
  try {
    RunSpec spec = read_run_spec(spec_value_from_js(info[0], "spec"));
    RunOptions options = info.Length() > 1 ? read_run_options(spec_value_from_js(info[1], "options")) : RunOptions{};
    return result_to_js(info.Env(), run_experiment(spec, options));
  } catch (const Napi::Error&) {
    throw;
  } catch (const std::exception& e) {
    throw Napi::Error::New(info.Env(), e.what());
  }
}

Napi::Value RunSeedExample(const Napi::CallbackInfo& info) {
  std::string device = "sim:h200-141gb";
  if (info.Length() > 0 && info[0].IsString()) device = info[0].As<Napi::String>().Utf8Value();
  return result_to_js(info.Env(), run_seed_example(device));
}

Shape shape_arg(const Napi::Value& v) {
  if (!v.IsArray()) throw Napi::TypeError::New(v.Env(), "shape must be an array of integers");
  auto a = v.As<Napi::Array>();
  Shape s;
  for (uint32_t i = 0; i < a.Length(); ++i) {
    auto e = a.Get(i);
    if (!e.IsNumber()) throw Napi::TypeError::New(v.Env(), "shape must be an array of integers");
    s.push_back(int64_t(e.As<Napi::Number>().DoubleValue()));
  }
  return s;
}

// Tensor playground: tensors live in the session and are named by integer ids. The
// TypeScript side (main/host/playground_*.ts) parses commands and keeps Python's names;
// this class only runs ops on the engine + caching allocator of its own device.
//   new EngineSession({device?, backend?: 'sim'|'cpu'|'cuda', capacity?: bytes|null, allocConf?})
class EngineSession : public Napi::ObjectWrap<EngineSession> {
 public:
  static Napi::Function Define(Napi::Env env) {
    return DefineClass(env, "EngineSession",
                       {InstanceMethod("randn", &EngineSession::Randn),
                        InstanceMethod("zeros", &EngineSession::Zeros),
                        InstanceMethod("ones", &EngineSession::Ones),
                        InstanceMethod("empty", &EngineSession::Empty),
                        InstanceMethod("view", &EngineSession::View),
                        InstanceMethod("reshape", &EngineSession::Reshape),
                        InstanceMethod("clone", &EngineSession::Clone),
                        InstanceMethod("contiguous", &EngineSession::Contiguous),
                        InstanceMethod("to", &EngineSession::To),
                        InstanceMethod("t", &EngineSession::T),
                        InstanceMethod("matmul", &EngineSession::Matmul),
                        InstanceMethod("del", &EngineSession::Del),
                        InstanceMethod("info", &EngineSession::Info),
                        InstanceMethod("emptyCache", &EngineSession::EmptyCache),
                        InstanceMethod("memoryAllocated", &EngineSession::MemoryAllocated),
                        InstanceMethod("memoryReserved", &EngineSession::MemoryReserved),
                        InstanceMethod("maxMemoryAllocated", &EngineSession::MaxMemoryAllocated),
                        InstanceMethod("maxMemoryReserved", &EngineSession::MaxMemoryReserved),
                        InstanceMethod("resetPeak", &EngineSession::ResetPeak),
                        InstanceMethod("memorySummary", &EngineSession::MemorySummary),
                        InstanceMethod("snapshot", &EngineSession::Snapshot),
                        InstanceMethod("device", &EngineSession::DeviceJs),
                        InstanceMethod("close", &EngineSession::Close)});
  }

  explicit EngineSession(const Napi::CallbackInfo& info) : Napi::ObjectWrap<EngineSession>(info) {
    std::string device = "sim:h200-141gb", backend, conf;
    std::optional<uint64_t> capacity;
    if (info.Length() > 0 && info[0].IsObject()) {
      engine::SpecValue o = spec_value_from_js(info[0], "options");
      for (auto& [k, v] : o.fields()) {
        const std::string p = "options." + k;
        if (k == "device")
          device = v.as_string(p);
        else if (k == "backend")
          backend = v.as_string(p);
        else if (k == "allocConf")
          conf = v.as_string(p);
        else if (k == "capacity") {
          if (v.is_null()) continue;
          double c = v.as_number(p);
          if (!(c >= 1) || c > 9.007199254740992e15)
            throw Napi::RangeError::New(info.Env(), "capacity must be a positive number of bytes");
          capacity = uint64_t(c);
        } else {
          throw Napi::TypeError::New(info.Env(), p + " is not a session option (device, backend, allocConf, capacity)");
        }
      }
    }
    if (backend.empty()) backend = device.rfind("cuda:", 0) == 0 ? "cuda" : "sim";
    auto settings = alloc::AllocatorSettings::parse(conf);  // SettingsError names the key
    device_ = std::shared_ptr<Device>(open_device(device));
    const uint64_t total = device_->info().total;
    if (capacity) {
      if (settings.per_process_memory_fraction)
        throw std::invalid_argument("set either capacity or allocConf's per_process_memory_fraction, not both");
      if (*capacity > total)
        throw std::invalid_argument("capacity (" + std::to_string(*capacity) + " bytes) is more than " + device +
                                    " has (" + std::to_string(total) + " bytes)");
    }
    allocator_ = std::make_shared<alloc::CachingAllocator>(device_, settings);
    // Same cap as torch.cuda.set_per_process_memory_fraction(capacity / total).
    if (capacity) allocator_->set_capacity_limit(*capacity);
    memory_ = std::make_unique<AllocatorMemory>(allocator_);
    std::shared_ptr<Backend> be;
    if (backend == "sim") {
      be = make_sim_backend(device_->info());
    } else if (backend == "cpu") {
      be = make_cpu_backend();
    } else if (backend == "cuda") {
      std::string why;
      be = make_cuda_backend(&why);
      if (!be) throw std::runtime_error("cuda backend unavailable: " + why);
    } else {
      throw std::invalid_argument("unknown backend '" + backend + "' (expected sim, cpu or cuda)");
    }
    ctx_ = std::make_unique<EngineContext>(be, memory_.get(), device_->info());
  }
  ~EngineSession() override { release(); }

 private:
  // Frees every tensor, the context's workspaces and the allocator's segments (on a real
  // GPU the memory goes back to the driver now, not when the GC gets to this object).
  void release() {
    if (!ctx_) return;
    {
      ContextGuard g(*ctx_);
      tensors_.clear();
      ctx_->clear_blas_workspaces();
    }
    ctx_.reset();
    memory_.reset();
    allocator_.reset();
    device_.reset();
  }
  void check_open(Napi::Env env) const {
    if (!ctx_) throw Napi::Error::New(env, "this playground session is closed");
  }
  // Runs an op with the session's context current; an allocator OOM keeps PyTorch's
  // message and is marked (err.oom) so callers can tell it from a shape error.
  template <class F>
  Napi::Value guarded(const Napi::CallbackInfo& info, F&& f) {
    check_open(info.Env());
    ContextGuard g(*ctx_);
    // Tensors made at the prompt are the user's own data, tagged like a run's inputs; the
    // engine still tags its cuBLAS workspace as workspace.
    CategoryScope category(Category::Input);
    try {
      return f();
    } catch (const engine::OutOfMemoryError& e) {  // AllocatorMemory rethrows the allocator's as this
      throw oom_error(info.Env(), e.what());
    } catch (const alloc::OutOfMemoryError& e) {
      throw oom_error(info.Env(), e.what());
    }
  }
  static Napi::Error oom_error(Napi::Env env, const char* what) {
    Napi::Error err = Napi::Error::New(env, what);
    err.Set("name", Napi::String::New(env, "OutOfMemoryError"));
    err.Set("oom", Napi::Boolean::New(env, true));
    return err;
  }
  Napi::Value put(Napi::Env env, Tensor t) {
    int id = next_++;
    tensors_[id] = std::move(t);
    return Napi::Number::New(env, id);
  }
  Tensor& get(const Napi::CallbackInfo& info, size_t i) {
    if (info.Length() <= i || !info[i].IsNumber()) throw Napi::TypeError::New(info.Env(), "tensor id must be a number");
    auto it = tensors_.find(info[i].As<Napi::Number>().Int32Value());
    if (it == tensors_.end()) throw Napi::Error::New(info.Env(), "no tensor with that id (deleted?)");
    return it->second;
  }
  Shape shape_at(const Napi::CallbackInfo& info, size_t i) {
    if (info.Length() <= i) throw Napi::TypeError::New(info.Env(), "shape must be an array of integers");
    return shape_arg(info[i]);
  }
  DType dtype_arg(const Napi::CallbackInfo& info, size_t i) {
    if (info.Length() > i && info[i].IsString()) return parse_dtype(info[i].As<Napi::String>().Utf8Value());
    return DType::Float32;
  }
  Napi::Value Randn(const Napi::CallbackInfo& info) {
    return guarded(info, [&] { return put(info.Env(), randn(shape_at(info, 0), dtype_arg(info, 1))); });
  }
  Napi::Value Zeros(const Napi::CallbackInfo& info) {
    return guarded(info, [&] { return put(info.Env(), zeros(shape_at(info, 0), dtype_arg(info, 1))); });
  }
  Napi::Value Ones(const Napi::CallbackInfo& info) {
    return guarded(info, [&] { return put(info.Env(), ones(shape_at(info, 0), dtype_arg(info, 1))); });
  }
  Napi::Value Empty(const Napi::CallbackInfo& info) {
    return guarded(info, [&] { return put(info.Env(), empty(shape_at(info, 0), dtype_arg(info, 1))); });
  }
  Napi::Value View(const Napi::CallbackInfo& info) {
    return guarded(info, [&] { return put(info.Env(), get(info, 0).view(shape_at(info, 1))); });
  }
  Napi::Value Reshape(const Napi::CallbackInfo& info) {
    return guarded(info, [&] {
      const Tensor& src = get(info, 0);
      Tensor out = src.reshape(shape_at(info, 1));
      // A reshape that had to copy is PyTorch's _unsafe_view of the copy: not a view.
      if (out.storage() != src.storage()) out.impl()->is_view = false;
      return put(info.Env(), std::move(out));
    });
  }
  Napi::Value Clone(const Napi::CallbackInfo& info) {
    return guarded(info, [&] { return put(info.Env(), get(info, 0).clone()); });
  }
  Napi::Value Contiguous(const Napi::CallbackInfo& info) {
    return guarded(info, [&] { return put(info.Env(), get(info, 0).contiguous()); });
  }
  Napi::Value To(const Napi::CallbackInfo& info) {
    return guarded(info, [&] { return put(info.Env(), get(info, 0).to(dtype_arg(info, 1))); });
  }
  Napi::Value T(const Napi::CallbackInfo& info) {
    return guarded(info, [&] { return put(info.Env(), get(info, 0).t()); });
  }
  Napi::Value Matmul(const Napi::CallbackInfo& info) {
    return guarded(info, [&] { return put(info.Env(), matmul(get(info, 0), get(info, 1))); });
  }
  Napi::Value Del(const Napi::CallbackInfo& info) {
    return guarded(info, [&] {
      get(info, 0);
      tensors_.erase(info[0].As<Napi::Number>().Int32Value());
      return info.Env().Undefined();
    });
  }
  Napi::Value Info(const Napi::CallbackInfo& info) {
    check_open(info.Env());
    Tensor& t = get(info, 0);
    auto o = Napi::Object::New(info.Env());
    auto shape = Napi::Array::New(info.Env(), t.sizes().size());
    for (size_t i = 0; i < t.sizes().size(); ++i) shape.Set(uint32_t(i), double(t.sizes()[i]));
    o.Set("shape", shape);
    o.Set("dtype", dtype_name(t.dtype()));
    o.Set("bytes", double(t.nbytes()));
    o.Set("storageBytes", double(t.storage()->nbytes));
    o.Set("blockBytes", double(t.storage()->block.size));
    o.Set("address", double(t.storage()->block.ptr));
    // Identifies the storage: tensors with the same key share memory (zero-byte ones too).
    o.Set("storageKey", double(reinterpret_cast<uintptr_t>(t.storage().get()) & ((uint64_t(1) << 52) - 1)));
    o.Set("isView", t.impl()->is_view);
    o.Set("contiguous", t.is_contiguous());
    return o;
  }
  Napi::Value EmptyCache(const Napi::CallbackInfo& info) {
    check_open(info.Env());
    memory_->empty_cache();
    return info.Env().Undefined();
  }
  Napi::Value MemoryAllocated(const Napi::CallbackInfo& info) {
    check_open(info.Env());
    return Napi::Number::New(info.Env(), double(memory_->memory_allocated()));
  }
  Napi::Value MemoryReserved(const Napi::CallbackInfo& info) {
    check_open(info.Env());
    return Napi::Number::New(info.Env(), double(memory_->memory_reserved()));
  }
  Napi::Value MaxMemoryAllocated(const Napi::CallbackInfo& info) {
    check_open(info.Env());
    return Napi::Number::New(info.Env(), double(allocator_->max_memory_allocated()));
  }
  Napi::Value MaxMemoryReserved(const Napi::CallbackInfo& info) {
    check_open(info.Env());
    return Napi::Number::New(info.Env(), double(allocator_->max_memory_reserved()));
  }
  Napi::Value ResetPeak(const Napi::CallbackInfo& info) {  // torch.cuda.reset_peak_memory_stats()
    check_open(info.Env());
    allocator_->reset_peak();
    return info.Env().Undefined();
  }
  Napi::Value MemorySummary(const Napi::CallbackInfo& info) {
    check_open(info.Env());
    bool abbreviated = info.Length() > 0 && info[0].IsBoolean() && info[0].As<Napi::Boolean>().Value();
    return Napi::String::New(info.Env(), allocator_->memory_summary(abbreviated));
  }
  // {segments} in the shape of the native Allocator's snapshot() (allocator_binding.cpp).
  Napi::Value Snapshot(const Napi::CallbackInfo& info) {
    check_open(info.Env());
    Napi::Env env = info.Env();
    const alloc::MemorySnapshot s = allocator_->snapshot(false);
    const alloc::ContextTable& names = allocator_->contexts();
    Napi::Array segs = Napi::Array::New(env, s.segments.size());
    for (size_t i = 0; i < s.segments.size(); ++i) {
      const alloc::SegmentSnapshot& seg = s.segments[i];
      Napi::Object o = Napi::Object::New(env);
      o.Set("address", double(seg.address));
      o.Set("totalSize", double(seg.total_size));
      o.Set("allocatedSize", double(seg.allocated_size));
      o.Set("activeSize", double(seg.active_size));
      o.Set("requestedSize", double(seg.requested_size));
      o.Set("stream", double(seg.stream));
      o.Set("pool", seg.is_large ? "large" : "small");
      o.Set("isExpandable", Napi::Boolean::New(env, seg.is_expandable));
      o.Set("context", names.name(seg.context));
      Napi::Array blocks = Napi::Array::New(env, seg.blocks.size());
      for (size_t j = 0; j < seg.blocks.size(); ++j) {
        const alloc::BlockSnapshot& b = seg.blocks[j];
        Napi::Object bo = Napi::Object::New(env);
        bo.Set("address", double(b.address));
        bo.Set("size", double(b.size));
        bo.Set("requestedSize", double(b.requested_size));
        bo.Set("state", b.state());
        bo.Set("context", names.name(b.context));
        blocks.Set(uint32_t(j), bo);
      }
      o.Set("blocks", blocks);
      segs.Set(uint32_t(i), o);
    }
    Napi::Object out = Napi::Object::New(env);
    out.Set("segments", segs);
    return out;
  }
  Napi::Value DeviceJs(const Napi::CallbackInfo& info) {
    check_open(info.Env());
    const DeviceInfo d = device_->info();
    Napi::Object o = Napi::Object::New(info.Env());
    o.Set("id", d.id);
    o.Set("kind", d.kind);
    o.Set("name", d.name);
    o.Set("total", double(d.total));
    o.Set("backend", ctx_->backend().name());
    auto cap = allocator_->capacity_limit();
    o.Set("capacity", cap ? Napi::Value(Napi::Number::New(info.Env(), double(*cap))) : info.Env().Null());
    return o;
  }
  Napi::Value Close(const Napi::CallbackInfo& info) {
    release();
    return info.Env().Undefined();
  }

  std::shared_ptr<Device> device_;
  std::shared_ptr<alloc::CachingAllocator> allocator_;
  std::unique_ptr<AllocatorMemory> memory_;
  std::unique_ptr<EngineContext> ctx_;
  std::map<int, Tensor> tensors_;
  int next_ = 1;
};

}  // namespace

void registerEngine(Napi::Env env, Napi::Object exports) {
  exports.Set("runExperiment", Napi::Function::New(env, RunExperiment, "runExperiment"));
  exports.Set("runSeedExample", Napi::Function::New(env, RunSeedExample, "runSeedExample"));
  Napi::Function session = EngineSession::Define(env);
  exports.Set("EngineSession", session);
  exports.Set("Session", session);  // the playground name the renderer uses
  // The engine's registries, for the TypeScript side to check its own lists against.
  auto strings = [&](const std::vector<std::string>& xs) {
    Napi::Array a = Napi::Array::New(env, xs.size());
    for (size_t i = 0; i < xs.size(); ++i) a.Set(uint32_t(i), xs[i]);
    return a;
  };
  std::vector<std::string> categories;
  for (int i = 0; i < engine::kNumCategories; ++i) categories.push_back(engine::category_name(engine::Category(i)));
  exports.Set("memoryCategories", strings(categories));
  exports.Set("modelFamilies", strings(engine::model_family_kinds()));
  exports.Set("optimizerKinds", strings(engine::optimizer_kinds()));
  // The words read_run_spec parses the spec's word-valued fields from (spec_words.h).
  Napi::Object words = Napi::Object::New(env);
  auto list = [&](const auto& ws) { return strings(std::vector<std::string>(ws.begin(), ws.end())); };
  words.Set("precision", list(engine::kPrecisionWords));
  words.Set("weights", list(engine::kWeightsWords));
  words.Set("mode", list(engine::kModeWords));
  words.Set("loss", list(engine::kLossWords));
  words.Set("cache", list(engine::kCacheWords));
  exports.Set("specWords", words);
}

}  // namespace vramlab::addon
