#pragma once
// Per-element formulas on the device, in float: the mirror of backends/scalar_math.h
// (op codes are the engine's UnaryOp / BinaryOp / TernaryOp values).
#include <cuda_runtime.h>

namespace vramlab::engine::cuda {

enum OpKind { kUnary = 0, kBinary = 1, kTernary = 2 };

__device__ __forceinline__ float gelu_exact_f(float x) { return 0.5f * x * (1.f + erff(x * 0.70710678118654752f)); }
__device__ __forceinline__ float gelu_tanh_f(float x) {
  const float k = 0.79788456080286536f;  // sqrt(2/pi)
  return 0.5f * x * (1.f + tanhf(k * (x + 0.044715f * x * x * x)));
}
__device__ __forceinline__ float gelu_exact_grad_f(float x) {
  float cdf = 0.5f * (1.f + erff(x * 0.70710678118654752f));
  float pdf = expf(-0.5f * x * x) * 0.39894228040143268f;  // 1/sqrt(2*pi)
  return cdf + x * pdf;
}
__device__ __forceinline__ float gelu_tanh_grad_f(float x) {
  const float k = 0.79788456080286536f;
  float t = tanhf(k * (x + 0.044715f * x * x * x));
  return 0.5f * (1.f + t) + 0.5f * x * (1.f - t * t) * k * (1.f + 3.f * 0.044715f * x * x);
}

template <int Kind, int Op>
__device__ __forceinline__ float apply_op(float a, float b, float c, float s) {
  if constexpr (Kind == kUnary) {
    if constexpr (Op == 0)
      return a;  // Copy
    else if constexpr (Op == 1)
      return -a;  // Neg
    else if constexpr (Op == 2)
      return a > 0.f ? a : 0.f;  // Relu
    else if constexpr (Op == 3)
      return gelu_exact_f(a);
    else if constexpr (Op == 4)
      return gelu_tanh_f(a);
    else if constexpr (Op == 5)
      return sqrtf(a);
    else if constexpr (Op == 6)
      return expf(a);
    else if constexpr (Op == 7)
      return logf(a);
    else if constexpr (Op == 8)
      return fabsf(a);
    else if constexpr (Op == 9)
      return a * a;
    else if constexpr (Op == 10)
      return 1.f / a;
    else if constexpr (Op == 11)
      return a + s;  // AddScalar
    else if constexpr (Op == 12)
      return a * s;  // MulScalar
    else if constexpr (Op == 13)
      return a / s;  // DivScalar
    else if constexpr (Op == 14)
      return s - a;  // RSubScalar
    else if constexpr (Op == 15)
      return powf(a, s);  // PowScalar
    else if constexpr (Op == 16)
      return a / (1.f + expf(-a));  // Silu
    else if constexpr (Op == 17)
      return rsqrtf(a);  // Rsqrt
    else
      return tanhf(a);  // Tanh
  } else if constexpr (Kind == kBinary) {
    if constexpr (Op == 0)
      return a + s * b;  // Add
    else if constexpr (Op == 1)
      return a - s * b;  // Sub
    else if constexpr (Op == 2)
      return a * b;  // Mul
    else if constexpr (Op == 3)
      return a / b;  // Div
    else if constexpr (Op == 4)
      return b > 0.f ? a : 0.f;  // ThresholdBackward
    else if constexpr (Op == 5)
      return a * gelu_exact_grad_f(b);
    else if constexpr (Op == 6)
      return a * gelu_tanh_grad_f(b);
    else if constexpr (Op == 7)
      return (a - b) * (a - b);  // SqDiff
    else if constexpr (Op == 8)
      return a + s * (b - a);  // Lerp
    else if constexpr (Op == 9)
      return a > b ? a : b;         // Maximum
    else if constexpr (Op == 10) {  // SiluBackward
      float sg = 1.f / (1.f + expf(-b));
      return a * sg * (1.f + b * (1.f - sg));
    } else {
      return a * (1.f - b * b);  // TanhBackward
    }
  } else {
    if constexpr (Op == 0)
      return a + s * b * c;  // Addcmul
    else if constexpr (Op == 1)
      return a + s * b / c;  // Addcdiv
    else
      return s * (a - b) * c;  // MseBackward
  }
}

}  // namespace vramlab::engine::cuda
