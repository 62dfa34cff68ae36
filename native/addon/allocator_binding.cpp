// JS bindings for the caching allocator: replayAllocator() runs a whole alloc/free
// sequence natively; the Allocator class drives one allocator op by op.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "addon/bindings.h"
#include "allocator/caching_allocator.h"
#include "allocator/constants.h"
#include "allocator/replay.h"

namespace vramlab::addon {

namespace {

using namespace vramlab::alloc;

Napi::Value num(Napi::Env env, double v) { return Napi::Number::New(env, v); }

std::optional<double> opt_number(const Napi::Object& o, const char* key) {
  if (!o.Has(key) || o.Get(key).IsUndefined() || o.Get(key).IsNull()) return std::nullopt;
  Napi::Value v = o.Get(key);
  if (!v.IsNumber()) throw Napi::TypeError::New(o.Env(), std::string("option '") + key + "' must be a number");
  return v.As<Napi::Number>().DoubleValue();
}

// A byte count option: a whole number >= 0 and < 2^63. NaN, negatives and infinity used
// to pass through static_cast<uint64_t> (undefined; in practice "unlimited").
std::optional<uint64_t> opt_bytes(const Napi::Object& o, const char* key) {
  auto v = opt_number(o, key);
  if (!v) return std::nullopt;
  if (!(*v >= 0 && *v < 9.2e18) || *v != static_cast<double>(static_cast<uint64_t>(*v)))
    throw Napi::RangeError::New(o.Env(), std::string("option '") + key + "' must be a whole number of bytes >= 0");
  return static_cast<uint64_t>(*v);
}

std::optional<std::string> opt_string(const Napi::Object& o, const char* key) {
  if (!o.Has(key) || o.Get(key).IsUndefined() || o.Get(key).IsNull()) return std::nullopt;
  Napi::Value v = o.Get(key);
  if (!v.IsString()) throw Napi::TypeError::New(o.Env(), std::string("option '") + key + "' must be a string");
  return v.As<Napi::String>().Utf8Value();
}

bool opt_bool(const Napi::Object& o, const char* key) {
  return o.Has(key) && o.Get(key).IsBoolean() && o.Get(key).As<Napi::Boolean>().Value();
}

uint64_t to_bytes(Napi::Env env, const Napi::Value& v, const char* what) {
  if (v.IsBigInt()) {
    bool lossless = true;
    uint64_t b = v.As<Napi::BigInt>().Uint64Value(&lossless);
    if (!lossless) throw Napi::RangeError::New(env, std::string(what) + " is out of range");
    return b;
  }
  if (!v.IsNumber()) throw Napi::TypeError::New(env, std::string(what) + " must be a number or BigInt");
  double d = v.As<Napi::Number>().DoubleValue();
  if (!(d >= 0) || d > 9.007199254740992e15 * 1024)
    throw Napi::RangeError::New(env, std::string(what) + " must be >= 0");
  return static_cast<uint64_t>(d);
}

// A Float64Array or BigUint64Array of byte counts/addresses, as uint64.
std::vector<uint64_t> u64_column(Napi::Env env, const Napi::Value& v, const char* what) {
  if (!v.IsTypedArray())
    throw Napi::TypeError::New(env, std::string(what) + " must be a Float64Array or BigUint64Array");
  Napi::TypedArray ta = v.As<Napi::TypedArray>();
  std::vector<uint64_t> out(ta.ElementLength());
  if (ta.TypedArrayType() == napi_float64_array) {
    Napi::Float64Array f = v.As<Napi::Float64Array>();
    for (size_t i = 0; i < out.size(); ++i) {
      // 2^64 and above (infinity included) would be undefined in the cast below.
      if (!(f[i] >= 0 && f[i] < 18446744073709551616.0))
        throw Napi::RangeError::New(env, std::string(what) + " must hold non-negative values below 2^64");
      out[i] = static_cast<uint64_t>(f[i]);
    }
  } else if (ta.TypedArrayType() == napi_biguint64_array) {
    Napi::TypedArrayOf<uint64_t> b = v.As<Napi::TypedArrayOf<uint64_t>>();
    for (size_t i = 0; i < out.size(); ++i) out[i] = b[i];
  } else {
    throw Napi::TypeError::New(env, std::string(what) + " must be a Float64Array or BigUint64Array");
  }
  return out;
}

Napi::TypedArray typed(Napi::Env env, const Napi::Object& o, const char* key, napi_typedarray_type want,
                       const char* type) {
  Napi::Value v = o.Get(key);
  if (!v.IsTypedArray() || v.As<Napi::TypedArray>().TypedArrayType() != want)
    throw Napi::TypeError::New(env, std::string("seed.") + key + " must be a " + type);
  return v.As<Napi::TypedArray>();
}

// seed: {segAddress, segStream: Float64Array, segSmall: Uint8Array, segBlocks: Uint32Array
// (blocks per segment), blockSize, blockRequested: Float64Array, blockId: Uint32Array (0: free)}
void read_seed(Napi::Env env, const Napi::Object& o, std::vector<SeedSegment>& segs, std::vector<uint32_t>& ids) {
  std::vector<uint64_t> addr = u64_column(env, o.Get("segAddress"), "seed.segAddress");
  std::vector<uint64_t> stream = u64_column(env, o.Get("segStream"), "seed.segStream");
  Napi::Uint8Array small = typed(env, o, "segSmall", napi_uint8_array, "Uint8Array").As<Napi::Uint8Array>();
  Napi::Uint32Array counts = typed(env, o, "segBlocks", napi_uint32_array, "Uint32Array").As<Napi::Uint32Array>();
  std::vector<uint64_t> size = u64_column(env, o.Get("blockSize"), "seed.blockSize");
  std::vector<uint64_t> req = u64_column(env, o.Get("blockRequested"), "seed.blockRequested");
  Napi::Uint32Array bid = typed(env, o, "blockId", napi_uint32_array, "Uint32Array").As<Napi::Uint32Array>();
  const size_t n = addr.size();
  if (stream.size() != n || small.ElementLength() != n || counts.ElementLength() != n)
    throw Napi::RangeError::New(env, "seed: the segment columns must have the same length");
  const size_t nb = size.size();
  if (req.size() != nb || bid.ElementLength() != nb)
    throw Napi::RangeError::New(env, "seed: the block columns must have the same length");
  size_t k = 0;
  segs.resize(n);
  ids.resize(nb);
  for (size_t i = 0; i < n; ++i) {
    SeedSegment& g = segs[i];
    g.address = addr[i];
    g.stream = stream[i];
    g.is_small = small[i] != 0;
    if (counts[i] > nb - k) throw Napi::RangeError::New(env, "seed: segBlocks names more blocks than blockSize holds");
    for (uint32_t j = 0; j < counts[i]; ++j, ++k) {
      g.blocks.push_back(SeedBlock{size[k], req[k], bid[k] != 0});
      ids[k] = bid[k];
    }
  }
  if (k != nb) throw Napi::RangeError::New(env, "seed: segBlocks accounts for fewer blocks than blockSize holds");
}

Napi::Object stats_object(Napi::Env env, const std::vector<std::pair<std::string, int64_t>>& stats) {
  Napi::Object o = Napi::Object::New(env);
  for (const auto& [k, v] : stats) o.Set(k, num(env, static_cast<double>(v)));
  return o;
}

Napi::Array history_array(Napi::Env env, const std::vector<TraceEvent>& events, const ContextTable& ctx) {
  Napi::Array arr = Napi::Array::New(env, events.size());
  for (size_t i = 0; i < events.size(); ++i) {
    const TraceEvent& e = events[i];
    Napi::Object o = Napi::Object::New(env);
    o.Set("action", trace_action_name(e.action));
    o.Set("timeNs", num(env, static_cast<double>(e.time_ns)));
    o.Set("address", num(env, static_cast<double>(e.addr)));
    o.Set("size", num(env, static_cast<double>(e.size)));
    o.Set("blockSize", num(env, static_cast<double>(e.block_size)));
    o.Set("stream", num(env, static_cast<double>(e.stream)));
    o.Set("context", ctx.name(e.context));
    arr.Set(static_cast<uint32_t>(i), o);
  }
  return arr;
}

Napi::Object snapshot_object(Napi::Env env, const MemorySnapshot& s, const ContextTable& ctx) {
  Napi::Array segs = Napi::Array::New(env, s.segments.size());
  for (size_t i = 0; i < s.segments.size(); ++i) {
    const SegmentSnapshot& seg = s.segments[i];
    Napi::Object o = Napi::Object::New(env);
    o.Set("address", num(env, static_cast<double>(seg.address)));
    o.Set("totalSize", num(env, static_cast<double>(seg.total_size)));
    o.Set("allocatedSize", num(env, static_cast<double>(seg.allocated_size)));
    o.Set("activeSize", num(env, static_cast<double>(seg.active_size)));
    o.Set("requestedSize", num(env, static_cast<double>(seg.requested_size)));
    o.Set("stream", num(env, static_cast<double>(seg.stream)));
    o.Set("pool", seg.is_large ? "large" : "small");
    o.Set("isExpandable", Napi::Boolean::New(env, seg.is_expandable));
    o.Set("context", ctx.name(seg.context));
    Napi::Array blocks = Napi::Array::New(env, seg.blocks.size());
    for (size_t j = 0; j < seg.blocks.size(); ++j) {
      const BlockSnapshot& b = seg.blocks[j];
      Napi::Object bo = Napi::Object::New(env);
      bo.Set("address", num(env, static_cast<double>(b.address)));
      bo.Set("size", num(env, static_cast<double>(b.size)));
      bo.Set("requestedSize", num(env, static_cast<double>(b.requested_size)));
      bo.Set("state", b.state());
      bo.Set("context", ctx.name(b.context));
      blocks.Set(static_cast<uint32_t>(j), bo);
    }
    o.Set("blocks", blocks);
    segs.Set(static_cast<uint32_t>(i), o);
  }
  Napi::Object out = Napi::Object::New(env);
  out.Set("segments", segs);
  out.Set("trace", history_array(env, s.trace, ctx));
  return out;
}

// replayAllocator(ops, sizes, ids, streams?, options?)
Napi::Value ReplayAllocator(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 3 || !info[0].IsTypedArray() ||
      info[0].As<Napi::TypedArray>().TypedArrayType() != napi_uint8_array)
    throw Napi::TypeError::New(env, "replayAllocator(ops: Uint8Array, sizes, ids: Uint32Array, streams?, options?)");
  Napi::Uint8Array ops = info[0].As<Napi::Uint8Array>();
  std::vector<uint64_t> sizes = u64_column(env, info[1], "sizes");
  if (!info[2].IsTypedArray() || info[2].As<Napi::TypedArray>().TypedArrayType() != napi_uint32_array)
    throw Napi::TypeError::New(env, "ids must be a Uint32Array");
  Napi::Uint32Array ids = info[2].As<Napi::Uint32Array>();
  const size_t n = ops.ElementLength();
  if (sizes.size() != n || ids.ElementLength() != n)
    throw Napi::RangeError::New(env, "ops, sizes and ids must have the same length");
  std::vector<uint32_t> streams(n, 0);
  if (info.Length() > 3 && !info[3].IsUndefined() && !info[3].IsNull()) {
    if (!info[3].IsTypedArray() || info[3].As<Napi::TypedArray>().TypedArrayType() != napi_uint32_array)
      throw Napi::TypeError::New(env, "streams must be a Uint32Array");
    Napi::Uint32Array s = info[3].As<Napi::Uint32Array>();
    if (s.ElementLength() != n) throw Napi::RangeError::New(env, "streams must have the same length as ops");
    for (size_t i = 0; i < n; ++i) streams[i] = s[i];
  }
  ReplayOptions opt;
  std::vector<uint64_t> seg_addrs;
  std::vector<SeedSegment> seed;
  std::vector<uint32_t> seed_ids;
  bool has_seed = false;
  if (info.Length() > 4 && info[4].IsObject()) {
    Napi::Object o = info[4].As<Napi::Object>();
    if (auto v = opt_string(o, "device")) opt.device_id = *v;
    if (auto v = opt_string(o, "settings")) opt.settings = *v;
    if (auto v = opt_bytes(o, "capacity")) opt.capacity = *v;
    if (auto v = opt_number(o, "fraction")) opt.memory_fraction = *v;
    if (auto v = opt_number(o, "historyMax")) opt.history_max_entries = static_cast<size_t>(*v);
    opt.record_history = opt_bool(o, "history");
    opt.take_snapshot = opt_bool(o, "snapshot");
    if (o.Has("segmentAddresses") && !o.Get("segmentAddresses").IsUndefined())
      seg_addrs = u64_column(env, o.Get("segmentAddresses"), "segmentAddresses");
    if (o.Has("seed") && o.Get("seed").IsObject()) {
      read_seed(env, o.Get("seed").As<Napi::Object>(), seed, seed_ids);
      has_seed = true;
    }
  }
  ReplayInput in{ops.Data(), sizes.data(), ids.Data(), streams.data(), n, seg_addrs.data(), seg_addrs.size()};
  if (has_seed) {
    in.seed = &seed;
    in.seed_ids = &seed_ids;
  }

  std::shared_ptr<Device> dev = open_device(opt.device_id);
  CachingAllocator a(dev, AllocatorSettings::parse(opt.settings));
  if (opt.memory_fraction) a.set_memory_fraction(*opt.memory_fraction);
  if (opt.capacity) a.set_capacity_limit(*opt.capacity);
  if (opt.record_history) a.set_history(true, opt.history_max_entries);
  ReplayResult r = replay(a, in, opt.take_snapshot);

  Napi::Object out = Napi::Object::New(env);
  out.Set("peakAllocated", num(env, static_cast<double>(r.peak_allocated)));
  out.Set("peakReserved", num(env, static_cast<double>(r.peak_reserved)));
  out.Set("unallocatedAtPeak", num(env, static_cast<double>(r.unallocated_at_peak)));
  out.Set("numDeviceAlloc", num(env, static_cast<double>(r.num_device_alloc)));
  out.Set("numDeviceFree", num(env, static_cast<double>(r.num_device_free)));
  out.Set("numOoms", num(env, static_cast<double>(r.num_ooms)));
  out.Set("numAllocRetries", num(env, static_cast<double>(r.num_alloc_retries)));
  out.Set("virtualTimeNs", num(env, static_cast<double>(r.virtual_time_ns)));
  out.Set("memoryStats", stats_object(env, r.memory_stats));
  if (r.first_oom_index >= 0) {
    Napi::Object oom = Napi::Object::New(env);
    oom.Set("index", num(env, static_cast<double>(r.first_oom_index)));
    oom.Set("message", r.first_oom_message);
    out.Set("firstOom", oom);
  } else {
    out.Set("firstOom", env.Null());
  }
  Napi::Array attempts = Napi::Array::New(env, r.oom_attempts.size());
  for (size_t i = 0; i < r.oom_attempts.size(); ++i) {
    Napi::Object at = Napi::Object::New(env);
    at.Set("index", num(env, static_cast<double>(r.oom_attempts[i].index)));
    at.Set("failed", Napi::Boolean::New(env, r.oom_attempts[i].failed));
    at.Set("message", r.oom_attempts[i].message);
    attempts.Set(static_cast<uint32_t>(i), at);
  }
  out.Set("oomAttempts", attempts);
  if (opt.record_history) out.Set("history", history_array(env, r.history, a.contexts()));
  if (r.snapshot) out.Set("snapshot", snapshot_object(env, *r.snapshot, a.contexts()));
  return out;
}

class AllocatorWrap : public Napi::ObjectWrap<AllocatorWrap> {
 public:
  static Napi::Function Define(Napi::Env env) {
    return DefineClass(
        env, "Allocator",
        {InstanceMethod("malloc", &AllocatorWrap::Malloc), InstanceMethod("free", &AllocatorWrap::Free),
         InstanceMethod("emptyCache", &AllocatorWrap::EmptyCache), InstanceMethod("stats", &AllocatorWrap::Stats),
         InstanceMethod("memoryAllocated", &AllocatorWrap::MemoryAllocated),
         InstanceMethod("memoryReserved", &AllocatorWrap::MemoryReserved),
         InstanceMethod("snapshot", &AllocatorWrap::Snapshot), InstanceMethod("summary", &AllocatorWrap::Summary),
         InstanceMethod("setFraction", &AllocatorWrap::SetFraction),
         InstanceMethod("setCapacity", &AllocatorWrap::SetCapacity),
         InstanceMethod("resetPeak", &AllocatorWrap::ResetPeak),
         InstanceMethod("setHistory", &AllocatorWrap::SetHistory), InstanceMethod("history", &AllocatorWrap::History),
         InstanceMethod("virtualTimeNs", &AllocatorWrap::VirtualTimeNs),
         InstanceMethod("device", &AllocatorWrap::DeviceInfoJs)});
  }

  // new Allocator(deviceId?, settings?, options?: {capacity?, fraction?, history?, historyMax?})
  explicit AllocatorWrap(const Napi::CallbackInfo& info) : Napi::ObjectWrap<AllocatorWrap>(info) {
    Napi::Env env = info.Env();
    std::string device_id =
        info.Length() > 0 && info[0].IsString() ? info[0].As<Napi::String>().Utf8Value() : default_device_id();
    std::string settings = info.Length() > 1 && info[1].IsString() ? info[1].As<Napi::String>().Utf8Value() : "";
    std::shared_ptr<Device> dev = open_device(device_id);
    alloc_ = std::make_unique<CachingAllocator>(dev, AllocatorSettings::parse(settings));
    if (info.Length() > 2 && info[2].IsObject()) {
      Napi::Object o = info[2].As<Napi::Object>();
      if (auto v = opt_number(o, "fraction")) alloc_->set_memory_fraction(*v);
      if (auto v = opt_bytes(o, "capacity")) alloc_->set_capacity_limit(*v);
      if (opt_bool(o, "history")) {
        auto max = opt_number(o, "historyMax");
        alloc_->set_history(true, max ? static_cast<size_t>(*max) : 100000);
      }
    }
    (void)env;
  }

 private:
  // malloc(bytes, stream?, tag?) -> address (a Number; GPU addresses fit in 53 bits)
  Napi::Value Malloc(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    if (info.Length() < 1) throw Napi::TypeError::New(env, "malloc(bytes, stream?, tag?)");
    uint64_t bytes = to_bytes(env, info[0], "bytes");
    StreamId stream =
        info.Length() > 1 && info[1].IsNumber() ? static_cast<StreamId>(info[1].As<Napi::Number>().Int64Value()) : 0;
    ContextId ctx =
        info.Length() > 2 && info[2].IsString() ? alloc_->contexts().intern(info[2].As<Napi::String>().Utf8Value()) : 0;
    Allocation a = alloc_->malloc(bytes, stream, ctx);  // OutOfMemoryError becomes a JS Error
    return num(env, static_cast<double>(a.ptr));
  }
  Napi::Value Free(const Napi::CallbackInfo& info) {
    if (info.Length() < 1) throw Napi::TypeError::New(info.Env(), "free(address)");
    alloc_->free(static_cast<uintptr_t>(to_bytes(info.Env(), info[0], "address")));
    return info.Env().Undefined();
  }
  Napi::Value EmptyCache(const Napi::CallbackInfo& info) {
    alloc_->empty_cache();
    return info.Env().Undefined();
  }
  Napi::Value Stats(const Napi::CallbackInfo& info) { return stats_object(info.Env(), alloc_->memory_stats()); }
  Napi::Value MemoryAllocated(const Napi::CallbackInfo& info) {
    return num(info.Env(), static_cast<double>(alloc_->memory_allocated()));
  }
  Napi::Value MemoryReserved(const Napi::CallbackInfo& info) {
    return num(info.Env(), static_cast<double>(alloc_->memory_reserved()));
  }
  Napi::Value Snapshot(const Napi::CallbackInfo& info) {
    return snapshot_object(info.Env(), alloc_->snapshot(true), alloc_->contexts());
  }
  Napi::Value Summary(const Napi::CallbackInfo& info) {
    bool abbreviated = info.Length() > 0 && info[0].IsBoolean() && info[0].As<Napi::Boolean>().Value();
    return Napi::String::New(info.Env(), alloc_->memory_summary(abbreviated));
  }
  Napi::Value SetFraction(const Napi::CallbackInfo& info) {
    if (info.Length() < 1 || !info[0].IsNumber())
      throw Napi::TypeError::New(info.Env(), "setFraction(fraction: number)");
    alloc_->set_memory_fraction(info[0].As<Napi::Number>().DoubleValue());
    return info.Env().Undefined();
  }
  Napi::Value SetCapacity(const Napi::CallbackInfo& info) {
    if (info.Length() < 1 || info[0].IsNull() || info[0].IsUndefined())
      alloc_->set_capacity_limit(std::nullopt);
    else
      alloc_->set_capacity_limit(to_bytes(info.Env(), info[0], "capacity"));
    return info.Env().Undefined();
  }
  Napi::Value ResetPeak(const Napi::CallbackInfo& info) {
    alloc_->reset_peak();
    return info.Env().Undefined();
  }
  Napi::Value SetHistory(const Napi::CallbackInfo& info) {
    bool enabled = info.Length() > 0 && info[0].IsBoolean() && info[0].As<Napi::Boolean>().Value();
    size_t max =
        info.Length() > 1 && info[1].IsNumber() ? static_cast<size_t>(info[1].As<Napi::Number>().Int64Value()) : 100000;
    alloc_->set_history(enabled, max);
    return info.Env().Undefined();
  }
  Napi::Value History(const Napi::CallbackInfo& info) {
    return history_array(info.Env(), alloc_->history(), alloc_->contexts());
  }
  Napi::Value VirtualTimeNs(const Napi::CallbackInfo& info) {
    return num(info.Env(), static_cast<double>(alloc_->virtual_time_ns()));
  }
  Napi::Value DeviceInfoJs(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    DeviceInfo d = alloc_->device().info();
    Napi::Object o = Napi::Object::New(env);
    o.Set("id", d.id);
    o.Set("kind", d.kind);
    o.Set("name", d.name);
    o.Set("total", num(env, static_cast<double>(d.total)));
    o.Set("free", num(env, static_cast<double>(d.free)));
    o.Set("context", num(env, static_cast<double>(d.context)));
    return o;
  }

  std::unique_ptr<CachingAllocator> alloc_;
};

}  // namespace

void registerAllocator(Napi::Env env, Napi::Object exports) {
  exports.Set("replayAllocator", Napi::Function::New(env, ReplayAllocator, "replayAllocator"));
  exports.Set("Allocator", AllocatorWrap::Define(env));
  // The size classes (allocator/constants.h), for the TypeScript side to check its own against.
  Napi::Object c = Napi::Object::New(env);
  c.Set("minBlockSize", double(alloc::kMinBlockSize));
  c.Set("smallSize", double(alloc::kSmallSize));
  c.Set("smallBuffer", double(alloc::kSmallBuffer));
  c.Set("largeBuffer", double(alloc::kLargeBuffer));
  c.Set("minLargeAlloc", double(alloc::kMinLargeAlloc));
  c.Set("roundLarge", double(alloc::kRoundLarge));
  c.Set("roundupIntervals", double(alloc::kRoundUpPowerOfTwoIntervals));
  exports.Set("allocatorConstants", c);
}

}  // namespace vramlab::addon
