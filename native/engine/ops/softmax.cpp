// softmax (softmax.h). SoftmaxBackward0 saves the result; _softmax_backward_data writes a
// gradient like the result in the input's dtype (on CUDA through a grad * output temporary).
#include "engine/ops/softmax.h"

#include <stdexcept>

#include "engine/autocast/autocast.h"
#include "engine/ops/common.h"

namespace vramlab::engine {

namespace {

struct SoftmaxBackward0 : Node {
  SavedVariable result_;
  DType self_dtype{};
  std::string name() const override { return "SoftmaxBackward0"; }
  TensorList apply(TensorList& g) override {
    if (!g[0].defined()) return undefined_grads(1);
    Tensor result = result_.unpack(this);
    // softmax_backward_cuda_out: the structured op's grad_input, then tmp = grad * output
    // for the kernel, freed when it returns
    Tensor grad_input = make_tensor(result.sizes(), self_dtype, "_softmax_backward_data");
    if (current_context().backend().models_cuda()) Tensor tmp = make_tensor(result.sizes(), result.dtype(), "mul");
    return {grad_input};
  }
  void release_variables() override { result_.reset_data(); }
};

Tensor softmax_kernel(const Tensor& in, bool half_to_float) {
  auto n = make_node<SoftmaxBackward0>({&in});
  Tensor out = make_tensor(in.sizes(), half_to_float ? DType::Float32 : in.dtype(), "_softmax");
  if (n) {
    n->self_dtype = in.dtype();
    set_history(out, n);
    n->result_ = SavedVariable(out, true);
  }
  return out;
}

}  // namespace

Tensor softmax(const Tensor& x, int64_t dim, std::optional<DType> dtype) {
  if (!is_floating(x.dtype())) throw std::invalid_argument("\"softmax\" not implemented for 'Long'");
  if (autocast_active() && !dtype && x.dtype() != DType::Float64) dtype = DType::Float32;
  AutocastExcludeGuard ex;
  const int64_t d = dim < 0 ? dim + x.dim() : dim;
  if (d != x.dim() - 1 || !x.is_contiguous())
    throw std::invalid_argument("softmax: this engine takes a contiguous input over its last dim");
  if (current_context().backend().has_data())
    throw std::invalid_argument("softmax (eager attention) runs on the simulated device only");
  if (x.dtype() == DType::Float16 && dtype == DType::Float32) return softmax_kernel(x, true);
  Tensor converted = dtype ? x.to(*dtype) : x;
  return softmax_kernel(converted, false);
}

}  // namespace vramlab::engine
