#pragma once
// NCCL reached through dlopen at run time, as cuBLAS is: machines without it (and builds
// without CUDA) still load the engine, and a real data-parallel run says why it cannot
// start. The few types, enum values and entry points used are declared here from NCCL
// 2.28's public nccl.h; no CUDA type appears (streams are passed as void*).
#include <cstddef>
#include <string>
#include <vector>

namespace vramlab::engine::cuda {

struct NcclUniqueId {
  char internal[128];  // NCCL_UNIQUE_ID_BYTES
};
using ncclComm_t = struct ncclComm*;
using ncclResult_t = int;  // ncclSuccess = 0
constexpr ncclResult_t kNcclSuccess = 0;
// ncclDataType_t
enum NcclDataType : int {
  kNcclUint8 = 1,
  kNcclInt64 = 4,
  kNcclFloat16 = 6,
  kNcclFloat32 = 7,
  kNcclFloat64 = 8,
  kNcclBFloat16 = 9
};
// ncclRedOp_t
enum NcclRedOp : int { kNcclSum = 0, kNcclAvg = 4 };

struct NcclApi {
  ncclResult_t (*get_version)(int*) = nullptr;
  ncclResult_t (*get_unique_id)(NcclUniqueId*) = nullptr;
  ncclResult_t (*comm_init_rank)(ncclComm_t*, int, NcclUniqueId, int) = nullptr;
  ncclResult_t (*comm_destroy)(ncclComm_t) = nullptr;
  ncclResult_t (*comm_abort)(ncclComm_t) = nullptr;
  ncclResult_t (*all_reduce)(const void*, void*, size_t, NcclDataType, NcclRedOp, ncclComm_t, void* stream) = nullptr;
  ncclResult_t (*broadcast)(const void*, void*, size_t, NcclDataType, int, ncclComm_t, void* stream) = nullptr;
  // ncclAllGather(sendbuff, recvbuff, sendcount, ...): recvbuff holds nranks * sendcount
  ncclResult_t (*all_gather)(const void*, void*, size_t, NcclDataType, ncclComm_t, void* stream) = nullptr;
  // ncclReduceScatter(sendbuff, recvbuff, recvcount, ...): sendbuff holds nranks * recvcount
  ncclResult_t (*reduce_scatter)(const void*, void*, size_t, NcclDataType, NcclRedOp, ncclComm_t,
                                 void* stream) = nullptr;
  const char* (*error_string)(ncclResult_t) = nullptr;
  std::string library;  // the soname that loaded
  int version = 0;      // NCCL_VERSION_CODE, e.g. 22809
};

// Tries each name in turn (a fresh load every call; tests name libraries that do not
// exist). Null with the reason in *why when none loads or an entry point is missing.
const NcclApi* load_nccl_from(const std::vector<std::string>& names, std::string* why);
// libnccl.so.2, then libnccl.so, once per process.
const NcclApi* load_nccl(std::string* why);

// Throws std::runtime_error "<what> failed: <NCCL's error string>" unless r is success.
void check_nccl(const NcclApi& api, ncclResult_t r, const char* what);

}  // namespace vramlab::engine::cuda
