#ifdef VRAMLAB_HAVE_CUDA
#include "engine/backends/cuda/kernel_views.h"

#include <stdexcept>
#include <string>

namespace vramlab::engine::cuda {

Mat2 mat(const Tensor& t, const char* what) {
  if (t.dim() != 2) throw std::invalid_argument(std::string(what) + ": expected a 2-D tensor, got " + t.shape_string());
  Mat2 m;
  m.ptr = t.data_ptr();
  m.dtype = int32_t(t.dtype());
  m.rows = t.size(0);
  m.cols = t.size(1);
  m.s0 = t.strides()[0];
  m.s1 = t.strides()[1];
  return m;
}

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
