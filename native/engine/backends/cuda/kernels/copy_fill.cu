// Same-dtype strided copies (any element type, bit exact), fills with a value's bit
// pattern, and the non-finite scan behind all_finite.
#include <cstdint>

#include "engine/backends/cuda/kernels/dtype_io.cuh"
#include "engine/backends/cuda/kernels/launch.h"

namespace vramlab::engine::cuda {

namespace {

constexpr int kThreads = 256;

template <class W, bool Small>
__global__ void __launch_bounds__(kThreads) copy_strided(PointwiseArgs a) {
  const int64_t step = int64_t(gridDim.x) * blockDim.x;
  for (int64_t idx = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; idx < a.numel; idx += step) {
    int64_t off[4];
    offsets_of<Small>(a, idx, off);
    static_cast<W*>(a.out.ptr)[off[0]] = static_cast<const W*>(a.in[0].ptr)[off[1]];
  }
}

template <class W, bool Small>
__global__ void __launch_bounds__(kThreads) fill_strided(PointwiseArgs a) {
  const W v = W(a.bits);
  const int64_t step = int64_t(gridDim.x) * blockDim.x;
  for (int64_t idx = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; idx < a.numel; idx += step) {
    int64_t off[4];
    offsets_of<Small>(a, idx, off);
    static_cast<W*>(a.out.ptr)[off[0]] = v;
  }
}

// Contiguous, 16-byte aligned: 16-byte stores of the repeated pattern, then the tail.
template <class W>
__global__ void __launch_bounds__(kThreads) fill_vec(PointwiseArgs a) {
  const W v = W(a.bits);
  uint4 pat;
  W* pw = reinterpret_cast<W*>(&pat);
#pragma unroll
  for (int k = 0; k < int(16 / sizeof(W)); ++k) pw[k] = v;
  constexpr int64_t per = 16 / sizeof(W);
  const int64_t nvec = a.numel / per;
  const int64_t step = int64_t(gridDim.x) * blockDim.x;
  const int64_t tid = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  for (int64_t i = tid; i < nvec; i += step) reinterpret_cast<uint4*>(a.out.ptr)[i] = pat;
  const int64_t t = nvec * per + tid;
  if (t < a.numel) static_cast<W*>(a.out.ptr)[t] = v;
}

template <bool Small>
__global__ void __launch_bounds__(kThreads) nonfinite_scan(PointwiseArgs a, int* flag) {
  const int64_t step = int64_t(gridDim.x) * blockDim.x;
  bool bad = false;
  for (int64_t idx = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; idx < a.numel; idx += step) {
    int64_t off[4];
    offsets_of<Small>(a, idx, off);
    bad |= !isfinite(load_f(a.out.ptr, a.out.dtype, off[0]));
  }
  if (__syncthreads_or(bad) && threadIdx.x == 0) atomicExch(flag, 1);
}

template <class W>
void copy_w(const PointwiseArgs& a, int sms, cudaStream_t st) {
  // The innermost (coalesced) dim contiguous on both sides, 16-byte aligned rows: the
  // same copy in 16-byte words (the qkv cat of attention's backward, transposes that
  // keep the head dim, slices of rows), one load and store per 16 bytes instead of
  // one per element.
  constexpr int64_t V = 16 / int64_t(sizeof(W));
  const int d = a.ndim - 1;
  bool vec = V > 1 && d >= 0 && a.nin == 1 && a.out.strides[d] == 1 && a.in[0].strides[d] == 1 && a.sizes[d] % V == 0 &&
             reinterpret_cast<uintptr_t>(a.out.ptr) % 16 == 0 && reinterpret_cast<uintptr_t>(a.in[0].ptr) % 16 == 0;
  for (int k = 0; vec && k < d; ++k) vec = a.out.strides[k] % V == 0 && a.in[0].strides[k] % V == 0;
  if (vec) {
    PointwiseArgs w = a;
    w.sizes[d] = a.sizes[d] / V;
    w.numel = a.numel / V;
    if (w.numel < (int64_t(1) << 31))
      for (int k = 0; k <= d; ++k) w.div[k] = make_fastdiv(uint32_t(w.sizes[k]));
    for (int k = 0; k < d; ++k) {
      w.out.strides[k] /= V;
      w.in[0].strides[k] /= V;
    }
    if (w.numel < (int64_t(1) << 31))
      copy_strided<uint4, true><<<grid_for(w.numel, kThreads, sms), kThreads, 0, st>>>(w);
    else
      copy_strided<uint4, false><<<grid_for(w.numel, kThreads, sms), kThreads, 0, st>>>(w);
    return;
  }
  if (a.numel < (int64_t(1) << 31))
    copy_strided<W, true><<<grid_for(a.numel, kThreads, sms), kThreads, 0, st>>>(a);
  else
    copy_strided<W, false><<<grid_for(a.numel, kThreads, sms), kThreads, 0, st>>>(a);
}

template <class W>
void fill_w(const PointwiseArgs& a, int sms, cudaStream_t st) {
  bool contiguous = a.ndim == 1 && a.out.strides[0] == 1 && (reinterpret_cast<uintptr_t>(a.out.ptr) % 16) == 0;
  if (contiguous)
    fill_vec<W><<<grid_for(a.numel / int64_t(16 / sizeof(W)) + 1, kThreads, sms), kThreads, 0, st>>>(a);
  else if (a.numel < (int64_t(1) << 31))
    fill_strided<W, true><<<grid_for(a.numel, kThreads, sms), kThreads, 0, st>>>(a);
  else
    fill_strided<W, false><<<grid_for(a.numel, kThreads, sms), kThreads, 0, st>>>(a);
}

}  // namespace

void launch_copy_bytes(const PointwiseArgs& a, int elem_size, int sms, cudaStream_t st) {
  if (a.numel == 0) return;
  switch (elem_size) {
    case 2:
      copy_w<uint16_t>(a, sms, st);
      break;
    case 4:
      copy_w<uint32_t>(a, sms, st);
      break;
    case 8:
      copy_w<uint64_t>(a, sms, st);
      break;
    default:
      throw std::invalid_argument("copy: unsupported element size " + std::to_string(elem_size));
  }
  check_launch("copy kernel");
}

void launch_fill(const PointwiseArgs& a, int elem_size, int sms, cudaStream_t st) {
  if (a.numel == 0) return;
  switch (elem_size) {
    case 2:
      fill_w<uint16_t>(a, sms, st);
      break;
    case 4:
      fill_w<uint32_t>(a, sms, st);
      break;
    case 8:
      fill_w<uint64_t>(a, sms, st);
      break;
    default:
      throw std::invalid_argument("fill: unsupported element size " + std::to_string(elem_size));
  }
  check_launch("fill kernel");
}

void launch_nonfinite_check(const PointwiseArgs& a, int* flag, int sms, cudaStream_t st) {
  if (a.numel == 0) return;
  if (a.numel < (int64_t(1) << 31))
    nonfinite_scan<true><<<grid_for(a.numel, kThreads, sms), kThreads, 0, st>>>(a, flag);
  else
    nonfinite_scan<false><<<grid_for(a.numel, kThreads, sms), kThreads, 0, st>>>(a, flag);
  check_launch("all_finite kernel");
}

}  // namespace vramlab::engine::cuda
