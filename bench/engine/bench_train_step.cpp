// Training-step time of the engine, beside PyTorch's measured in the same run on the same
// GPU (--torch FILE: the JSON bench/torch/train_step.py prints; test/gpu/bench.sh runs
// both): forward, sum loss,
// backward, Adam step, zero_grad(set_to_none) for the seed MLP and two residual
// stacks, in fp32, tf32 and bf16 autocast. On a GPU: CUDA events around 50 steps
// after 5 warm-up steps. On a simulated device: the sim backend's modelled time.
//
// On a GPU each row also says where the time goes and whether the run is sound:
//   fwd/bwd/opt  per-phase device time (events between the phases of a second loop):
//                forward + loss, backward, optimizer step + zero_grad
//   host_ms      host time per step of the timed loop (the launch queue fills, so this
//                follows the device once the GPU is the limit)
//   enq_ms       host time to enqueue one step onto an idle GPU: well below ours_ms when
//                launches overlap GPU work, about equal when the host is the limit (or
//                something in the step waits for the GPU)
//   dev_allocs   cudaMalloc/cudaFree/sync-all calls of the allocator in the timed loop
//                (a cache miss blocks the host; 0/0/0 expected)
//   memory       memory_allocated and the running peak after every step, against the
//                same steps on the simulated twin of the GPU: a speed change must not
//                change memory
// --variant picks the CUDA backend's switches (new: all on; old: the backend before
// the fused Adam / split column sums; nolt: new without the cuBLASLt bias epilogue);
// a comma list runs each in turn. VRAMLAB_CUDA_TUNING=old does the same for any tool.
//
//   vramlab_bench_train_step [--device cuda:0|sim:h100-80gb] [--steps 50] [--warmup 5]
//                            [--only NAME] [--prec fp32|tf32|bf16] [--variant new,old,nolt]
//                            [--no-phases] [--no-memcheck]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "allocator/caching_allocator.h"
#include "device/device.h"
#include "engine/autocast/autocast.h"
#include "engine/backends/allocator_memory.h"
#include "engine/backends/backend.h"
#include "engine/core/context.h"
#include "engine/models/family.h"
#include "engine/nn/nn.h"
#include "engine/ops/ops.h"
#include "engine/optim/optimizer.h"
#include "engine/spec/spec_value.h"
#ifdef VRAMLAB_HAVE_CUDA
#include <cuda_runtime_api.h>

#include "engine/backends/cuda/cuda_backend.h"
#endif

using namespace vramlab;
using namespace vramlab::engine;

namespace {

struct Workload {
  const char* name;
  bool mlp;
  int64_t width, depth, batch;
};
const Workload kWorkloads[] = {{"mlp_b256", true, 1024, 2, 256},
                               {"deep1024x16_b512", false, 1024, 16, 512},
                               {"deep4096x8_b4096", false, 4096, 8, 4096}};
const char* kPrecisions[] = {"fp32", "tf32", "bf16"};

// One device session running the benchmark's training step; every step's memory
// reading (allocated, running peak) is kept for the sim comparison.
class Session {
 public:
  Session(const std::string& device_id, const Workload& w, const std::string& prec, const std::string& variant)
      : device_(open_device(device_id)),
        allocator_(std::make_shared<alloc::CachingAllocator>(device_)),
        memory_(allocator_) {
    on_gpu_ = device_->info().kind == "cuda";
    if (on_gpu_) {
      std::string why;
      backend_ = make_cuda_backend(&why);
      if (!backend_) throw std::runtime_error("cuda backend unavailable: " + why);
      apply_variant(variant);
    } else {
      backend_ = make_sim_backend(device_->info());
    }
    ctx_ = std::make_unique<EngineContext>(backend_, &memory_, device_->info());
    ContextGuard guard(*ctx_);
    ctx_->manual_seed(0);
    ctx_->allow_tf32 = prec == "tf32";
    bf16_ = prec == "bf16";
    model_ = w.mlp ? make_mlp(w.width, 2048, w.depth, 10) : make_residual(w.width, w.depth);
    model_->set_path("");
    {
      CategoryScope cs(Category::Input);
      x_ = randn({w.batch, w.width});
    }
    AdamOptions o;
    o.lr = 1e-3;
    opt_ = std::make_unique<Adam>(model_->parameters(), o);
  }
  ~Session() {
    // Tensors before the context, the context before the allocator.
    ContextGuard guard(*ctx_);
    opt_.reset();
    model_.reset();
    x_.reset();
  }

  bool on_gpu() const { return on_gpu_; }
  EngineContext& ctx() { return *ctx_; }
  Backend& backend() { return *backend_; }
  const alloc::CachingAllocator& allocator() const { return *allocator_; }
  const std::vector<std::pair<int64_t, int64_t>>& readings() const { return readings_; }

  // The step, with an optional hook between phases (0: before forward, 1: after the
  // loss, 2: after backward, 3: after the optimizer and zero_grad).
  template <class Mark>
  void step(Mark&& mark) {
    mark(0);
    Tensor y;
    {
      CategoryScope cs(Category::Activation);
      if (bf16_) {
        AutocastGuard ag(true, DType::BFloat16);
        y = (*model_)(x_);
      } else {
        y = (*model_)(x_);
      }
    }
    Tensor loss = sum(y.float_());
    y.reset();
    mark(1);
    loss.backward();
    loss.reset();
    mark(2);
    opt_->step();
    opt_->zero_grad(true);
    mark(3);
    readings_.emplace_back(memory_.memory_allocated(), memory_.max_memory_allocated());
  }
  void step() {
    step([](int) {});
  }

 private:
  void apply_variant(const std::string& variant) {
#ifdef VRAMLAB_HAVE_CUDA
    auto* cb = dynamic_cast<cuda::CudaBackend*>(backend_.get());
    if (!cb) throw std::logic_error("expected the cuda backend");
    cuda::CudaBackend::Tuning t;  // "new": every switch on
    if (variant == "old")
      t = cuda::CudaBackend::Tuning{false, false, true};
    else if (variant == "nolt")
      t.lt_bias_epilogue = false;
    else if (variant != "new")
      throw std::invalid_argument("unknown --variant " + variant + " (new, old, nolt)");
    cb->set_tuning(t);
#else
    (void)variant;
#endif
  }

  std::shared_ptr<Device> device_;
  std::shared_ptr<alloc::CachingAllocator> allocator_;
  AllocatorMemory memory_;
  std::shared_ptr<Backend> backend_;
  std::unique_ptr<EngineContext> ctx_;
  bool on_gpu_ = false, bf16_ = false;
  std::shared_ptr<Sequential> model_;
  Tensor x_;
  std::unique_ptr<Adam> opt_;
  std::vector<std::pair<int64_t, int64_t>> readings_;
};

struct Timing {
  double device_ms = 0;                               // CUDA events, or the sim time model
  double host_ms = 0;                                 // host time per step of the timed loop
  double enqueue_ms = -1;                             // host time per step onto an idle GPU
  double phase_ms[3] = {-1, -1, -1};                  // forward+loss, backward, optimizer+zero_grad
  int64_t dev_alloc = 0, dev_free = 0, sync_all = 0;  // allocator device calls in the timed loop
  std::string memory = "-";                           // the sim comparison's verdict
};

// The simulated twin of a GPU (same allocator behaviour), or "" when there is none.
[[maybe_unused]] std::string sim_twin(const std::string& gpu_name) {
  if (gpu_name.find("H200") != std::string::npos) return "sim:h200-141gb";
  if (gpu_name.find("H100") != std::string::npos) return "sim:h100-80gb";
  return "";
}

// Runs the same number of steps on the simulated twin and compares every reading.
std::string compare_with_sim(const std::string& sim_id, const Workload& w, const std::string& prec,
                             const std::vector<std::pair<int64_t, int64_t>>& gpu) {
  if (sim_id.empty()) return "no-sim-twin";
  Session sim(sim_id, w, prec, "new");
  ContextGuard guard(sim.ctx());
  for (size_t i = 0; i < gpu.size(); ++i) sim.step();
  const auto& s = sim.readings();
  for (size_t i = 0; i < gpu.size(); ++i) {
    if (gpu[i] != s[i]) {
      char buf[160];
      std::snprintf(buf, sizeof buf, "DIFF@step%zu alloc %lld/%lld peak %lld/%lld (cuda/sim)", i,
                    (long long)gpu[i].first, (long long)s[i].first, (long long)gpu[i].second, (long long)s[i].second);
      return buf;
    }
  }
  return "ok(" + std::to_string(gpu.size()) + ")";
}

#ifdef VRAMLAB_HAVE_CUDA
void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}

Timing time_gpu(Session& s, int steps, int warmup, bool phases) {
  auto* cb = dynamic_cast<cuda::CudaBackend*>(&s.backend());
  if (!cb) throw std::logic_error("expected the cuda backend");
  const cudaStream_t st = cb->stream();
  using clock = std::chrono::steady_clock;
  for (int i = 0; i < warmup; ++i) s.step();
  s.backend().synchronize();
  Timing t;

  // 1. The timed loop (nothing but steps between the two events).
  const alloc::DeviceStats a0 = s.allocator().stats();
  cudaEvent_t start, end;
  check(cudaEventCreate(&start), "cudaEventCreate");
  check(cudaEventCreate(&end), "cudaEventCreate");
  auto h0 = clock::now();
  check(cudaEventRecord(start, st), "cudaEventRecord");
  for (int i = 0; i < steps; ++i) s.step();
  auto h1 = clock::now();
  check(cudaEventRecord(end, st), "cudaEventRecord");
  check(cudaEventSynchronize(end), "cudaEventSynchronize");
  float ms = 0;
  check(cudaEventElapsedTime(&ms, start, end), "cudaEventElapsedTime");
  s.backend().synchronize();
  const alloc::DeviceStats a1 = s.allocator().stats();
  t.device_ms = ms / steps;
  t.host_ms = std::chrono::duration<double, std::milli>(h1 - h0).count() / steps;
  t.dev_alloc = a1.num_device_alloc - a0.num_device_alloc;
  t.dev_free = a1.num_device_free - a0.num_device_free;
  t.sync_all = a1.num_sync_all_streams - a0.num_sync_all_streams;

  // 2. Per-phase device time: events between the phases of each step.
  if (phases) {
    const int n = steps;
    std::vector<cudaEvent_t> ev(size_t(n) * 4);
    for (auto& e : ev) check(cudaEventCreate(&e), "cudaEventCreate");
    for (int i = 0; i < n; ++i)
      s.step([&](int k) { check(cudaEventRecord(ev[size_t(i) * 4 + k], st), "cudaEventRecord"); });
    s.backend().synchronize();
    double sum[3] = {0, 0, 0};
    for (int i = 0; i < n; ++i)
      for (int k = 0; k < 3; ++k) {
        float m = 0;
        check(cudaEventElapsedTime(&m, ev[size_t(i) * 4 + k], ev[size_t(i) * 4 + k + 1]), "cudaEventElapsedTime");
        sum[k] += m;
      }
    for (int k = 0; k < 3; ++k) t.phase_ms[k] = sum[k] / n;
    for (auto& e : ev) (void)cudaEventDestroy(e);
  }

  // 3. Enqueue time of one step onto an idle GPU.
  const int enq = 10;
  double host = 0;
  for (int i = 0; i < enq; ++i) {
    s.backend().synchronize();
    auto e0 = clock::now();
    s.step();
    host += std::chrono::duration<double, std::milli>(clock::now() - e0).count();
  }
  s.backend().synchronize();
  t.enqueue_ms = host / enq;
  (void)cudaEventDestroy(start);
  (void)cudaEventDestroy(end);
  return t;
}
#endif

Timing time_steps(const std::string& device_id, const Workload& w, const std::string& prec, const std::string& variant,
                  int steps, int warmup, [[maybe_unused]] bool phases, bool memcheck) {  // phases: CUDA builds only
  Timing t;
  std::vector<std::pair<int64_t, int64_t>> readings;
  std::string twin;
  {
    Session s(device_id, w, prec, variant);
    ContextGuard guard(s.ctx());
    if (s.on_gpu()) {
#ifdef VRAMLAB_HAVE_CUDA
      t = time_gpu(s, steps, warmup, phases);
      twin = sim_twin(s.ctx().device_info().name);
#endif
    } else {
      for (int i = 0; i < warmup; ++i) s.step();
      double m0 = s.ctx().modeled_time_s();
      auto h0 = std::chrono::steady_clock::now();
      for (int i = 0; i < steps; ++i) s.step();
      t.device_ms = (s.ctx().modeled_time_s() - m0) * 1e3 / steps;
      t.host_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - h0).count() / steps;
      memcheck = false;  // the sim is its own reference
    }
    readings = s.readings();
  }
  if (memcheck) t.memory = compare_with_sim(twin, w, prec, readings);
  return t;
}

double pytorch_ms(const engine::SpecValue* refs, const std::string& key) {
  if (!refs) return -1;
  try {
    return (*refs)[key].as_number(key);
  } catch (const std::exception&) {
    return -1;
  }
}

std::vector<std::string> split_commas(const std::string& s) {
  std::vector<std::string> out;
  size_t b = 0;
  while (b <= s.size()) {
    size_t e = s.find(',', b);
    if (e == std::string::npos) e = s.size();
    if (e > b) out.push_back(s.substr(b, e - b));
    b = e + 1;
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  std::string device = default_device_id();
  std::string only, only_prec, variants = "new", torch_file;
  int steps = 50, warmup = 5;
  bool phases = true, memcheck = true;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--device")
      device = next();
    else if (a == "--steps")
      steps = std::atoi(next().c_str());
    else if (a == "--warmup")
      warmup = std::atoi(next().c_str());
    else if (a == "--only")
      only = next();
    else if (a == "--prec")
      only_prec = next();
    else if (a == "--variant")
      variants = next();
    else if (a == "--no-phases")
      phases = false;
    else if (a == "--no-memcheck")
      memcheck = false;
    else if (a == "--torch")
      torch_file = next();
    else {
      std::fprintf(stderr,
                   "usage: %s [--device cuda:0|sim:h100-80gb] [--steps 50] [--warmup 5] [--only NAME] "
                   "[--prec fp32|tf32|bf16] [--variant new,old,nolt] [--no-phases] [--no-memcheck] [--torch FILE]\n",
                   argv[0]);
      return 2;
    }
  }
  if (steps <= 0 || warmup < 0) {
    std::fprintf(stderr, "--steps must be positive and --warmup not negative\n");
    return 2;
  }
  std::vector<std::string> variant_list = split_commas(variants);
  for (const auto& v : variant_list)
    if (v != "new" && v != "old" && v != "nolt") {
      std::fprintf(stderr, "unknown --variant %s (new, old, nolt)\n", v.c_str());
      return 2;
    }
  if (variant_list.empty()) variant_list.push_back("new");

  // PyTorch's times come only from the same run: figures from another GPU or day would
  // make the ratio meaningless.
  std::unique_ptr<engine::SpecValue> refs;
  if (!torch_file.empty()) {
    try {
      refs = std::make_unique<engine::SpecValue>(engine::load_json_file(torch_file));
    } catch (const std::exception& e) {
      std::fprintf(stderr, "error: PyTorch times not read (%s)\n", e.what());
      return 2;
    }
  }

  std::string device_name;
  try {
    device_name = open_device(device)->info().name;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  bool sim = device.rfind("sim:", 0) == 0;
  if (sim) variant_list.assign(1, "new");  // the switches are the CUDA backend's
  std::printf("train step (forward + sum loss + backward + Adam + zero_grad) on %s (%s)\n", device.c_str(),
              device_name.c_str());
  std::printf("%s, mean of %d steps after %d warm-up; PyTorch: %s\n",
              sim ? "modelled time of the sim backend" : "CUDA events", steps, warmup,
              refs ? "eager, CUDA events, measured in this run on this GPU" : "not given (--torch)");
  if (!sim)
    std::printf(
        "fwd/bwd/opt: per-phase events (second loop); enq_ms: host time to enqueue one step onto an idle "
        "GPU;\ndev_allocs: allocator cudaMalloc/cudaFree/sync-all in the timed loop; memory: every step's "
        "allocated+peak vs the sim twin\n");
  std::printf("\n%-18s %-4s %-4s %9s %9s %6s %8s %8s %8s %8s %8s %10s %s\n", "workload", "prec", "var", "ours_ms",
              "torch_ms", "ratio", "fwd_ms", "bwd_ms", "opt_ms", "host_ms", "enq_ms", "dev_allocs", "memory");
  int failures = 0, slower = 0, memory_diffs = 0;
  for (const Workload& w : kWorkloads) {
    if (!only.empty() && only != w.name) continue;
    for (const char* p : kPrecisions) {
      if (!only_prec.empty() && only_prec != p) continue;
      std::string key = std::string(w.name) + "/" + p;
      double ref = pytorch_ms(refs.get(), key);
      for (const std::string& v : variant_list) {
        try {
          Timing t = time_steps(device, w, p, v, steps, warmup, phases && !sim, memcheck && !sim);
          char ratio[32] = "-";
          if (ref > 0) std::snprintf(ratio, sizeof ratio, "%.2f", t.device_ms / ref);
          if (ref > 0 && t.device_ms > ref && v == variant_list.front()) ++slower;
          if (t.memory.rfind("DIFF", 0) == 0) ++memory_diffs;
          char allocs[48];
          std::snprintf(allocs, sizeof allocs, "%lld/%lld/%lld", (long long)t.dev_alloc, (long long)t.dev_free,
                        (long long)t.sync_all);
          auto f = [](double x) {
            char b[32];
            if (x < 0)
              std::snprintf(b, sizeof b, "-");
            else
              std::snprintf(b, sizeof b, "%.3f", x);
            return std::string(b);
          };
          std::printf("%-18s %-4s %-4s %9.3f %9.3f %6s %8s %8s %8s %8.3f %8s %10s %s\n", w.name, p, v.c_str(),
                      t.device_ms, ref, ratio, f(t.phase_ms[0]).c_str(), f(t.phase_ms[1]).c_str(),
                      f(t.phase_ms[2]).c_str(), t.host_ms, f(t.enqueue_ms).c_str(), sim ? "-" : allocs,
                      t.memory.c_str());
        } catch (const std::exception& e) {
          ++failures;
          std::printf("%-18s %-4s %-4s error: %s\n", w.name, p, v.c_str(), e.what());
        }
        std::fflush(stdout);
      }
    }
  }
  std::printf("\n%d row(s) slower than PyTorch (variant %s)%s%s\n", slower, variant_list.front().c_str(),
              memory_diffs ? ", MEMORY DIFFERS FROM THE SIM DEVICE" : "", failures ? ", some rows failed" : "");
  return failures || memory_diffs ? 1 : 0;
}
