// sum_reduce: float accumulation; "row" when each output's reduced elements are
// contiguous (a block, or a warp when short, per output and chunk), "column" when
// consecutive outputs are consecutive in memory (32 outputs x 8 reduced lanes per
// block). Long reductions are split into chunks whose partial sums land in the
// backend's scratch buffer and are summed by a finalize kernel: no allocation from
// the caching allocator, so memory readings stay those of the sim device.
#include "engine/backends/cuda/kernels/dtype_io.cuh"
#include "engine/backends/cuda/kernels/launch.h"

namespace vramlab::engine::cuda {

namespace {

__device__ __forceinline__ int64_t kept_in_offset(const ReduceArgs& a, int64_t o) {
  int64_t off = 0;
  for (int d = a.out_ndim - 1; d >= 0; --d) {
    int64_t c = o % a.out_sizes[d];
    o /= a.out_sizes[d];
    off += c * a.out_in_strides[d];
  }
  return off;
}

__device__ __forceinline__ int64_t kept_out_offset(const ReduceArgs& a, int64_t o) {
  int64_t off = 0;
  for (int d = a.out_ndim - 1; d >= 0; --d) {
    int64_t c = o % a.out_sizes[d];
    o /= a.out_sizes[d];
    off += c * a.out_out_strides[d];
  }
  return off;
}

template <bool RedOne>
__device__ __forceinline__ int64_t red_offset(const ReduceArgs& a, int64_t r) {
  if constexpr (RedOne) {
    return r * a.red_strides[0];
  } else {
    int64_t off = 0;
    for (int d = a.red_ndim - 1; d >= 0; --d) {
      int64_t c = r % a.red_sizes[d];
      r /= a.red_sizes[d];
      off += c * a.red_strides[d];
    }
    return off;
  }
}

__device__ __forceinline__ void write_result(const ReduceArgs& a, int64_t o, int64_t c, float v) {
  if (a.chunks == 1)
    store_f(a.out, a.out_dtype, kept_out_offset(a, o), v);
  else
    a.partial[c * a.num_out + o] = v;
}

__device__ __forceinline__ bool vec8_dtype(int dt) { return dt == kF32 || dt == kF16 || dt == kBF16; }
__device__ __forceinline__ bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int k = 16; k > 0; k >>= 1) v += __shfl_xor_sync(0xffffffffu, v, k);
  return v;
}

template <bool RedOne>
__global__ void __launch_bounds__(256) reduce_row_block(ReduceArgs a) {
  const int64_t o = blockIdx.x / a.chunks, c = blockIdx.x % a.chunks;
  const int64_t base = kept_in_offset(a, o);
  const int64_t r0 = c * a.chunk_len;
  const int64_t r1 = min(r0 + a.chunk_len, a.num_red);
  float acc[4] = {0.f, 0.f, 0.f, 0.f};
  int64_t r = r0 + threadIdx.x;
  if (RedOne && a.red_strides[0] == 1 && vec8_dtype(a.in_dtype) && aligned16(a.in) && (base + r0) % 8 == 0) {
    // A contiguous run starting on the 16-byte grid: 8 elements per load, then the tail.
    const int64_t body = r0 + (r1 - r0) / 8 * 8;
    for (int64_t rv = r0 + 8 * int64_t(threadIdx.x); rv < body; rv += 8 * 256) {
      float v8[8];
      load8(a.in, a.in_dtype, base + rv, v8);
#pragma unroll
      for (int k = 0; k < 8; ++k) acc[k & 3] += v8[k];
    }
    r = body + threadIdx.x;
  } else {
    for (; r + 3 * 256 < r1; r += 4 * 256) {
#pragma unroll
      for (int k = 0; k < 4; ++k) acc[k] += load_f(a.in, a.in_dtype, base + red_offset<RedOne>(a, r + k * 256));
    }
  }
  for (; r < r1; r += 256) acc[0] += load_f(a.in, a.in_dtype, base + red_offset<RedOne>(a, r));
  float v = warp_sum((acc[0] + acc[1]) + (acc[2] + acc[3]));
  __shared__ float part[8];
  if ((threadIdx.x & 31) == 0) part[threadIdx.x >> 5] = v;
  __syncthreads();
  if (threadIdx.x < 32) {
    v = threadIdx.x < 8 ? part[threadIdx.x] : 0.f;
    v = warp_sum(v);
    if (threadIdx.x == 0) write_result(a, o, c, v);
  }
}

// One warp per (output, chunk): short rows.
template <bool RedOne>
__global__ void __launch_bounds__(256) reduce_row_warp(ReduceArgs a) {
  const int64_t item = int64_t(blockIdx.x) * 8 + (threadIdx.x >> 5);
  if (item >= a.num_out * a.chunks) return;
  const int lane = threadIdx.x & 31;
  const int64_t o = item / a.chunks, c = item % a.chunks;
  const int64_t base = kept_in_offset(a, o);
  const int64_t r0 = c * a.chunk_len;
  const int64_t r1 = min(r0 + a.chunk_len, a.num_red);
  float acc = 0.f;
  for (int64_t r = r0 + lane; r < r1; r += 32) acc += load_f(a.in, a.in_dtype, base + red_offset<RedOne>(a, r));
  acc = warp_sum(acc);
  if (lane == 0) write_result(a, o, c, acc);
}

template <bool RedOne>
__global__ void __launch_bounds__(256) reduce_column(ReduceArgs a) {
  const int tx = threadIdx.x & 31, ty = threadIdx.x >> 5;
  const int64_t o = int64_t(blockIdx.x) * 32 + tx;
  const int64_t c = blockIdx.y;
  float acc = 0.f;
  if (o < a.num_out) {
    const int64_t base = kept_in_offset(a, o);
    const int64_t r0 = c * a.chunk_len;
    const int64_t r1 = min(r0 + a.chunk_len, a.num_red);
    float acc2 = 0.f;
    int64_t r = r0 + ty;
    for (; r + 8 < r1; r += 16) {
      acc += load_f(a.in, a.in_dtype, base + red_offset<RedOne>(a, r));
      acc2 += load_f(a.in, a.in_dtype, base + red_offset<RedOne>(a, r + 8));
    }
    if (r < r1) acc += load_f(a.in, a.in_dtype, base + red_offset<RedOne>(a, r));
    acc += acc2;
  }
  __shared__ float part[8][33];
  part[ty][tx] = acc;
  __syncthreads();
  if (ty == 0 && o < a.num_out) {
    float v = 0.f;
#pragma unroll
    for (int k = 0; k < 8; ++k) v += part[k][tx];
    write_result(a, o, c, v);
  }
}

// The column kernel 8 outputs per thread (one 16-byte load per row): the kept dims'
// innermost one contiguous in the input with a multiple of 8 outputs, every row start on
// the 16-byte grid (checked by column_vec8). Same grid and chunks as reduce_column: a
// block's 32 outputs are 4 lanes x 8, its 64 row lanes go down the chunk's rows.
template <bool RedOne>
__global__ void __launch_bounds__(256) reduce_column8(ReduceArgs a) {
  const int tx = threadIdx.x & 3, ty = threadIdx.x >> 2;
  const int64_t o = int64_t(blockIdx.x) * 32 + tx * 8;
  const int64_t c = blockIdx.y;
  float acc[8] = {0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f};
  if (o < a.num_out) {
    const int64_t base = kept_in_offset(a, o);
    const int64_t r0 = c * a.chunk_len;
    const int64_t r1 = min(r0 + a.chunk_len, a.num_red);
    for (int64_t r = r0 + ty; r < r1; r += 64) {
      float v8[8];
      load8(a.in, a.in_dtype, base + red_offset<RedOne>(a, r), v8);
#pragma unroll
      for (int k = 0; k < 8; ++k) acc[k] += v8[k];
    }
  }
  __shared__ float part[64][33];
#pragma unroll
  for (int k = 0; k < 8; ++k) part[ty][tx * 8 + k] = acc[k];
  __syncthreads();
  if (threadIdx.x < 32) {
    const int64_t oo = int64_t(blockIdx.x) * 32 + threadIdx.x;
    if (oo < a.num_out) {
      float v = 0.f;
      for (int k = 0; k < 64; ++k) v += part[k][threadIdx.x];
      write_result(a, oo, c, v);
    }
  }
}

bool column_vec8(const ReduceArgs& a) {
  if (a.in_dtype != kF32 && a.in_dtype != kF16 && a.in_dtype != kBF16) return false;
  if (reinterpret_cast<uintptr_t>(a.in) % 16 != 0 || a.out_ndim < 1) return false;
  const int last = a.out_ndim - 1;
  if (a.out_in_strides[last] != 1 || a.out_sizes[last] % 8 != 0) return false;
  for (int d = 0; d < last; ++d)
    if (a.out_in_strides[d] % 8 != 0) return false;
  for (int d = 0; d < a.red_ndim; ++d)
    if (a.red_strides[d] % 8 != 0) return false;
  return true;
}

__global__ void reduce_finalize(ReduceArgs a) {
  const int64_t o = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (o >= a.num_out) return;
  float v = 0.f;
  for (int64_t c = 0; c < a.chunks; ++c) v += a.partial[c * a.num_out + o];
  store_f(a.out, a.out_dtype, kept_out_offset(a, o), v);
}

template <bool RedOne>
void go(const ReduceArgs& a, bool row, cudaStream_t st) {
  if (row) {
    if (a.chunk_len <= 128) {
      int64_t items = a.num_out * a.chunks;
      reduce_row_warp<RedOne><<<unsigned((items + 7) / 8), 256, 0, st>>>(a);
    } else {
      reduce_row_block<RedOne><<<unsigned(a.num_out * a.chunks), 256, 0, st>>>(a);
    }
  } else {
    dim3 grid(unsigned((a.num_out + 31) / 32), unsigned(a.chunks));
    if (column_vec8(a))
      reduce_column8<RedOne><<<grid, 256, 0, st>>>(a);
    else
      reduce_column<RedOne><<<grid, 256, 0, st>>>(a);
  }
}

}  // namespace

void launch_sum_reduce(const ReduceArgs& a, bool row, cudaStream_t st) {
  if (a.num_out == 0) return;
  if (a.red_ndim <= 1)
    go<true>(a, row, st);
  else
    go<false>(a, row, st);
  check_launch("sum_reduce kernel");
  if (a.chunks > 1) {
    reduce_finalize<<<unsigned((a.num_out + 255) / 256), 256, 0, st>>>(a);
    check_launch("sum_reduce finalize kernel");
  }
}

}  // namespace vramlab::engine::cuda
