#ifdef VRAMLAB_HAVE_CUDA
#include "engine/backends/cuda/kernel_views.h"

#include <stdexcept>
#include <string>

namespace vramlab::engine::cuda {

View4 view4(const Tensor& t, const char* what) {
  if (t.dim() != 4 && t.dim() != 3) throw std::invalid_argument(std::string(what) + ": expected (B, H, S, D)");
  View4 v;
  v.ptr = t.data_ptr();
  v.dtype = int32_t(t.dtype());
  for (int i = 0; i < 4; ++i) {
    v.size[i] = i < t.dim() ? t.size(i) : 1;
    v.stride[i] = i < t.dim() ? t.strides()[size_t(i)] : 0;
  }
  return v;
}

}  // namespace vramlab::engine::cuda

#endif  // VRAMLAB_HAVE_CUDA
