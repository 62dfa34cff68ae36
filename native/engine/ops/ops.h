#pragma once
// The engine's differentiable ops. Each records the autograd node PyTorch records,
// saving the same tensors (tools/autograd/derivatives.yaml), so activation memory
// and the order memory is freed in backward match PyTorch.
#include <optional>
#include <vector>

#include "engine/core/tensor.h"

namespace vramlab::engine {

// creation (ops/creation.cpp)
Tensor empty(const Shape& sizes, DType dtype = DType::Float32);
Tensor empty_strided(const Shape& sizes, const Shape& strides, DType dtype);
Tensor zeros(const Shape& sizes, DType dtype = DType::Float32);
Tensor ones(const Shape& sizes, DType dtype = DType::Float32);
Tensor full(const Shape& sizes, double value, DType dtype = DType::Float32);
Tensor randn(const Shape& sizes, DType dtype = DType::Float32);
Tensor rand_uniform(const Shape& sizes, double lo, double hi, DType dtype = DType::Float32);
Tensor randint(const Shape& sizes, int64_t high);  // int64 labels in [0, high)
Tensor empty_like(const Tensor& t);
Tensor zeros_like(const Tensor& t);
Tensor ones_like(const Tensor& t);
Tensor& fill_(Tensor& t, double v);  // in place, bumps the version
Tensor& zero_(Tensor& t);
Tensor& uniform_(Tensor& t, double lo, double hi);
Tensor& normal_(Tensor& t, double mean, double std);

// views (ops/view.cpp) — see Tensor::view etc.
Tensor alias_with_sizes(const Tensor& t, const Shape& sizes, const Shape& strides, int64_t offset);

// nn layers' ops (ops/embedding.cpp, ops/layer_norm.cpp, ops/attention.cpp)
Tensor embedding(const Tensor& weight, const Tensor& indices);
Tensor layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps);  // over the last dim

// joining, splitting, repeating (ops/shape.cpp)
Tensor cat(const std::vector<Tensor>& ts, int64_t dim);
std::vector<Tensor> split(const Tensor& t, int64_t split_size, int64_t dim);  // views
Tensor flatten(const Tensor& t, int64_t start, int64_t end);
Tensor repeat_interleave(const Tensor& t, int64_t repeats, int64_t dim);
Tensor arange(int64_t start, int64_t end);     // int64
Tensor argmax(const Tensor& t, bool keepdim);  // over the last dim, int64

// copies and casts (ops/copy.cpp)
Tensor& copy_(Tensor& dst, const Tensor& src);  // broadcasting, dtype converting, in place

// elementwise (ops/elementwise.cpp); broadcasting and type promotion as in PyTorch
Tensor add(const Tensor& a, const Tensor& b, double alpha = 1.0);
Tensor sub(const Tensor& a, const Tensor& b, double alpha = 1.0);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor div(const Tensor& a, const Tensor& b);
Tensor add(const Tensor& a, double s);
Tensor mul(const Tensor& a, double s);
Tensor div(const Tensor& a, double s);
Tensor neg(const Tensor& a);
Tensor& add_(Tensor& a, const Tensor& b, double alpha = 1.0);
Tensor& add_(Tensor& a, double s);
Tensor& mul_(Tensor& a, const Tensor& b);
Tensor& mul_(Tensor& a, double s);
Tensor& div_(Tensor& a, double s);
Tensor& div_(Tensor& a, const Tensor& b);      // saves a clone of self when other needs a gradient
Tensor pow(const Tensor& a, double exponent);  // pow.Tensor_Scalar
Tensor rsqrt(const Tensor& a);
Tensor silu(const Tensor& a);
Tensor tanh(const Tensor& a);  // saves its result
// optimizer arithmetic (no autograd; in-place forms bump versions)
Tensor sqrt(const Tensor& a);
Tensor& lerp_(Tensor& a, const Tensor& b, double w);
Tensor& addcmul_(Tensor& a, const Tensor& b, const Tensor& c, double v);
Tensor& addcdiv_(Tensor& a, const Tensor& b, const Tensor& c, double v);

// activations (ops/activation.cpp)
Tensor relu(const Tensor& a);
Tensor& relu_(Tensor& a);
Tensor gelu(const Tensor& a, bool tanh_approximation = false);
Tensor threshold_backward(const Tensor& grad, const Tensor& self, double threshold);
Tensor gelu_backward(const Tensor& grad, const Tensor& self, bool tanh_approximation);

// matmul (ops/matmul.cpp)
Tensor mm(const Tensor& a, const Tensor& b);
Tensor addmm(const Tensor& bias, const Tensor& a, const Tensor& b);
Tensor matmul(const Tensor& a, const Tensor& b);
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor());

// reductions (ops/reduce.cpp)
Tensor sum(const Tensor& a);
Tensor sum(const Tensor& a, const std::vector<int64_t>& dims, bool keepdim = false);
Tensor sum(const Tensor& a, DType dtype);  // sum(dtype=...) as autocast issues it
Tensor mean(const Tensor& a);
Tensor mean(const Tensor& a, const std::vector<int64_t>& dims, bool keepdim = false);
Tensor sum_to(const Tensor& a, const Shape& shape);  // reduce broadcast dims (at::sum_to)

// losses (ops/loss.cpp)
enum class Reduction { None, Mean, Sum };
Tensor mse_loss(const Tensor& input, const Tensor& target, Reduction r = Reduction::Mean);
Tensor log_softmax(const Tensor& a, int64_t dim);
Tensor nll_loss(const Tensor& logp, const Tensor& target, Reduction r = Reduction::Mean);
Tensor cross_entropy(const Tensor& logits, const Tensor& target, Reduction r = Reduction::Mean);

// helpers shared by op files
Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op_desc = nullptr);
Tensor expand_to(const Tensor& t, const Shape& shape);  // broadcast view, no autograd
void check_inplace(const Tensor& t);                    // leaf-requiring-grad error

}  // namespace vramlab::engine
