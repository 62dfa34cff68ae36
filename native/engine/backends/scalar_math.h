#pragma once
// Per-element formulas shared by the CPU reference kernels (and mirrored by the CUDA
// kernels): one definition of what each op computes.
#include <cmath>

#include "engine/backends/backend.h"

namespace vramlab::engine {

inline double gelu_exact(double x) { return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))); }
inline double gelu_tanh(double x) {
  const double k = std::sqrt(2.0 / M_PI);
  return 0.5 * x * (1.0 + std::tanh(k * (x + 0.044715 * x * x * x)));
}
inline double gelu_exact_grad(double x) {
  double cdf = 0.5 * (1.0 + std::erf(x / std::sqrt(2.0)));
  double pdf = std::exp(-0.5 * x * x) / std::sqrt(2.0 * M_PI);
  return cdf + x * pdf;
}
inline double gelu_tanh_grad(double x) {
  const double k = std::sqrt(2.0 / M_PI);
  double inner = k * (x + 0.044715 * x * x * x);
  double t = std::tanh(inner);
  return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * k * (1.0 + 3.0 * 0.044715 * x * x);
}

inline double silu(double x) { return x / (1.0 + std::exp(-x)); }
inline double silu_grad(double x) {
  double sg = 1.0 / (1.0 + std::exp(-x));
  return sg * (1.0 + x * (1.0 - sg));
}

inline double apply_unary(UnaryOp op, double a, double s) {
  switch (op) {
    case UnaryOp::Copy:
      return a;
    case UnaryOp::Neg:
      return -a;
    case UnaryOp::Relu:
      return a > 0 ? a : 0.0;
    case UnaryOp::Gelu:
      return gelu_exact(a);
    case UnaryOp::GeluTanh:
      return gelu_tanh(a);
    case UnaryOp::Sqrt:
      return std::sqrt(a);
    case UnaryOp::Exp:
      return std::exp(a);
    case UnaryOp::Log:
      return std::log(a);
    case UnaryOp::Abs:
      return std::fabs(a);
    case UnaryOp::Square:
      return a * a;
    case UnaryOp::Reciprocal:
      return 1.0 / a;
    case UnaryOp::AddScalar:
      return a + s;
    case UnaryOp::MulScalar:
      return a * s;
    case UnaryOp::DivScalar:
      return a / s;
    case UnaryOp::RSubScalar:
      return s - a;
    case UnaryOp::PowScalar:
      return std::pow(a, s);
    case UnaryOp::Silu:
      return silu(a);
    case UnaryOp::Rsqrt:
      return 1.0 / std::sqrt(a);
    case UnaryOp::Tanh:
      return std::tanh(a);
  }
  return a;
}

inline double apply_binary(BinaryOp op, double a, double b, double s) {
  switch (op) {
    case BinaryOp::Add:
      return a + s * b;
    case BinaryOp::Sub:
      return a - s * b;
    case BinaryOp::Mul:
      return a * b;
    case BinaryOp::Div:
      return a / b;
    case BinaryOp::ThresholdBackward:
      return b > 0 ? a : 0.0;
    case BinaryOp::GeluBackward:
      return a * gelu_exact_grad(b);
    case BinaryOp::GeluTanhBackward:
      return a * gelu_tanh_grad(b);
    case BinaryOp::SqDiff:
      return (a - b) * (a - b);
    case BinaryOp::Lerp:
      return a + s * (b - a);
    case BinaryOp::Maximum:
      return a > b ? a : b;
    case BinaryOp::SiluBackward:
      return a * silu_grad(b);
    case BinaryOp::TanhBackward:
      return a * (1.0 - b * b);
  }
  return a;
}

inline double apply_ternary(TernaryOp op, double a, double b, double c, double s) {
  switch (op) {
    case TernaryOp::Addcmul:
      return a + s * b * c;
    case TernaryOp::Addcdiv:
      return a + s * b / c;
    case TernaryOp::MseBackward:
      return s * (a - b) * c;
  }
  return a;
}

}  // namespace vramlab::engine
