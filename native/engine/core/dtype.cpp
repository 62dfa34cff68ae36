#include "engine/core/dtype.h"

#include <cstring>
#include <stdexcept>

namespace vramlab::engine {

size_t itemsize(DType t) {
  switch (t) {
    case DType::Float32:
      return 4;
    case DType::Float16:
      return 2;
    case DType::BFloat16:
      return 2;
    case DType::Float64:
      return 8;
    case DType::Int64:
      return 8;
  }
  return 4;
}

bool is_floating(DType t) { return t != DType::Int64; }

const char* dtype_name(DType t) {
  switch (t) {
    case DType::Float32:
      return "float32";
    case DType::Float16:
      return "float16";
    case DType::BFloat16:
      return "bfloat16";
    case DType::Float64:
      return "float64";
    case DType::Int64:
      return "int64";
  }
  return "?";
}

std::string torch_type_name(DType t, bool on_device) {
  const char* base = "FloatTensor";
  switch (t) {
    case DType::Float32:
      base = "FloatTensor";
      break;
    case DType::Float16:
      base = "HalfTensor";
      break;
    case DType::BFloat16:
      base = "BFloat16Tensor";
      break;
    case DType::Float64:
      base = "DoubleTensor";
      break;
    case DType::Int64:
      base = "LongTensor";
      break;
  }
  return std::string(on_device ? "torch.cuda." : "torch.") + base;
}

DType parse_dtype(const std::string& s) {
  if (s == "float32" || s == "fp32" || s == "float" || s == "tf32") return DType::Float32;
  if (s == "float16" || s == "fp16" || s == "half") return DType::Float16;
  if (s == "bfloat16" || s == "bf16") return DType::BFloat16;
  if (s == "float64" || s == "fp64" || s == "double") return DType::Float64;
  if (s == "int64" || s == "long") return DType::Int64;
  throw std::invalid_argument("unknown dtype '" + s + "'");
}

DType promote_types(DType a, DType b) {
  if (a == b) return a;
  if (a == DType::Int64) return b;
  if (b == DType::Int64) return a;
  if (a == DType::Float64 || b == DType::Float64) return DType::Float64;
  // float16 with bfloat16 and either with float32 promote to float32.
  return DType::Float32;
}

DType result_type(DType a, bool a0, DType b, bool b0) {
  if (a0 != b0 && is_floating(a) == is_floating(b)) return a0 ? b : a;
  return promote_types(a, b);
}

uint16_t float_to_half(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000u;
  int32_t exp = int32_t((x >> 23) & 0xff) - 127 + 15;
  uint32_t mant = x & 0x7fffffu;
  if (((x >> 23) & 0xff) == 0xff) return uint16_t(sign | 0x7c00u | (mant ? 0x200u : 0));
  if (exp >= 31) return uint16_t(sign | 0x7c00u);
  if (exp <= 0) {
    if (exp < -10) return uint16_t(sign);
    mant |= 0x800000u;
    uint32_t shift = uint32_t(14 - exp);
    uint32_t h = mant >> shift;
    uint32_t rem = mant & ((1u << shift) - 1), half = 1u << (shift - 1);
    if (rem > half || (rem == half && (h & 1))) ++h;
    return uint16_t(sign | h);
  }
  uint32_t h = (uint32_t(exp) << 10) | (mant >> 13);
  uint32_t rem = mant & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1))) ++h;
  return uint16_t(sign | h);
}

float half_to_float(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1f, mant = h & 0x3ffu, x;
  if (exp == 0) {
    if (mant == 0) {
      x = sign;
    } else {
      exp = 127 - 15 + 1;
      while (!(mant & 0x400u)) {
        mant <<= 1;
        --exp;
      }
      x = sign | (exp << 23) | ((mant & 0x3ffu) << 13);
    }
  } else if (exp == 31) {
    x = sign | 0x7f800000u | (mant << 13);
  } else {
    x = sign | ((exp + 127 - 15) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

uint16_t float_to_bf16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7fffffffu) > 0x7f800000u) return uint16_t((x >> 16) | 0x40);
  uint32_t lsb = (x >> 16) & 1;
  x += 0x7fffu + lsb;
  return uint16_t(x >> 16);
}

float bf16_to_float(uint16_t b) {
  uint32_t x = uint32_t(b) << 16;
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

}  // namespace vramlab::engine
