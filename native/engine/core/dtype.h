#pragma once
// Element types the engine knows, their sizes, PyTorch's names and type promotion.
#include <cstddef>
#include <cstdint>
#include <string>

namespace vramlab::engine {

enum class DType : uint8_t { Float32, Float16, BFloat16, Float64, Int64 };

size_t itemsize(DType t);
bool is_floating(DType t);
const char* dtype_name(DType t);                       // "float32"
std::string torch_type_name(DType t, bool on_device);  // "torch.cuda.FloatTensor"
DType parse_dtype(const std::string& s);               // "float16", "fp16", "half", ...

// torch.promote_types for two dtypes.
DType promote_types(DType a, DType b);
// torch.result_type for two tensors: a 0-dim operand does not raise the dtype of a
// dimensioned operand of the same category (PyTorch's wrapped/zero-dim rule).
DType result_type(DType a, bool a_zero_dim, DType b, bool b_zero_dim);

// IEEE half and bfloat16 bit conversions (round to nearest even).
uint16_t float_to_half(float f);
float half_to_float(uint16_t h);
uint16_t float_to_bf16(float f);
float bf16_to_float(uint16_t b);

}  // namespace vramlab::engine
