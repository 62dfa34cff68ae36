#ifdef VRAMLAB_HAVE_CUDA
#include "engine/backends/cuda/cublas_loader.h"
#include "engine/backends/cuda/cublaslt_loader.h"

#include <dlfcn.h>

#include <mutex>
#include <stdexcept>

namespace vramlab::engine::cuda {

namespace {

template <class F>
bool sym(void* lib, const char* name, F& out) {
  out = reinterpret_cast<F>(dlsym(lib, name));
  return out != nullptr;
}

CublasApi* load(std::string* err) {
  static const char* names[] = {"libcublas.so.13", "libcublas.so.12", "libcublas.so"};
  std::string tried;
  void* lib = nullptr;
  const char* loaded = nullptr;
  for (const char* n : names) {
    lib = dlopen(n, RTLD_NOW | RTLD_LOCAL);
    if (lib) {
      loaded = n;
      break;
    }
    const char* e = dlerror();
    tried += std::string(tried.empty() ? "" : "; ") + (e ? e : n);
  }
  if (!lib) {
    *err = "cuBLAS could not be loaded (" + tried + ")";
    return nullptr;
  }
  auto* api = new CublasApi;  // process lifetime: the library stays loaded
  api->library = loaded;
  bool ok = sym(lib, "cublasCreate_v2", api->create) && sym(lib, "cublasDestroy_v2", api->destroy) &&
            sym(lib, "cublasSetStream_v2", api->set_stream) && sym(lib, "cublasSetWorkspace_v2", api->set_workspace) &&
            sym(lib, "cublasSetMathMode", api->set_math_mode) && sym(lib, "cublasGemmEx", api->gemm_ex);
  sym(lib, "cublasGetStatusString", api->status_string);
  if (!ok) {
    *err = std::string(loaded) +
           " lacks a needed entry point (cublasCreate_v2, cublasSetWorkspace_v2, "
           "cublasGemmEx, ...)";
    delete api;
    dlclose(lib);
    return nullptr;
  }
  return api;
}

}  // namespace

const CublasApi* load_cublas(std::string* why) {
  static std::once_flag once;
  static CublasApi* api = nullptr;
  static std::string error;
  std::call_once(once, [] { api = load(&error); });
  if (!api && why) *why = error;
  return api;
}

void check_cublas(const CublasApi& api, cublasStatus_t s, const char* what) {
  if (s == CUBLAS_STATUS_SUCCESS) return;
  std::string msg = api.status_string ? api.status_string(s) : "";
  if (msg.empty()) msg = "CUBLAS status " + std::to_string(s);
  throw std::runtime_error(std::string(what) + " failed: " + msg);
}

namespace {

CublasLtApi* load_lt(std::string* err) {
  static const char* names[] = {"libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so"};
  void* lib = nullptr;
  const char* loaded = nullptr;
  for (const char* n : names)
    if ((lib = dlopen(n, RTLD_NOW | RTLD_LOCAL))) {
      loaded = n;
      break;
    }
  if (!lib) {
    *err = "cuBLASLt could not be loaded";
    return nullptr;
  }
  auto* api = new CublasLtApi;  // process lifetime
  api->library = loaded;
  bool ok = sym(lib, "cublasLtCreate", api->create) && sym(lib, "cublasLtDestroy", api->destroy) &&
            sym(lib, "cublasLtMatmulDescCreate", api->desc_create) &&
            sym(lib, "cublasLtMatmulDescDestroy", api->desc_destroy) &&
            sym(lib, "cublasLtMatmulDescSetAttribute", api->desc_set) &&
            sym(lib, "cublasLtMatrixLayoutCreate", api->layout_create) &&
            sym(lib, "cublasLtMatrixLayoutDestroy", api->layout_destroy) &&
            sym(lib, "cublasLtMatmulPreferenceCreate", api->pref_create) &&
            sym(lib, "cublasLtMatmulPreferenceDestroy", api->pref_destroy) &&
            sym(lib, "cublasLtMatmulPreferenceSetAttribute", api->pref_set) &&
            sym(lib, "cublasLtMatmulAlgoGetHeuristic", api->heuristic) && sym(lib, "cublasLtMatmul", api->matmul);
  if (!ok) {
    *err = std::string(loaded) + " lacks a needed entry point";
    delete api;
    dlclose(lib);
    return nullptr;
  }
  return api;
}

}  // namespace

const CublasLtApi* load_cublaslt(std::string* why) {
  static std::once_flag once;
  static CublasLtApi* api = nullptr;
  static std::string error;
  std::call_once(once, [] { api = load_lt(&error); });
  if (!api && why) *why = error;
  return api;
}

}  // namespace vramlab::engine::cuda
#endif  // VRAMLAB_HAVE_CUDA
