// bench/cuda/results/h200-2026-12-02-s5-norm1-bench.cu — the timing norm1 ran on the H200 (2026-12-02, session 5):
// linear_attn (additive) at B=8, T=4096, H=HV=16, K=V=128, bf16 in, fp32 state: the chunkwise forward and the
// CUDA backward, each with and without `normalize`; and the forward with `normalize` on the general kernel (q read one
// element past a 16-byte boundary, so the 64-token kernels' cp.async rows do not fit: chunk_tiles.hpp inputs_fit). A record of what ran, not a CI target:
//   nvcc -std=c++20 -O3 -DNDEBUG -gencode=arch=compute_90a,code=sm_90a --expt-relaxed-constexpr -Iinclude -I<eigen3> <this> -o b
// Median over 7 repeats of CUDA-event times (forward: 10 calls each, backward: 3), after warm-up.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <vector>

#include <linea/cuda.hpp>

using namespace linea;
using T = bf16;
#define CK(x) linea::cuda_detail::check((x), #x)

__global__ void fill(T* p, std::int64_t n, std::uint32_t seed, float lo, float span) {
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n; i += std::int64_t(gridDim.x) * blockDim.x) {
    std::uint64_t x = std::uint64_t(i) * 0x9E3779B97F4A7C15ull + seed * 0xBF58476D1CE4E5B9ull;
    x ^= x >> 31, x *= 0x94D049BB133111EBull, x ^= x >> 29;
    p[i] = linea::cuda_detail::from_float<T>(lo + span * float(x >> 40) / float(1ull << 24));
  }
}
T* dev_tensor(std::size_t n, std::uint32_t seed, float lo, float span) {
  T* p = nullptr;
  CK(cudaMalloc(&p, n * sizeof(T)));
  fill<<<2048, 256>>>(p, std::int64_t(n), seed, lo, span);
  CK(cudaGetLastError());
  return p;
}

template <class F>
double time_ms(F&& f, int calls) {
  for (int i = 0; i < 2; ++i) f();
  cudaEvent_t a, b;
  CK(cudaEventCreate(&a)), CK(cudaEventCreate(&b));
  std::vector<float> ms;
  for (int r = 0; r < 7; ++r) {
    CK(cudaEventRecord(a));
    for (int i = 0; i < calls; ++i) f();
    CK(cudaEventRecord(b));
    CK(cudaEventSynchronize(b));
    float x = 0;
    CK(cudaEventElapsedTime(&x, a, b));
    ms.push_back(x / float(calls));
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

int main() {
  const index_t B = 8, L = 4096, H = 16, K = 128, V = 128;
  const std::size_t nk = std::size_t(B * L * H * K), nv = std::size_t(B * L * H * V);
  // positive q, k (a feature map's, as normalize expects: the denominators stay away from 0)
  T *q = dev_tensor(nk + 8, 1, 0.05f, 1.f), *k = dev_tensor(nk, 2, 0.05f, 1.f), *v = dev_tensor(nv, 3, -1.f, 2.f);
  T *d_o = dev_tensor(nv, 4, -1.f, 2.f), *o = dev_tensor(nv, 5, 0.f, 0.f);
  T *dq = dev_tensor(nk, 6, 0.f, 0.f), *dk = dev_tensor(nk, 7, 0.f, 0.f), *dv = dev_tensor(nv, 8, 0.f, 0.f);
  float* state = nullptr;
  CK(cudaMalloc(&state, std::size_t(B * H * K * V) * sizeof(float)));
  CK(cudaDeviceSynchronize());
  arguments<T, float> a;
  a.q = contiguous<4>(static_cast<const T*>(q), {B, L, H, K});
  a.k = contiguous<4>(static_cast<const T*>(k), {B, L, H, K});
  a.v = contiguous<4>(static_cast<const T*>(v), {B, L, H, V});
  a.o = contiguous<4>(o, {B, L, H, V});
  a.final_state = contiguous<4>(state, {B, H, K, V});
  gradients<T, float> g{.d_o = contiguous<4>(static_cast<const T*>(d_o), {B, L, H, V}),
                        .dq = contiguous<4>(dq, {B, L, H, K}),
                        .dk = contiguous<4>(dk, {B, L, H, K}),
                        .dv = contiguous<4>(dv, {B, L, H, V})};
  for (bool norm : {false, true}) {
    a.normalize = norm;
    const double fwd = time_ms([&] { linea::chunkwise<additive, read::identity, backend::cuda>(a); }, 10);
    arguments<T, float> b = a;
    b.o = {}, b.final_state = {};
    const double bwd = time_ms([&] { linea::backward<additive, read::identity, backend::cuda>(b, g); }, 3);
    CK(cudaDeviceSynchronize());
    std::printf("{\"kind\":\"normalize\",\"rule\":\"linear_attn\",\"B\":8,\"T\":4096,\"normalize\":%s,\"fwd_ms\":%.4f,"
                "\"bwd_ms\":%.4f,\"bwd_workspace_MiB\":%.1f}\n",
                norm ? "true" : "false", fwd, bwd, double(cuda::backward_workspace_size<additive>(b)) / 1048576.0);
    std::fflush(stdout);
  }
  arguments<T, float> u = a;  // normalize, general kernel
  u.normalize = true;
  u.q = contiguous<4>(static_cast<const T*>(q) + 1, {B, L, H, K});
  const double general = time_ms([&] { linea::chunkwise<additive, read::identity, backend::cuda>(u); }, 10);
  std::printf("{\"kind\":\"normalize\",\"rule\":\"linear_attn\",\"B\":8,\"T\":4096,\"normalize\":true,"
              "\"kernel\":\"general\",\"fwd_ms\":%.4f}\n", general);
  return 0;
}
