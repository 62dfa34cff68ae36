#include "addon/js_value.h"

#include <string>

namespace vramlab::addon {

namespace {

constexpr int kMaxDepth = 32;
constexpr size_t kMaxEntries = 200'000;
constexpr size_t kMaxString = 1 << 16;

struct Budget {
  size_t entries = 0;
};

engine::SpecValue convert(const Napi::Value& v, int depth, Budget& b, const std::string& path) {
  using engine::SpecValue;
  if (depth > kMaxDepth) throw Napi::RangeError::New(v.Env(), path + " is nested more than 32 deep");
  if (++b.entries > kMaxEntries) throw Napi::RangeError::New(v.Env(), path + ": too many entries");
  if (v.IsUndefined() || v.IsNull()) return SpecValue();
  if (v.IsBoolean()) return SpecValue::boolean(v.As<Napi::Boolean>().Value());
  if (v.IsNumber()) return SpecValue::number(v.As<Napi::Number>().DoubleValue());
  if (v.IsString()) {
    std::string s = v.As<Napi::String>().Utf8Value();
    if (s.size() > kMaxString) throw Napi::RangeError::New(v.Env(), path + " is longer than 64 KiB");
    return SpecValue::string(std::move(s));
  }
  if (v.IsArray()) {
    auto a = v.As<Napi::Array>();
    std::vector<SpecValue> items;
    for (uint32_t i = 0; i < a.Length(); ++i)
      items.push_back(convert(a.Get(i), depth + 1, b, path + "[" + std::to_string(i) + "]"));
    return SpecValue::array(std::move(items));
  }
  if (v.IsObject() && !v.IsFunction()) {
    auto o = v.As<Napi::Object>();
    Napi::Array names = o.GetPropertyNames();
    std::map<std::string, SpecValue> fields;
    for (uint32_t i = 0; i < names.Length(); ++i) {
      std::string k = names.Get(i).ToString().Utf8Value();
      Napi::Value f = o.Get(k);
      if (f.IsUndefined()) continue;
      fields[k] = convert(f, depth + 1, b, path + "." + k);
    }
    return SpecValue::object(std::move(fields));
  }
  throw Napi::TypeError::New(v.Env(), path + " must be JSON data (got a function or symbol)");
}

}  // namespace

engine::SpecValue spec_value_from_js(const Napi::Value& v, const char* what) {
  Budget b;
  return convert(v, 0, b, what);
}

}  // namespace vramlab::addon
