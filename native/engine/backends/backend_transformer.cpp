// Defaults for the transformer kernels: a backend without one says so by name rather
// than computing something else.
#include <stdexcept>
#include <string>

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
                                 const Tensor&, const Tensor&, const Tensor&, const Tensor&, bool, double) {
  missing(*this, "attention_backward");
}
void Backend::arange(const Tensor&, double) { missing(*this, "arange"); }
void Backend::rope_tables(const Tensor&, const Tensor&, double) { missing(*this, "rope_tables"); }
void Backend::argmax_last(const Tensor&, const Tensor&) { missing(*this, "argmax"); }

}  // namespace vramlab::engine
