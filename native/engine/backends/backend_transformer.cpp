// Defaults for the transformer kernels: a backend without one says so by name rather
// than computing something else. grouped_mm's default is real: one gemm per group on
// views (the groups' row ends read to the host), for every data backend.
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/backends/backend.h"

namespace vramlab::engine {

namespace {
[[noreturn]] void missing(const Backend& b, const char* kernel) {
  throw std::runtime_error(std::string("the ") + b.name() + " backend has no " + kernel + " kernel");
}
}  // namespace

void Backend::index_select_rows(const Tensor&, const Tensor&, const Tensor&) { missing(*this, "index_select"); }
void Backend::index_add_rows(const Tensor&, const Tensor&, const Tensor&) { missing(*this, "embedding_backward"); }
void Backend::layer_norm(const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor*, const Tensor*,
                         double) {
  missing(*this, "layer_norm");
}
void Backend::layer_norm_backward(const Tensor*, const Tensor*, const Tensor*, const Tensor&, const Tensor&,
                                  const Tensor&, const Tensor&, const Tensor*) {
  missing(*this, "layer_norm_backward");
}
void Backend::attention(const Tensor&, const Tensor*, const Tensor&, const Tensor&, const Tensor&, bool, double) {
  missing(*this, "attention");
}
void Backend::attention_backward(const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&,
                                 const Tensor&, const Tensor&, const Tensor&, const Tensor&, bool, double,
                                 const AttentionScratch&) {
  missing(*this, "attention_backward");
}
void Backend::arange(const Tensor&, double) { missing(*this, "arange"); }
void Backend::rope_tables(const Tensor&, const Tensor&, double, int64_t) { missing(*this, "rope_tables"); }
void Backend::argmax_last(const Tensor&, const Tensor&) { missing(*this, "argmax"); }
void Backend::dropout(const Tensor&, const Tensor&, const Tensor&, double, uint64_t) { missing(*this, "dropout"); }
void Backend::dropout_backward(const Tensor&, const Tensor&, const Tensor&, double) {
  missing(*this, "dropout_backward");
}
void Backend::attention_dropout(const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&, bool, double,
                                double, uint64_t) {
  missing(*this, "attention with dropout");
}
void Backend::attention_dropout_backward(const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&,
                                         const Tensor&, const Tensor&, const Tensor&, const Tensor&, bool, double,
                                         double, uint64_t) {
  missing(*this, "attention with dropout backward");
}
void Backend::softmax(const Tensor&, const Tensor&) { missing(*this, "softmax"); }
void Backend::softmax_backward(const Tensor&, const Tensor&, const Tensor&) { missing(*this, "softmax_backward"); }
void Backend::topk_rows(const Tensor&, const Tensor&, const Tensor&, int64_t) { missing(*this, "topk"); }
void Backend::scatter_rows(const Tensor&, const Tensor&, const Tensor&) { missing(*this, "topk_backward"); }
void Backend::sort_int64(const Tensor&, const Tensor&, const Tensor&) { missing(*this, "sort"); }
void Backend::index_div(const Tensor&, const Tensor&, int64_t) { missing(*this, "floor_divide"); }
void Backend::invert_permutation(const Tensor&, const Tensor&) { missing(*this, "inverse permutation"); }
void Backend::group_offsets(const Tensor&, const Tensor&, const Tensor&) { missing(*this, "histc/cumsum"); }
void Backend::read_bytes(void*, const Tensor&, size_t) { missing(*this, "device-to-host copy"); }

void Backend::grouped_mm(const Tensor& out, const Tensor& a, const Tensor& b, const Tensor& offs) {
  const int64_t E = offs.numel();
  std::vector<int32_t> ends(static_cast<size_t>(E));
  read_bytes(ends.data(), offs, ends.size() * sizeof(int32_t));
  auto view2 = [](const Tensor& t, int64_t r0, int64_t rows, int64_t c0, int64_t cols) {
    return make_view(t, {rows, cols}, {t.strides()[0], t.strides()[1]},
                     t.storage_offset() + r0 * t.strides()[0] + c0 * t.strides()[1]);
  };
  int64_t start = 0;
  for (int64_t g = 0; g < E; ++g) {
    const int64_t end = ends[size_t(g)], n = end - start;
    if (out.dim() == 2) {
      // rows of group g: a[start:end] @ b[g]
      if (n > 0) {
        const Tensor bg = make_view(b, {b.size(1), b.size(2)}, {b.strides()[1], b.strides()[2]},
                                    b.storage_offset() + g * b.strides()[0]);
        gemm(view2(out, start, n, 0, out.size(1)), view2(a, start, n, 0, a.size(1)), bg, nullptr, false);
      }
    } else {
      // out[g] = a[:, start:end] @ b[start:end]; an empty group's product is zeros
      const Tensor og = make_view(out, {out.size(1), out.size(2)}, {out.strides()[1], out.strides()[2]},
                                  out.storage_offset() + g * out.strides()[0]);
      if (n > 0)
        gemm(og, view2(a, 0, a.size(0), start, n), view2(b, start, n, 0, b.size(1)), nullptr, false);
      else
        fill(og, 0.0);
    }
    start = end;
  }
}

}  // namespace vramlab::engine
