#include "engine/parallel/process_group.h"

#include <stdexcept>

#include "engine/backends/backend.h"
#include "engine/core/context.h"

namespace vramlab::engine {

namespace {

Backend& backend_of(const Tensor& t) {
  if (!t.has_data()) throw std::invalid_argument("a group of one moves values: the tensor holds no data");
  return t.impl()->storage->ctx->backend();
}

}  // namespace

void LocalGroup::all_gather_into_tensor(const Tensor& out, const Tensor& in) {
  count_all_gather(out);
  if (out.numel() != in.numel()) throw std::invalid_argument("all_gather_into_tensor: world 1 needs equal sizes");
  if (out.data_ptr() != in.data_ptr()) backend_of(out).unary(UnaryOp::Copy, out, in, 0.0);
}

void LocalGroup::reduce_scatter_tensor(const Tensor& out, const Tensor& in, bool) {
  count_reduce_scatter(in);
  if (out.numel() != in.numel()) throw std::invalid_argument("reduce_scatter_tensor: world 1 needs equal sizes");
  if (out.data_ptr() != in.data_ptr()) backend_of(out).unary(UnaryOp::Copy, out, in, 0.0);
}

std::vector<uint8_t> LocalGroup::gather_to_host(const Tensor& t) {
  if (!t.is_contiguous()) throw std::invalid_argument("gather_to_host: a non-contiguous tensor");
  std::vector<uint8_t> host(t.nbytes());
  if (!host.empty()) backend_of(t).read_bytes(host.data(), t, host.size());
  return host;
}

uint64_t LocalGroup::fingerprint(const std::vector<Tensor>& ts) {
  uint64_t h = fnv1a(nullptr, 0);
  for (const Tensor& t : ts) {
    std::vector<uint8_t> b = gather_to_host(t);
    h = fnv1a(b.data(), b.size(), h);
  }
  return h;
}

}  // namespace vramlab::engine
