// bench/cuda/ab_common.hpp — what the CUDA benchmark drivers share: hashed random numbers for their device fills,
// the delta rules' unit key rows, a random float32 state, a zeroed device allocation, the relative distance of two device tensors, and CUDA-event timing. Each driver keeps its own fill kernels (their distributions and
// element types differ) and builds them on hash_uniform / hash_normal, so that a fill is the same numbers in every
// driver and needs no generator state.
#pragma once
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include <linea/cuda.hpp>

namespace linea_bench {

// U[0, 1) from a hash of (element index, seed) (splitmix64's finaliser; 24 bits, exact in float).
__device__ inline float hash_uniform(std::uint64_t i, std::uint32_t seed) {
  std::uint64_t x = i * 0x9E3779B97F4A7C15ull + seed * 0xBF58476D1CE4E5B9ull;
  x ^= x >> 31, x *= 0x94D049BB133111EBull, x ^= x >> 29;
  return static_cast<float>(x >> 40) / static_cast<float>(1ull << 24);
}

// N(0, 1) by Box–Muller from the uniforms of seed and seed + 77 (u1 kept off 0: log stays finite).
__device__ inline float hash_normal(std::uint64_t i, std::uint32_t seed) {
  const float u1 = fmaxf(hash_uniform(i, seed), 1e-7f), u2 = hash_uniform(i, seed + 77);
  return sqrtf(-2.f * logf(u1)) * cospif(2.f * u2);
}

// Rows of length D of a 16-bit or float tensor scaled to unit L2 norm (the keys of the delta rules), a warp a row.
template <class X>
__global__ void normalize_rows(X* p, std::int64_t rows, int D) {
  const std::int64_t r = blockIdx.x * static_cast<std::int64_t>(blockDim.x / 32) + threadIdx.x / 32;
  if (r >= rows) return;
  float ss = 0;
  for (int i = threadIdx.x % 32; i < D; i += 32) {
    const float x = static_cast<float>(p[r * D + i]);
    ss += x * x;
  }
  for (int o = 16; o; o >>= 1) ss += __shfl_xor_sync(0xffffffffu, ss, o);
  const float inv = rsqrtf(ss + 1e-6f);
  for (int i = threadIdx.x % 32; i < D; i += 32)
    p[r * D + i] = linea::cuda_detail::from_float<X>(static_cast<float>(p[r * D + i]) * inv);
}

// A state of n elements (float32), U[−0.5, 0.5) from (index, seed). (A template: one definition in every driver.)
template <class S>
__global__ void fill_state(S* p, std::int64_t n, std::uint32_t seed) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
    p[i] = hash_uniform(static_cast<std::uint64_t>(i), seed) - 0.5f;
}

// n elements of X on the device, zeroed (at least one, so that an empty tensor still has a distinct pointer).
template <class X>
X* dalloc(std::size_t n) {
  X* p = nullptr;
  linea::cuda_detail::check(cudaMalloc(&p, std::max<std::size_t>(n, 1) * sizeof(X)), "cudaMalloc");
  linea::cuda_detail::check(cudaMemset(p, 0, std::max<std::size_t>(n, 1) * sizeof(X)), "cudaMemset");
  return p;
}

// sums[0] += Σ (a − b)², sums[1] += Σ b², sums[2] += non-finite entries of a (a and b read as float, summed in double)
template <class X>
__global__ void distance_kernel(const X* a, const X* b, std::int64_t n, double* sums) {
  double x = 0, y = 0, bad = 0;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const double ai = float(a[i]), bi = float(b[i]);
    if (!isfinite(ai)) bad += 1;
    x += (ai - bi) * (ai - bi), y += bi * bi;
  }
  for (int o = 16; o; o >>= 1)
    x += __shfl_xor_sync(0xffffffffu, x, o), y += __shfl_xor_sync(0xffffffffu, y, o),
        bad += __shfl_xor_sync(0xffffffffu, bad, o);
  if (threadIdx.x % 32 == 0) atomicAdd(&sums[0], x), atomicAdd(&sums[1], y), atomicAdd(&sums[2], bad);
}

// ‖a − b‖ / ‖b‖ over n device elements (‖a − b‖ where b is all zeros); infinity where a has a non-finite entry.
template <class X>
double relative_distance(const X* a, const X* b, std::size_t n) {
  using linea::cuda_detail::check;
  double* s = dalloc<double>(3);
  distance_kernel<<<1024, 256>>>(a, b, std::int64_t(n), s);
  double h[3];
  check(cudaMemcpy(h, s, sizeof h, cudaMemcpyDeviceToHost), "cudaMemcpy");
  check(cudaFree(s), "cudaFree");
  if (h[2] > 0) return INFINITY;
  return h[1] > 0 ? std::sqrt(h[0] / h[1]) : std::sqrt(h[0]);
}

// Milliseconds per call of f(i) (i: the call's index within its batch, for drivers that alternate inputs): `warmup`
// calls, then `repeats` timings of `calls` back-to-back calls between two CUDA events on the default stream; the
// median. (decode_ab.cu and perkey_delta_ab.cu time through it with their own defaults.)
template <class F>
double time_calls_ms(F&& f, int calls, int repeats, int warmup) {
  using linea::cuda_detail::check;
  for (int i = 0; i < warmup; ++i) f(i);
  cudaEvent_t e0, e1;
  check(cudaEventCreate(&e0), "cudaEventCreate");
  check(cudaEventCreate(&e1), "cudaEventCreate");
  std::vector<double> t;
  for (int r = 0; r < repeats; ++r) {
    check(cudaEventRecord(e0), "cudaEventRecord");
    for (int i = 0; i < calls; ++i) f(i);
    check(cudaEventRecord(e1), "cudaEventRecord");
    check(cudaEventSynchronize(e1), "cudaEventSynchronize");
    float ms = 0;
    check(cudaEventElapsedTime(&ms, e0, e1), "cudaEventElapsedTime");
    t.push_back(ms / calls);
  }
  check(cudaEventDestroy(e0), "cudaEventDestroy");
  check(cudaEventDestroy(e1), "cudaEventDestroy");
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

// Milliseconds per call of f(): one call to warm up, then as time_calls_ms.
template <class F>
double time_ms(F&& f, int calls, int repeats) {
  return time_calls_ms([&](int) { f(); }, calls, repeats, 1);
}

}  // namespace linea_bench
