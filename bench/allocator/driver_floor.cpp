// The driver-call floor of one allocator segment on a CUDA card (issue 26 target 3): PyTorch's
// cudaMalloc/cudaFree beside the lab's cuMemCreate + cuMemMap + cuMemSetAccess / cuMemUnmap +
// cuMemRelease (native/device/cuda_device.cpp), and the variants that could make the lab's path
// cheaper while each segment stays really mapped and really released. Medians in us per size.
//   vramlab_bench_driver_floor [fresh|cublas|ctx] [reps]
// (findings: docs/gpu-runs/2026-11-26-h100-replayfloor.txt)
// fresh: the primary context, no kernel run yet; cublas: after a cuBLAS handle and one SGEMM
// (what a PyTorch process has); ctx: a context made by cuCtxCreate instead of the primary one.
// Variants are interleaved rep by rep so the driver's drift over a run hits them alike.
#include <cuda.h>
#include <cuda_runtime.h>
#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

#define DRV_FNS(X)                                                                                                    \
  X(cuInit, CUresult (*)(unsigned int))                                                                               \
  X(cuMemAddressReserve, CUresult (*)(CUdeviceptr*, size_t, size_t, CUdeviceptr, unsigned long long))                 \
  X(cuMemAddressFree, CUresult (*)(CUdeviceptr, size_t))                                                              \
  X(cuMemCreate, CUresult (*)(CUmemGenericAllocationHandle*, size_t, const CUmemAllocationProp*, unsigned long long)) \
  X(cuMemRelease, CUresult (*)(CUmemGenericAllocationHandle))                                                         \
  X(cuMemMap, CUresult (*)(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle, unsigned long long))            \
  X(cuMemUnmap, CUresult (*)(CUdeviceptr, size_t))                                                                    \
  X(cuMemSetAccess, CUresult (*)(CUdeviceptr, size_t, const CUmemAccessDesc*, size_t))                                \
  X(cuMemGetAllocationGranularity,                                                                                    \
    CUresult (*)(size_t*, const CUmemAllocationProp*, CUmemAllocationGranularity_flags))                              \
  X(cuDeviceGetAttribute, CUresult (*)(int*, CUdevice_attribute, CUdevice))                                           \
  X(cuCtxCreate, CUresult (*)(CUcontext*, unsigned int, CUdevice))                                                    \
  X(cuCtxSetCurrent, CUresult (*)(CUcontext))

template <typename T>
using Id = T;  // lets a function-pointer type stand before the name
struct Drv {
#define DECL(name, type) Id<type> name = nullptr;
  DRV_FNS(DECL)
#undef DECL
};
Drv drv;

void die(const char* what, int code) {
  std::fprintf(stderr, "%s failed (%d)\n", what, code);
  std::exit(1);
}
void ck(cudaError_t e, const char* what) {
  if (e != cudaSuccess) die(what, static_cast<int>(e));
}
void ck(CUresult r, const char* what) {
  if (r != CUDA_SUCCESS) die(what, static_cast<int>(r));
}

cudaError_t entry_point(const char* name, void** fn, unsigned version, cudaDriverEntryPointQueryResult* q) {
#if CUDART_VERSION >= 12050
  return cudaGetDriverEntryPointByVersion(name, fn, version, cudaEnableDefault, q);
#else  // older toolkits: the runtime's own version (the ctx mode was only run with CUDA 13)
  (void)version;
  return cudaGetDriverEntryPoint(name, fn, cudaEnableDefault, q);
#endif
}

void load_driver() {
  // Version 12000 as the lab asks (cuda_device.cpp); cuCtxCreate at 3020, its (ctx, flags, dev) form
  // (cudaTypedefs.h versions the execution-affinity form 11040).
#define LOAD(name, type)                                                                         \
  {                                                                                              \
    void* fn = nullptr;                                                                          \
    cudaDriverEntryPointQueryResult q{};                                                         \
    const unsigned ver = std::strcmp(#name, "cuCtxCreate") == 0 ? 3020 : 12000;                  \
    ck(entry_point(#name, &fn, ver, &q), #name);                                                 \
    if (q != cudaDriverEntryPointSuccess || !fn) die(#name " entry point", static_cast<int>(q)); \
    drv.name = reinterpret_cast<Id<type>>(fn);                                                   \
  }
  DRV_FNS(LOAD)
#undef LOAD
}

double now_us() {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}
double pct(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * v.size()))];
}

constexpr size_t MiB = size_t(1) << 20;
constexpr size_t kAlign = 2 * MiB;  // va_layout.h's kAlign
const size_t kSizes[] = {2 * MiB, 20 * MiB, 64 * MiB, 256 * MiB};
constexpr int kNumSizes = 4;

enum Phase { kCreate, kMap, kAccess, kSync, kUnmap, kRelease, kReserve, kAddrFree, kMalloc, kFree, kPhases };

struct Samples {
  std::vector<double> t[kPhases];
  std::vector<double> total;  // one segment's alloc + free as the path pays it
};

size_t free_mem() {
  size_t f = 0, t = 0;
  ck(cudaMemGetInfo(&f, &t), "cudaMemGetInfo");
  return f;
}

// Memory really there: written and read back; returns false when not.
bool touch(CUdeviceptr p, size_t bytes) {
  ck(cudaMemset(reinterpret_cast<void*>(p), 0xa5, bytes), "cudaMemset");
  unsigned char b[2] = {0, 0};
  ck(cudaMemcpy(&b[0], reinterpret_cast<void*>(p), 1, cudaMemcpyDeviceToHost), "cudaMemcpy");
  ck(cudaMemcpy(&b[1], reinterpret_cast<void*>(p + bytes - 1), 1, cudaMemcpyDeviceToHost), "cudaMemcpy");
  return b[0] == 0xa5 && b[1] == 0xa5;
}

struct Range {
  CUdeviceptr base = 0;
  size_t span = 0;
  size_t next = 0;  // the fresh-offset variants walk forward through it
};

struct Variant {
  const char* name;
  Range* range;       // nullptr: a range reserved per segment (its own reserve and free)
  bool fresh_offset;  // a new offset every segment instead of the same one again
  CUmemAllocationProp prop;
  bool sync_on_free;   // the lab synchronizes before unmapping (cudaFree waits for queued work)
  bool release_early;  // cuMemRelease right after the access is set: the mapping holds the memory, the unmap frees it
  Samples s[kNumSizes];
  bool checked = true;  // every verified segment was readable and gave its memory back
};

CUmemAllocationProp base_prop(int dev) {
  CUmemAllocationProp p{};
  p.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  p.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  p.location.id = dev;
  return p;
}

// One segment through the driver's VMM calls, as cuda_device.cpp's map_at/unmap_at do it.
void vmm_cycle(Variant& v, int si, int dev, bool verify) {
  const size_t bytes = kSizes[si];
  Samples& s = v.s[si];
  CUdeviceptr va = 0;
  double t0, t1;
  const size_t before = verify ? free_mem() : 0;
  if (v.range) {
    if (v.fresh_offset) {
      if (v.range->next + bytes > v.range->span) v.range->next = 0;
      va = v.range->base + v.range->next;
      v.range->next += bytes + kAlign;
    } else {
      va = v.range->base;
    }
  } else {
    t0 = now_us();
    ck(drv.cuMemAddressReserve(&va, bytes, kAlign, 0, 0), "cuMemAddressReserve");
    s.t[kReserve].push_back(now_us() - t0);
  }
  CUmemGenericAllocationHandle h = 0;
  CUmemAccessDesc desc{};
  desc.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  desc.location.id = dev;
  desc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  t0 = now_us();
  ck(drv.cuMemCreate(&h, bytes, &v.prop, 0), "cuMemCreate");
  t1 = now_us();
  s.t[kCreate].push_back(t1 - t0);
  ck(drv.cuMemMap(va, bytes, 0, h, 0), "cuMemMap");
  t0 = now_us();
  s.t[kMap].push_back(t0 - t1);
  ck(drv.cuMemSetAccess(va, bytes, &desc, 1), "cuMemSetAccess");
  t1 = now_us();
  s.t[kAccess].push_back(t1 - t0);
  if (v.release_early) {
    ck(drv.cuMemRelease(h), "cuMemRelease");
    t0 = now_us();
    s.t[kRelease].push_back(t0 - t1);
  }
  // Written and read back after an early release too: the mapping alone keeps the memory.
  if (verify && (!touch(va, bytes) || free_mem() + bytes > before)) v.checked = false;
  t0 = now_us();
  if (v.sync_on_free) ck(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  t1 = now_us();
  s.t[kSync].push_back(t1 - t0);
  ck(drv.cuMemUnmap(va, bytes), "cuMemUnmap");
  t0 = now_us();
  s.t[kUnmap].push_back(t0 - t1);
  if (!v.release_early) {
    ck(drv.cuMemRelease(h), "cuMemRelease");
    t1 = now_us();
    s.t[kRelease].push_back(t1 - t0);
  }
  t1 = now_us();
  if (!v.range) {
    ck(drv.cuMemAddressFree(va, bytes), "cuMemAddressFree");
    s.t[kAddrFree].push_back(now_us() - t1);
  }
  const size_t n = s.t[kCreate].size() - 1;
  s.total.push_back(s.t[kCreate][n] + s.t[kMap][n] + s.t[kAccess][n] + s.t[kSync][n] + s.t[kUnmap][n] +
                    s.t[kRelease][n]);
  if (verify && free_mem() < before) v.checked = false;  // released: the card's free memory is back
}

void malloc_cycle(Samples& s, size_t bytes, bool verify, bool* checked) {
  const size_t before = verify ? free_mem() : 0;
  void* p = nullptr;
  double t0 = now_us();
  ck(cudaMalloc(&p, bytes), "cudaMalloc");
  double t1 = now_us();
  s.t[kMalloc].push_back(t1 - t0);
  if (verify && (!touch(reinterpret_cast<CUdeviceptr>(p), bytes) || free_mem() + bytes > before)) *checked = false;
  t0 = now_us();
  ck(cudaFree(p), "cudaFree");
  t1 = now_us();
  s.t[kFree].push_back(t1 - t0);
  s.total.push_back(s.t[kMalloc].back() + s.t[kFree].back());
  if (verify && free_mem() < before) *checked = false;
}

void print_vmm(const Variant& v, int si) {
  const Samples& s = v.s[si];
  std::printf(
      "%4zu MiB  %-40s create %5.1f map %4.1f access %5.1f | sync %4.1f unmap %5.1f release %5.1f | %6.1f (p90 %6.1f)",
      kSizes[si] / MiB, v.name, median(s.t[kCreate]), median(s.t[kMap]), median(s.t[kAccess]), median(s.t[kSync]),
      median(s.t[kUnmap]), median(s.t[kRelease]), median(s.total), pct(s.total, 0.9));
  if (!v.range) std::printf(" +reserve %.1f +addr_free %.1f", median(s.t[kReserve]), median(s.t[kAddrFree]));
  std::printf("%s\n", v.checked ? "" : "  CHECK FAILED");
}

void print_malloc(const Samples& s, int si, bool checked) {
  std::printf("%4zu MiB  %-40s cudaMalloc %5.1f cudaFree %5.1f %39s | %6.1f (p90 %6.1f)%s\n", kSizes[si] / MiB,
              "cudaMalloc + cudaFree (PyTorch)", median(s.t[kMalloc]), median(s.t[kFree]), "", median(s.total),
              pct(s.total, 0.9), checked ? "" : "  CHECK FAILED");
}

// A cuBLAS handle and one SGEMM, through dlopen so nothing links cuBLAS (as the lab does).
void load_cublas() {
  void* lib = dlopen("libcublas.so.13", RTLD_NOW | RTLD_GLOBAL);
  if (!lib) lib = dlopen("libcublas.so", RTLD_NOW | RTLD_GLOBAL);
  if (!lib) die("dlopen libcublas", 0);
  using Create = int (*)(void**);
  using Sgemm = int (*)(void*, int, int, int, int, int, const float*, const float*, int, const float*, int,
                        const float*, float*, int);
  auto create = reinterpret_cast<Create>(dlsym(lib, "cublasCreate_v2"));
  auto sgemm = reinterpret_cast<Sgemm>(dlsym(lib, "cublasSgemm_v2"));
  if (!create || !sgemm) die("dlsym cublas", 0);
  void* h = nullptr;
  if (create(&h) != 0) die("cublasCreate", 0);
  const int n = 1024;
  float *a, *b, *c;  // kept: a real process has live buffers too
  ck(cudaMalloc(&a, n * n * 4), "cudaMalloc");
  ck(cudaMalloc(&b, n * n * 4), "cudaMalloc");
  ck(cudaMalloc(&c, n * n * 4), "cudaMalloc");
  ck(cudaMemset(a, 0, n * n * 4), "cudaMemset");
  ck(cudaMemset(b, 0, n * n * 4), "cudaMemset");
  const float one = 1, zero = 0;
  if (sgemm(h, 0, 0, n, n, n, &one, a, n, b, n, &zero, c, n) != 0) die("cublasSgemm", 0);
  ck(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "fresh";
  const int reps = argc > 2 ? std::atoi(argv[2]) : 200;
  const int dev = 0;
  load_driver();
  if (mode == "ctx") {  // made before the runtime touches the device, so the primary context never starts
    CUcontext ctx = nullptr;
    ck(drv.cuInit(0), "cuInit");
    ck(drv.cuCtxCreate(&ctx, 0, dev), "cuCtxCreate");
    ck(drv.cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
  } else {
    ck(cudaSetDevice(dev), "cudaSetDevice");
  }
  ck(cudaFree(nullptr), "cudaFree(0)");  // the runtime takes the current context (or the primary one)
  if (mode == "cublas") load_cublas();
  {  // cudaMemset's first use loads its module (device memory) before the verified round reads free memory
    void* w = nullptr;
    ck(cudaMalloc(&w, 2 * MiB), "cudaMalloc");
    touch(reinterpret_cast<CUdeviceptr>(w), 2 * MiB);
    ck(cudaFree(w), "cudaFree");
  }

  cudaDeviceProp prop{};
  ck(cudaGetDeviceProperties(&prop, dev), "cudaGetDeviceProperties");
  CUmemAllocationProp p0 = base_prop(dev);
  size_t gmin = 0, grec = 0;
  ck(drv.cuMemGetAllocationGranularity(&gmin, &p0, CU_MEM_ALLOC_GRANULARITY_MINIMUM), "granularity");
  ck(drv.cuMemGetAllocationGranularity(&grec, &p0, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED), "granularity");
  int comp = 0, rdma = 0, posix = 0;
  ck(drv.cuDeviceGetAttribute(&comp, CU_DEVICE_ATTRIBUTE_GENERIC_COMPRESSION_SUPPORTED, dev), "attr");
  ck(drv.cuDeviceGetAttribute(&rdma, CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED, dev), "attr");
  ck(drv.cuDeviceGetAttribute(&posix, CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED, dev), "attr");
  std::printf(
      "== mode %s: %s, %d reps; granularity minimum %zu KiB, recommended %zu KiB; compression %d, "
      "VMM RDMA %d, POSIX fd handles %d\n",
      mode.c_str(), prop.name, reps, gmin >> 10, grec >> 10, comp, rdma, posix);

  // The lab's range: 16 x the card's memory, 2 MiB aligned (cuda_device.cpp placed()).
  const size_t big = (prop.totalGlobalMem * 16 + kAlign - 1) / kAlign * kAlign;
  Range lab, g1, small;
  ck(drv.cuMemAddressReserve(&lab.base, big, kAlign, 0, 0), "reserve lab range");
  lab.span = big;
  ck(drv.cuMemAddressReserve(&g1.base, big, size_t(1) << 30, 0, 0), "reserve 1 GiB aligned range");
  g1.span = big;
  ck(drv.cuMemAddressReserve(&small.base, 512 * MiB, kAlign, 0, 0), "reserve 512 MiB range");
  small.span = 512 * MiB;

  CUmemAllocationProp p_rdma = p0;
  p_rdma.allocFlags.gpuDirectRDMACapable = 1;
  CUmemAllocationProp p_fd = p0;
  p_fd.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  std::vector<Variant> vs;
  vs.push_back({"lab: 16-card range, offset reused", &lab, false, p0, true, false, {}});
  vs.push_back({"16-card range, fresh offset each time", &lab, true, p0, true, false, {}});
  vs.push_back({"16-card range aligned 1 GiB, reused", &g1, false, p0, true, false, {}});
  vs.push_back({"512 MiB range, offset reused", &small, false, p0, true, false, {}});
  vs.push_back({"range reserved per segment", nullptr, false, p0, true, false, {}});
  vs.push_back({"lab, no sync on free", &lab, false, p0, false, false, {}});
  vs.push_back({"lab, handle released right after mapping", &lab, false, p0, true, true, {}});
  if (rdma) vs.push_back({"lab, gpuDirectRDMACapable=1", &lab, false, p_rdma, true, false, {}});
  if (posix) vs.push_back({"lab, handle type POSIX fd", &lab, false, p_fd, true, false, {}});
  Samples mall[kNumSizes];
  bool mall_ok = true;

  // One verified round (written, read back, memory given back), one warm round, then the timed reps.
  for (int r = -2; r < reps; ++r) {
    for (int si = 0; si < kNumSizes; ++si) {
      malloc_cycle(mall[si], kSizes[si], r == -2, &mall_ok);
      for (Variant& v : vs) vmm_cycle(v, si, dev, r == -2);
      if (r < 0) {
        for (auto& t : mall[si].t) t.clear();
        mall[si].total.clear();
        for (Variant& v : vs) {
          for (auto& t : v.s[si].t) t.clear();
          v.s[si].total.clear();
        }
      }
    }
  }
  for (int si = 0; si < kNumSizes; ++si) {
    print_malloc(mall[si], si, mall_ok);
    for (const Variant& v : vs) print_vmm(v, si);
  }

  // Does cuMemSetAccess walk the mappings already live? 40 x 2 MiB mapped (like a replay's
  // segments) and kept while the lab's cycle runs, bracketed by the same cycle with none live.
  {
    Variant before{"lab, 0 other mappings live (before)", &lab, false, p0, true, false, {}};
    Variant with{"lab, 40 other mappings live", &lab, false, p0, true, false, {}};
    Variant after{"lab, 0 other mappings live (after)", &lab, false, p0, true, false, {}};
    const int n = std::max(reps / 2, 20);
    for (int r = 0; r < n; ++r)
      for (int si = 0; si < kNumSizes; ++si) vmm_cycle(before, si, dev, false);
    std::vector<CUmemGenericAllocationHandle> live(40);
    CUmemAccessDesc desc{};
    desc.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    desc.location.id = dev;
    desc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    const CUdeviceptr at = lab.base + big / 2;
    for (size_t i = 0; i < live.size(); ++i) {
      ck(drv.cuMemCreate(&live[i], kAlign, &p0, 0), "cuMemCreate live");
      ck(drv.cuMemMap(at + i * kAlign, kAlign, 0, live[i], 0), "cuMemMap live");
      ck(drv.cuMemSetAccess(at + i * kAlign, kAlign, &desc, 1), "cuMemSetAccess live");
    }
    for (int r = 0; r < n; ++r)
      for (int si = 0; si < kNumSizes; ++si) vmm_cycle(with, si, dev, false);
    for (size_t i = 0; i < live.size(); ++i) {
      ck(drv.cuMemUnmap(at + i * kAlign, kAlign), "cuMemUnmap live");
      ck(drv.cuMemRelease(live[i]), "cuMemRelease live");
    }
    for (int r = 0; r < n; ++r)
      for (int si = 0; si < kNumSizes; ++si) vmm_cycle(after, si, dev, false);
    for (int si = 0; si < kNumSizes; ++si) {
      print_vmm(before, si);
      print_vmm(with, si);
      print_vmm(after, si);
    }
  }

  // cudaFree's implicit synchronize: an idle device synchronize, then cudaFree and the lab's release
  // path (synchronize + cuMemUnmap + cuMemRelease) of 20 MiB behind ~1 ms of queued work (a 2 GiB
  // cudaMemsetAsync); the queued work's own length is timed by a synchronize alone behind it.
  {
    void* scratch = nullptr;
    const size_t sb = size_t(2) << 30;
    ck(cudaMalloc(&scratch, sb), "cudaMalloc scratch");
    const size_t bytes = 20 * MiB;
    std::vector<double> idle, wait, free_q, lab_q, free_idle, lab_idle;
    CUmemAccessDesc desc{};
    desc.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    desc.location.id = dev;
    desc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    for (int r = -1; r < std::max(reps / 4, 20); ++r) {
      double t0 = now_us();
      ck(cudaDeviceSynchronize(), "sync");
      double t_idle = now_us() - t0;
      ck(cudaMemsetAsync(scratch, r & 0xff, sb, 0), "memset");
      t0 = now_us();
      ck(cudaDeviceSynchronize(), "sync");
      double t_wait = now_us() - t0;
      for (int queued = 0; queued < 2; ++queued) {
        void* p = nullptr;
        ck(cudaMalloc(&p, bytes), "cudaMalloc");
        if (queued) ck(cudaMemsetAsync(scratch, r & 0xff, sb, 0), "memset");
        t0 = now_us();
        ck(cudaFree(p), "cudaFree");
        double t_free = now_us() - t0;
        ck(cudaDeviceSynchronize(), "sync");
        CUmemGenericAllocationHandle h = 0;
        ck(drv.cuMemCreate(&h, bytes, &p0, 0), "cuMemCreate");
        ck(drv.cuMemMap(lab.base, bytes, 0, h, 0), "cuMemMap");
        ck(drv.cuMemSetAccess(lab.base, bytes, &desc, 1), "cuMemSetAccess");
        if (queued) ck(cudaMemsetAsync(scratch, r & 0xff, sb, 0), "memset");
        t0 = now_us();
        ck(cudaDeviceSynchronize(), "sync");
        ck(drv.cuMemUnmap(lab.base, bytes), "cuMemUnmap");
        ck(drv.cuMemRelease(h), "cuMemRelease");
        double t_lab = now_us() - t0;
        if (r >= 0) (queued ? free_q : free_idle).push_back(t_free), (queued ? lab_q : lab_idle).push_back(t_lab);
      }
      if (r >= 0) idle.push_back(t_idle), wait.push_back(t_wait);
    }
    std::printf(
        "free path, 20 MiB: idle cudaDeviceSynchronize %.1f | idle: cudaFree %.1f vs lab release %.1f | "
        "behind queued work (a synchronize alone waits %.1f): cudaFree %.1f vs lab release %.1f\n",
        median(idle), median(free_idle), median(lab_idle), median(wait), median(free_q), median(lab_q));
    ck(cudaFree(scratch), "cudaFree scratch");
  }
  ck(drv.cuMemAddressFree(lab.base, big), "free range");
  ck(drv.cuMemAddressFree(g1.base, big), "free range");
  ck(drv.cuMemAddressFree(small.base, small.span), "free range");
  return 0;
}
