#pragma once
// EngineContext: the device a session computes on — its allocator, its backend, the
// cuBLAS workspaces PyTorch keeps per (thread, stream), the sim time model and the
// event hook. One context is current per thread (ContextGuard).
#include <array>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>

#include "device/device.h"
#include "engine/core/alloc_tag.h"
#include "engine/core/memory.h"
#include "engine/core/tensor.h"

namespace vramlab::engine {

class Backend;

// Which CPU thread runs the current work: PyTorch runs CUDA backward on the autograd
// device thread, whose cuBLAS handle (and workspaces) differ from the caller's.
enum class ThreadRole : uint8_t { Forward = 0, Backward = 1 };
ThreadRole& thread_role();

struct EngineEvent {
  enum class Kind : uint8_t { PhaseBegin, PhaseEnd, Sample, Reading };
  Kind kind = Kind::Sample;
  std::string name;    // phase: "iteration", "microbatch", "forward", "backward", "optimizer_step",
                       // "zero_grad", "module"; reading: its key
  std::string module;  // module path for "module" phases
  int64_t iteration = -1, micro_batch = -1;
  int64_t allocated = 0, reserved = 0, value = 0;
  std::array<int64_t, kNumCategories> by_category{};
  double sim_time_s = 0;
};

class EngineContext {
 public:
  EngineContext(std::shared_ptr<Backend> backend, MemoryBackend* memory, DeviceInfo info);
  ~EngineContext();
  EngineContext(const EngineContext&) = delete;
  EngineContext& operator=(const EngineContext&) = delete;

  Backend& backend() { return *backend_; }
  MemoryBackend& memory() { return *memory_; }
  const DeviceInfo& device_info() const { return info_; }
  bool on_device() const;  // tensors live on a (real or simulated) GPU

  std::shared_ptr<Storage> allocate_storage(size_t nbytes, TagId tag);
  void storage_freed(const Storage& s);
  // Files a live storage under another category (its bytes move with it; totals do not
  // change): a backward buffer AccumulateGrad keeps as a parameter's .grad.
  void recategorize(Storage& s, Category c);
  // storage.resize_(nbytes) from or to 0, as FSDP frees and re-allocates an unsharded
  // parameter in place: 0 gives the block back, otherwise a new block of nbytes is taken
  // (on the memory's current stream) for a storage that has none.
  void resize_storage(Storage& s, size_t nbytes);
  // Points allocation at another memory (returns the previous one): FSDP builds its model
  // as PyTorch does on the meta device, where parameters take no device memory.
  MemoryBackend* swap_memory(MemoryBackend* m) {
    MemoryBackend* old = memory_;
    memory_ = m;
    return old;
  }
  int64_t category_bytes(Category c) const { return category_bytes_[size_t(c)]; }
  std::array<int64_t, kNumCategories> category_snapshot() const { return category_bytes_; }

  // cuBLAS keeps one workspace per (handle, stream), i.e. per thread; addmm with a
  // 1-D bias runs through cuBLASLt, which adds its own workspace for that thread.
  void ensure_blas_workspace(bool lt);
  size_t cublas_workspace_size() const;
  size_t cublaslt_workspace_size() const { return size_t(1) << 20; }
  void clear_blas_workspaces();  // torch._C._cuda_clearCublasWorkspaces()
  // The calling thread's cuBLAS workspace block (null before its first matmul).
  const Storage* blas_workspace() const;

  // cudaDeviceProp's multiProcessorCount and maxThreadsPerMultiProcessor (reduction
  // launch configs depend on them), from the device name.
  int sm_count() const;
  int max_threads_per_sm() const;
  int compute_capability() const;  // 90 for sm_90 (kernel choices such as SDPA's depend on it)

  bool allow_tf32 = false;
  std::string last_sdpa_backend;  // the fused attention kernel the last SDPA call chose
  double modeled_time_s() const;  // the sim backend's time model, 0 elsewhere
  uint64_t next_seed() { return rng_(); }
  void manual_seed(uint64_t s) { rng_.seed(s); }
  // The generator's state, saved and restored around a checkpointed region's
  // recomputation (preserve_rng_state: the same dropout masks the second time).
  const std::mt19937_64& rng_state() const { return rng_; }
  void set_rng_state(const std::mt19937_64& s) { rng_ = s; }

  // Event hook for live charts: phase markers and periodic samples.
  std::function<void(const EngineEvent&)> on_event;
  int64_t sample_every = 0;  // emit a Sample every N allocations (0: never)
  void emit(EngineEvent e);
  void phase(bool begin, const std::string& name, int64_t iteration = -1, int64_t micro = -1,
             const std::string& module = "");

 private:
  std::shared_ptr<Backend> backend_;
  MemoryBackend* memory_;
  DeviceInfo info_;
  std::array<int64_t, kNumCategories> category_bytes_{};
  std::map<std::pair<int, int>, std::shared_ptr<Storage>> workspaces_;  // (role, lt?) -> block
  std::mt19937_64 rng_{0};
  int64_t alloc_count_ = 0;
};

EngineContext& current_context();  // throws std::logic_error when none is set
EngineContext* current_context_or_null();

class ContextGuard {
 public:
  explicit ContextGuard(EngineContext& c);
  ~ContextGuard();
  ContextGuard(const ContextGuard&) = delete;
  ContextGuard& operator=(const ContextGuard&) = delete;

 private:
  EngineContext* saved_;
};

}  // namespace vramlab::engine
