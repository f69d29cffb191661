// bench/cuda/ab_common.hpp — what the CUDA benchmark drivers share: hashed random numbers for their device fills,
// a zeroed device allocation, and CUDA-event timing. Each driver keeps its own fill kernels (their distributions and
// element types differ) and builds them on hash_uniform / hash_normal, so that a fill is the same numbers in every
// driver and needs no generator state.
#pragma once
#include <cuda_runtime.h>

#include <algorithm>
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

// n elements of X on the device, zeroed (at least one, so that an empty tensor still has a distinct pointer).
template <class X>
X* dalloc(std::size_t n) {
  X* p = nullptr;
  linea::cuda_detail::check(cudaMalloc(&p, std::max<std::size_t>(n, 1) * sizeof(X)), "cudaMalloc");
  linea::cuda_detail::check(cudaMemset(p, 0, std::max<std::size_t>(n, 1) * sizeof(X)), "cudaMemset");
  return p;
}

// Milliseconds per call of f: one call to warm up, then `repeats` timings of `calls` back-to-back calls between two
// CUDA events on the default stream; the median.
template <class F>
double time_ms(F&& f, int calls, int repeats) {
  using linea::cuda_detail::check;
  f();
  cudaEvent_t e0, e1;
  check(cudaEventCreate(&e0), "cudaEventCreate");
  check(cudaEventCreate(&e1), "cudaEventCreate");
  std::vector<double> t;
  for (int r = 0; r < repeats; ++r) {
    check(cudaEventRecord(e0), "cudaEventRecord");
    for (int i = 0; i < calls; ++i) f();
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

}  // namespace linea_bench
