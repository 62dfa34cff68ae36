#include "engine/autocast/autocast.h"

namespace vramlab::engine {

AutocastState& autocast_state() {
  thread_local AutocastState s;
  return s;
}

bool autocast_active() {
  auto& s = autocast_state();
  return s.enabled && s.excluded == 0;
}

Tensor cached_cast(DType to, const Tensor& arg) {
  if (!arg.defined() || !is_floating(arg.dtype()) || arg.dtype() == DType::Float64 || arg.dtype() == to) return arg;
  auto& s = autocast_state();
  bool can_try_cache = to == s.dtype && to != DType::Float32 && arg.dtype() == DType::Float32 && arg.requires_grad() &&
                       arg.is_leaf() && !arg.impl()->is_view && s.cache_enabled;
  if (can_try_cache) {
    auto it = s.cache.find(arg.impl());
    if (it != s.cache.end() && !it->second.first.expired()) return it->second.second;
    Tensor casted = arg.to(to);
    s.cache[arg.impl()] = {arg.impl_ptr(), casted};
    return casted;
  }
  return arg.to(to);
}

Tensor autocast_lower(const Tensor& t) { return autocast_active() ? cached_cast(autocast_state().dtype, t) : t; }
Tensor autocast_fp32(const Tensor& t) { return autocast_active() ? cached_cast(DType::Float32, t) : t; }

void clear_autocast_cache() { autocast_state().cache.clear(); }

AutocastGuard::AutocastGuard(bool enabled, DType dtype, bool cache_enabled) {
  auto& s = autocast_state();
  saved_enabled_ = s.enabled;
  saved_dtype_ = s.dtype;
  saved_cache_ = s.cache_enabled;
  if (enabled && dtype != DType::Float16 && dtype != DType::BFloat16)
    throw std::invalid_argument("autocast supports float16 and bfloat16, got " + std::string(dtype_name(dtype)));
  s.enabled = enabled;
  s.dtype = dtype;
  s.cache_enabled = cache_enabled;
  ++s.nesting;
}

AutocastGuard::~AutocastGuard() {
  auto& s = autocast_state();
  s.enabled = saved_enabled_;
  s.dtype = saved_dtype_;
  s.cache_enabled = saved_cache_;
  if (--s.nesting == 0) s.cache.clear();
}

}  // namespace vramlab::engine
