#include "engine/backends/backend.h"

namespace vramlab::engine {

const char* unary_op_name(UnaryOp op) {
  static const char* names[] = {"copy",       "neg",        "relu",       "gelu",       "gelu_tanh",
                                "sqrt",       "exp",        "log",        "abs",        "square",
                                "reciprocal", "add_scalar", "mul_scalar", "div_scalar", "rsub_scalar",
                                "pow_scalar", "silu",       "rsqrt",      "tanh"};
  return names[size_t(op)];
}

const char* binary_op_name(BinaryOp op) {
  static const char* names[] = {
      "add",     "sub",  "mul",     "div",           "threshold_backward", "gelu_backward", "gelu_tanh_backward",
      "sq_diff", "lerp", "maximum", "silu_backward", "tanh_backward"};
  return names[size_t(op)];
}

}  // namespace vramlab::engine
