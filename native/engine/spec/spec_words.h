#pragma once
// The spec's word-valued fields as the engine holds them: parsed once, by read_run_spec,
// from the contract's spellings (main/contract/catalogue), so nothing inward compares
// strings. The addon exports these names (`specWords`) and a test holds them to the
// contract's lists: one set of words, two languages.
#include <array>
#include <cstdint>
#include <optional>
#include <string>

#include "engine/core/dtype.h"

namespace vramlab::engine {

enum class Precision : uint8_t { Fp32, Tf32, Fp16, Bf16 };  // autocast (tf32: matmuls)
enum class RunMode : uint8_t { Train, Inference, LossAccumulation, Generate };
enum class LossKind : uint8_t { Sum, Mse, CrossEntropy };  // stack families' loss
enum class CacheKind : uint8_t { Dynamic, Static };        // generate's KV cache

inline constexpr std::array<const char*, 4> kPrecisionWords{"fp32", "tf32", "fp16", "bf16"};
inline constexpr std::array<const char*, 4> kModeWords{"train", "inference", "loss_accumulation", "generate"};
inline constexpr std::array<const char*, 3> kLossWords{"sum", "mse", "cross_entropy"};
inline constexpr std::array<const char*, 2> kCacheWords{"dynamic", "static"};
// spec.weights is the DType the parameters are built in
inline constexpr std::array<const char*, 3> kWeightsWords{"fp32", "bf16", "fp16"};
inline constexpr std::array<DType, 3> kWeightsDTypes{DType::Float32, DType::BFloat16, DType::Float16};

inline const char* word(Precision p) { return kPrecisionWords[size_t(p)]; }
inline const char* word(RunMode m) { return kModeWords[size_t(m)]; }
inline const char* word(LossKind l) { return kLossWords[size_t(l)]; }
inline const char* word(CacheKind c) { return kCacheWords[size_t(c)]; }
inline const char* weights_word(DType d) {
  for (size_t i = 0; i < kWeightsDTypes.size(); ++i)
    if (kWeightsDTypes[i] == d) return kWeightsWords[i];
  return dtype_name(d);
}

// The index of `s` in `words`, if it is one of them.
template <size_t N>
std::optional<size_t> word_index(const std::array<const char*, N>& words, const std::string& s) {
  for (size_t i = 0; i < N; ++i)
    if (s == words[i]) return i;
  return std::nullopt;
}

}  // namespace vramlab::engine
