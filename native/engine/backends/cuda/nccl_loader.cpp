#include "engine/backends/cuda/nccl_loader.h"

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

}  // namespace

const NcclApi* load_nccl_from(const std::vector<std::string>& names, std::string* why) {
  std::string tried;
  void* lib = nullptr;
  std::string loaded;
  for (const std::string& n : names) {
    lib = dlopen(n.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (lib) {
      loaded = n;
      break;
    }
    const char* e = dlerror();
    tried += std::string(tried.empty() ? "" : "; ") + (e ? e : n);
  }
  if (!lib) {
    if (why)
      *why = "NCCL could not be loaded (" + tried +
             "); with PyTorch installed, add the directory of nvidia.nccl's lib to LD_LIBRARY_PATH";
    return nullptr;
  }
  auto* api = new NcclApi;  // process lifetime: the library stays loaded
  api->library = loaded;
  bool ok = sym(lib, "ncclGetVersion", api->get_version) && sym(lib, "ncclGetUniqueId", api->get_unique_id) &&
            sym(lib, "ncclCommInitRank", api->comm_init_rank) && sym(lib, "ncclCommDestroy", api->comm_destroy) &&
            sym(lib, "ncclCommAbort", api->comm_abort) && sym(lib, "ncclAllReduce", api->all_reduce) &&
            sym(lib, "ncclBroadcast", api->broadcast) && sym(lib, "ncclAllGather", api->all_gather) &&
            sym(lib, "ncclReduceScatter", api->reduce_scatter) && sym(lib, "ncclGetErrorString", api->error_string);
  if (ok) ok = api->get_version(&api->version) == kNcclSuccess;
  // ncclAvg arrived in 2.10 (version code 21000)
  if (!ok || api->version < 21000) {
    if (why)
      *why =
          loaded + (ok ? " is NCCL " + std::to_string(api->version) + "; ncclAvg needs 2.10 or later"
                       : " lacks a needed entry point (ncclCommInitRank, ncclAllReduce, ncclBroadcast, ncclAllGather, "
                         "ncclReduceScatter, ...)");
    delete api;
    dlclose(lib);
    return nullptr;
  }
  return api;
}

const NcclApi* load_nccl(std::string* why) {
  static std::once_flag once;
  static const NcclApi* api = nullptr;
  static std::string error;
  std::call_once(once, [] { api = load_nccl_from({"libnccl.so.2", "libnccl.so"}, &error); });
  if (!api && why) *why = error;
  return api;
}

void check_nccl(const NcclApi& api, ncclResult_t r, const char* what) {
  if (r == kNcclSuccess) return;
  const char* s = api.error_string ? api.error_string(r) : nullptr;
  throw std::runtime_error(std::string(what) + " failed: " + (s ? s : "NCCL result " + std::to_string(r)));
}

}  // namespace vramlab::engine::cuda
