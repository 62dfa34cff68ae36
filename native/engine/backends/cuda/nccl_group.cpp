#include "engine/backends/cuda/nccl_group.h"

#ifdef VRAMLAB_HAVE_CUDA
#include <cuda_runtime_api.h>

#include <algorithm>
#include <stdexcept>
#include <vector>

#include "engine/backends/cuda/cuda_backend.h"
#include "engine/backends/cuda/cuda_check.h"
#include "engine/core/context.h"

namespace vramlab::engine::cuda {

namespace {

NcclDataType nccl_type(DType d) {
  switch (d) {
    case DType::Float32:
      return kNcclFloat32;
    case DType::Float16:
      return kNcclFloat16;
    case DType::BFloat16:
      return kNcclBFloat16;
    case DType::Float64:
      return kNcclFloat64;
    case DType::Int64:
      return kNcclInt64;
  }
  throw std::invalid_argument("no NCCL type for this dtype");
}

int64_t device_used() {
  size_t free = 0, total = 0;
  check_cuda(cudaMemGetInfo(&free, &total), "cudaMemGetInfo");
  return int64_t(total - free);
}

class NcclGroup : public ProcessGroup {
 public:
  NcclGroup(const NcclApi& api, int rank, int world, ncclComm_t comm)
      : api_(api), rank_(rank), world_(world), comm_(comm) {}
  ~NcclGroup() override {
    if (!comm_) return;
    cudaSetDevice(rank_);
    if (failed_)
      api_.comm_abort(comm_);
    else
      api_.comm_destroy(comm_);
  }
  int rank() const override { return rank_; }
  int world() const override { return world_; }

  void all_reduce_mean(const Tensor& t) override {
    count_all_reduce(t);
    void* p = data_of(t);
    run(api_.all_reduce(p, p, size_t(t.numel()), nccl_type(t.dtype()), kNcclAvg, comm_, stream()), "ncclAllReduce");
  }

  void broadcast(const Tensor& t, int root) override {
    count_broadcast(t);
    void* p = data_of(t);
    run(api_.broadcast(p, p, size_t(t.numel()), nccl_type(t.dtype()), root, comm_, stream()), "ncclBroadcast");
  }

  // FSDP2's all-gather: `in` is this rank's slice of `out` (NCCL's in-place form).
  void all_gather_into_tensor(const Tensor& out, const Tensor& in) override {
    count_all_gather(out);
    if (in.dtype() != out.dtype() || out.numel() != in.numel() * world_)
      throw std::invalid_argument("all_gather_into_tensor: out must hold world x in");
    run(api_.all_gather(data_of(in), data_of(out), size_t(in.numel()), nccl_type(in.dtype()), comm_, stream()),
        "ncclAllGather");
  }

  void reduce_scatter_tensor(const Tensor& out, const Tensor& in, bool avg) override {
    count_reduce_scatter(in);
    if (in.dtype() != out.dtype() || in.numel() != out.numel() * world_)
      throw std::invalid_argument("reduce_scatter_tensor: in must hold world x out");
    run(api_.reduce_scatter(data_of(in), data_of(out), size_t(out.numel()), nccl_type(in.dtype()),
                            avg ? kNcclAvg : kNcclSum, comm_, stream()),
        "ncclReduceScatter");
  }

  // Through a private cudaMalloc'ed buffer, outside the caching allocator.
  std::vector<uint8_t> gather_to_host(const Tensor& t) override {
    const size_t n = t.nbytes();
    std::vector<uint8_t> host(n * size_t(world_));
    if (n == 0) return host;
    void* s = stream();
    void* buf = nullptr;
    check_cuda(cudaMalloc(&buf, host.size()), "cudaMalloc");
    try {
      // as bytes: any dtype
      run(api_.all_gather(data_of(t), buf, n, kNcclUint8, comm_, s), "ncclAllGather");
      check_cuda(cudaStreamSynchronize(static_cast<cudaStream_t>(s)), "cudaStreamSynchronize");
      check_cuda(cudaMemcpy(host.data(), buf, host.size(), cudaMemcpyDeviceToHost), "cudaMemcpy");
    } catch (...) {
      cudaFree(buf);
      throw;
    }
    cudaFree(buf);
    return host;
  }

  uint64_t fingerprint(const std::vector<Tensor>& ts) override {
    check_cuda(cudaSetDevice(rank_), "cudaSetDevice");
    check_cuda(cudaStreamSynchronize(static_cast<cudaStream_t>(stream())), "cudaStreamSynchronize");
    uint64_t h = fnv1a(nullptr, 0);  // over every tensor's bytes in order
    std::vector<unsigned char> host;
    for (const Tensor& t : ts) {
      if (!t.is_contiguous()) throw std::invalid_argument("fingerprint: a non-contiguous tensor");
      host.resize(t.nbytes());
      check_cuda(cudaMemcpy(host.data(), data_of(t), t.nbytes(), cudaMemcpyDeviceToHost), "cudaMemcpy");
      h = fnv1a(host.data(), host.size(), h);
    }
    return h;
  }

 private:
  void* data_of(const Tensor& t) const {
    if (!t.is_contiguous() || !t.has_data())
      throw std::invalid_argument("NCCL collectives need a contiguous tensor with device memory");
    return t.data_ptr();
  }
  // The current engine context's CUDA backend, which must be this rank's device.
  void* stream() const {
    auto* be = dynamic_cast<CudaBackend*>(&current_context().backend());
    if (!be) throw std::logic_error("an NCCL process group runs on the cuda backend");
    if (be->ordinal() != rank_)
      throw std::logic_error("rank " + std::to_string(rank_) + " runs on cuda:" + std::to_string(rank_) +
                             ", not cuda:" + std::to_string(be->ordinal()));
    check_cuda(cudaSetDevice(rank_), "cudaSetDevice");
    return be->stream();
  }
  void run(ncclResult_t r, const char* what) {
    if (r != kNcclSuccess) failed_ = true;
    check_nccl(api_, r, what);
  }

  const NcclApi& api_;
  int rank_, world_;
  ncclComm_t comm_;
  bool failed_ = false;
};

}  // namespace

bool nccl_unique_id(NcclUniqueId* id, std::string* why) {
  const NcclApi* api = load_nccl(why);
  if (!api) return false;
  ncclResult_t r = api->get_unique_id(id);
  if (r != kNcclSuccess) {
    if (why) *why = std::string("ncclGetUniqueId failed: ") + api->error_string(r);
    return false;
  }
  return true;
}

std::unique_ptr<ProcessGroup> make_nccl_group(int rank, int world, const NcclUniqueId& id, NcclFootprint* fp,
                                              std::string* why) {
  auto fail = [&](const std::string& m) -> std::unique_ptr<ProcessGroup> {
    if (why) *why = m;
    return nullptr;
  };
  const NcclApi* api = load_nccl(why);
  if (!api) return nullptr;
  NcclFootprint f;
  f.nccl_version = api->version;
  ncclComm_t comm = nullptr;
  void* scratch = nullptr;
  cudaStream_t s = nullptr;
  try {
    check_cuda(cudaSetDevice(rank), "cudaSetDevice");
    check_cuda(cudaFree(nullptr), "cudaFree(0)");  // the context, before the first reading
    // 64 floats per rank for the all-gather's output and the reduce-scatter's input
    const size_t scratch_bytes = std::max<size_t>(256, size_t(world) * 256);
    check_cuda(cudaMalloc(&scratch, scratch_bytes), "cudaMalloc");
    check_cuda(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate");
    check_cuda(cudaMemsetAsync(scratch, 0, scratch_bytes, s), "cudaMemsetAsync");
    check_cuda(cudaStreamSynchronize(s), "cudaStreamSynchronize");
    f.before_init = device_used();
    check_nccl(*api, api->comm_init_rank(&comm, world, id, rank), "ncclCommInitRank");
    f.after_init = device_used();
    check_nccl(*api, api->all_reduce(scratch, scratch, 64, kNcclFloat32, kNcclAvg, comm, s), "ncclAllReduce");
    check_cuda(cudaStreamSynchronize(s), "cudaStreamSynchronize");
    f.after_first_all_reduce = device_used();
    check_nccl(*api, api->broadcast(scratch, scratch, 64, kNcclFloat32, 0, comm, s), "ncclBroadcast");
    check_cuda(cudaStreamSynchronize(s), "cudaStreamSynchronize");
    f.after_first_broadcast = device_used();
    float* base = static_cast<float*>(scratch);
    check_nccl(*api, api->all_gather(base + rank * 64, base, 64, kNcclFloat32, comm, s), "ncclAllGather");
    check_cuda(cudaStreamSynchronize(s), "cudaStreamSynchronize");
    f.after_first_all_gather = device_used();
    check_nccl(*api, api->reduce_scatter(base, base + rank * 64, 64, kNcclFloat32, kNcclAvg, comm, s),
               "ncclReduceScatter");
    check_cuda(cudaStreamSynchronize(s), "cudaStreamSynchronize");
    f.after_first_reduce_scatter = device_used();
    cudaStreamDestroy(s);
    cudaFree(scratch);
  } catch (const std::exception& e) {
    if (comm) api->comm_abort(comm);
    if (s) cudaStreamDestroy(s);
    if (scratch) cudaFree(scratch);
    return fail(std::string("NCCL rank ") + std::to_string(rank) + " of " + std::to_string(world) + ": " + e.what());
  }
  if (fp) *fp = f;
  return std::make_unique<NcclGroup>(*api, rank, world, comm);
}

}  // namespace vramlab::engine::cuda

#else  // no CUDA in this build

namespace vramlab::engine::cuda {

bool nccl_unique_id(NcclUniqueId*, std::string* why) {
  if (why) *why = "built without CUDA: no NCCL process group";
  return false;
}

std::unique_ptr<ProcessGroup> make_nccl_group(int, int, const NcclUniqueId&, NcclFootprint*, std::string* why) {
  if (why) *why = "built without CUDA: no NCCL process group";
  return nullptr;
}

}  // namespace vramlab::engine::cuda

#endif
