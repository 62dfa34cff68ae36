// The CUDA attention kernels alone on cuda:0: ms per forward and per backward (dQ and
// dK/dV) for one layer's shape, q, k, v as views of a packed (B, S, 3, H, D) buffer (as
// the models' qkv projection makes them), out and the gradients in (B, S, H, D) as the
// flash backend lays them out, and the backward's scratch as the engine allocates it for
// flash. The buffers are this benchmark's; the kernels allocate nothing.
//   vramlab_bench_attention [B H S D bf16|f16|f32 causal(0|1)]   -> JSON
// (default: GPT-2 small's layer, 8 12 1024 64 bf16 1)
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "engine/backends/cuda/kernels/launch.h"

using namespace vramlab::engine::cuda;

namespace {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(e));
    std::exit(1);
  }
}

// Normal(0, 1) values in the element type, uploaded.
void* random_buffer(size_t n, int32_t dt, std::mt19937& rng) {
  std::normal_distribution<float> nd;
  const size_t es = dt == kF32 ? 4 : 2;
  std::vector<uint8_t> host(n * es);
  for (size_t i = 0; i < n; ++i) {
    float f = nd(rng);
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    if (dt == kF32)
      std::memcpy(&host[i * 4], &f, 4);
    else if (dt == kBF16) {
      uint16_t h = uint16_t(bits >> 16);
      std::memcpy(&host[i * 2], &h, 2);
    } else {  // f16: values this small convert by rebiasing the exponent
      uint32_t sign = (bits >> 16) & 0x8000u, exp = (bits >> 23) & 0xffu, man = (bits >> 13) & 0x3ffu;
      uint16_t h = exp < 103 ? uint16_t(sign) : uint16_t(sign | ((exp - 112) << 10) | man);
      std::memcpy(&host[i * 2], &h, 2);
    }
  }
  void* p = nullptr;
  check(cudaMalloc(&p, host.size()), "cudaMalloc");
  check(cudaMemcpy(p, host.data(), host.size(), cudaMemcpyHostToDevice), "upload");
  return p;
}

View4 view(void* p, int32_t dt, const int64_t (&size)[4], const int64_t (&stride)[4]) {
  View4 v;
  v.ptr = p;
  v.dtype = dt;
  for (int i = 0; i < 4; ++i) v.size[i] = size[i], v.stride[i] = stride[i];
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  int64_t B = 8, H = 12, S = 1024, D = 64;
  int32_t dt = kBF16;
  bool causal = true;
  if (argc > 4) B = std::atoll(argv[1]), H = std::atoll(argv[2]), S = std::atoll(argv[3]), D = std::atoll(argv[4]);
  if (argc > 5) dt = !std::strcmp(argv[5], "f32") ? kF32 : !std::strcmp(argv[5], "f16") ? kF16 : kBF16;
  if (argc > 6) causal = std::atoi(argv[6]) != 0;
  std::mt19937 rng(1);
  const int64_t n = B * S * H * D;
  char* qkv = static_cast<char*>(random_buffer(size_t(3 * n), dt, rng));
  void* go = random_buffer(size_t(n), dt, rng);
  void *out = nullptr, *lse = nullptr, *dq = nullptr, *dk = nullptr, *dv = nullptr;
  const size_t es = dt == kF32 ? 4 : 2;
  for (void** p : {&out, &dq, &dk, &dv}) check(cudaMalloc(p, size_t(n) * es), "cudaMalloc");
  check(cudaMalloc(&lse, size_t(B * H * S) * 4), "cudaMalloc");
  // the flash backend's backward scratch as the engine allocates it (ops/attention.cpp):
  // dq_accum (B, S rounded to 128, H, D rounded to 32) and softmax_d (B, H, S rounded), float
  const int64_t Sr = (S + 127) / 128 * 128, Dr = (D + 31) / 32 * 32;
  void *acc = nullptr, *rsum = nullptr;
  check(cudaMalloc(&acc, size_t(B * Sr * H * Dr) * 4), "cudaMalloc");
  check(cudaMalloc(&rsum, size_t(B * H * Sr) * 4), "cudaMalloc");
  const int64_t sz[4] = {B, H, S, D}, packed[4] = {S * 3 * H * D, D, 3 * H * D, 1}, bshd[4] = {S * H * D, D, H * D, 1};
  View4 q = view(qkv, dt, sz, packed), k = view(qkv + H * D * es, dt, sz, packed),
        v = view(qkv + 2 * H * D * es, dt, sz, packed);
  View4 o = view(out, dt, sz, bshd), g = view(go, dt, sz, bshd), vdq = view(dq, dt, sz, bshd),
        vdk = view(dk, dt, sz, bshd), vdv = view(dv, dt, sz, bshd);
  const int64_t lsz[4] = {B, H, S, 1}, lst[4] = {H * S, S, 1, 0};
  View4 l = view(lse, kF32, lsz, lst);
  l.dtype = kF32;
  const float scale = float(1.0 / std::sqrt(double(D)));
  auto fwd = [&] { launch_attention(o, l, q, k, v, causal, scale, nullptr); };
  const int64_t asz[4] = {B, H, S, D}, ast[4] = {Sr * H * Dr, Dr, H * Dr, 1}, rsz[4] = {B, H, S, 1},
                rst[4] = {H * Sr, Sr, 1, 0};
  View4 vacc = view(acc, kF32, asz, ast), vrs = view(rsum, kF32, rsz, rst);
  auto bwd = [&] { launch_attention_backward(vdq, vdk, vdv, g, q, k, v, o, l, vacc, vrs, causal, scale, nullptr); };
  auto time_ms = [&](auto&& f) {
    for (int i = 0; i < 3; ++i) f();
    cudaEvent_t a, b;
    cudaEventCreate(&a);
    cudaEventCreate(&b);
    const int iters = 20;
    cudaEventRecord(a);
    for (int i = 0; i < iters; ++i) f();
    cudaEventRecord(b);
    check(cudaEventSynchronize(b), "run");
    float ms = 0;
    cudaEventElapsedTime(&ms, a, b);
    return double(ms) / iters;
  };
  const double f_ms = time_ms(fwd), b_ms = time_ms(bwd);
  // matmul FLOPs: forward 2 products, backward 5 (FlashAttention's accounting); causal halves
  const double fwd_flop = 4.0 * double(B * H) * double(S) * double(S) * double(D) * (causal ? 0.5 : 1.0);
  std::printf(
      "{\"shape\": \"B%lld H%lld S%lld D%lld %s%s\", \"fwd_ms\": %.3f, \"bwd_ms\": %.3f, "
      "\"fwd_tflops\": %.1f, \"bwd_tflops\": %.1f}\n",
      (long long)B, (long long)H, (long long)S, (long long)D, argc > 5 ? argv[5] : "bf16", causal ? " causal" : "",
      f_ms, b_ms, fwd_flop / f_ms * 1e-9, 2.5 * fwd_flop / b_ms * 1e-9);
  return 0;
}
