// pk18's profiling driver: main's perkey_delta_kernel for kda, gdn2, gla at bf16 8×4096 H = 16 K = V = 128, each
// launched once (for `ncu -k regex:perkey_delta_kernel -c 3`), then timed with CUDA events (median of 7 × 10).
// Built here with -lineinfo (seconds: only the three kernels are instantiated):
//   nvcc -std=c++20 -O3 -DNDEBUG -gencode=arch=compute_90a,code=sm_90a --expt-relaxed-constexpr -lineinfo \
//        -Iinclude -Ibench/cuda bench/cuda/results/h200-2026-12-04-pk18-scripts/prof.cu -o prof
#include <cstdio>
#include <cstring>

#include <linea/cuda.hpp>
#include <linea/backend/cuda/perkey_delta_kernel.hpp>

#include "ab_common.hpp"

using namespace linea;
using T = bf16;
#define CK(x) linea::cuda_detail::check((x), #x)

namespace {
constexpr index_t B = 8, TT = 4096, H = 16, K = 128, V = 128;
__global__ void fill(T* p, std::int64_t n, std::uint32_t seed, int kind) {
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n; i += std::int64_t(gridDim.x) * blockDim.x) {
    const float z = linea_bench::hash_normal(i, seed);
    float x = z;
    if (kind == 1) x = -log1pf(expf(-z));       // log sigmoid
    if (kind == 2) x = 1.f / (1.f + expf(-z));  // sigmoid
    if (kind == 3) x = z * 0.0883883f;          // k, about unit rows
    p[i] = linea::cuda_detail::from_float<T>(x);
  }
}
T* tensor(std::size_t n, std::uint32_t seed, int kind) {
  T* p = nullptr;
  CK(cudaMalloc(&p, n * sizeof(T)));
  fill<<<2048, 256>>>(p, std::int64_t(n), seed, kind);
  return p;
}
template <class Rule>
void run(bool time) {
  using namespace cuda_detail;
  const std::size_t nk = B * TT * H * K, ns = B * TT * H;
  T *q = tensor(nk, 1, 0), *k = tensor(nk, 2, 3), *v = tensor(nk, 3, 0), *gk = tensor(nk, 5, 1), *beta = tensor(ns, 6, 2),
    *b = tensor(nk, 7, 2), *w = tensor(nk, 8, 2), *o = tensor(nk, 9, 0);
  float* s1 = nullptr;
  CK(cudaMalloc(&s1, B * H * K * V * sizeof(float)));
  arguments<T, float> a;
  a.q = contiguous<4>(static_cast<const T*>(q), {B, TT, H, K});
  a.k = contiguous<4>(static_cast<const T*>(k), {B, TT, H, K});
  a.v = contiguous<4>(static_cast<const T*>(v), {B, TT, H, V});
  a.gk = contiguous<4>(static_cast<const T*>(gk), {B, TT, H, K});
  if constexpr (reads(Rule::inputs, input::beta)) a.beta = contiguous<3>(static_cast<const T*>(beta), {B, TT, H});
  if constexpr (reads(Rule::inputs, input::b)) a.b = contiguous<4>(static_cast<const T*>(b), {B, TT, H, K});
  if constexpr (reads(Rule::inputs, input::w)) a.w = contiguous<4>(static_cast<const T*>(w), {B, TT, H, V});
  a.o = contiguous<4>(o, {B, TT, H, V});
  a.final_state = contiguous<4>(s1, {B, H, K, V});
  const problem p = validate_chunkwise<Rule, read::identity>(a);
  const kernel_args<T> ka = make_kernel_args(a, p);
  using sh = perkey_delta_shape;
  constexpr auto kernel = perkey_delta_kernel<Rule, T, __nv_bfloat16>;
  allow_dynamic_shared<kernel>(sh::bytes, 0);
  auto launch = [&] { kernel<<<dim3(unsigned(H), unsigned(B), 1u), sh::threads, sh::bytes>>>(ka); };
  CK(cudaDeviceSynchronize());
  launch();
  CK(cudaDeviceSynchronize());
  if (time) {
    const double ms = [&] {
      for (int i = 0; i < 3; ++i) launch();
      cudaEvent_t e0, e1;
      CK(cudaEventCreate(&e0)), CK(cudaEventCreate(&e1));
      std::vector<double> t;
      for (int r = 0; r < 7; ++r) {
        CK(cudaEventRecord(e0));
        for (int i = 0; i < 10; ++i) launch();
        CK(cudaEventRecord(e1));
        CK(cudaEventSynchronize(e1));
        float x = 0;
        CK(cudaEventElapsedTime(&x, e0, e1));
        t.push_back(x / 10);
      }
      std::sort(t.begin(), t.end());
      return t[3];
    }();
    std::printf("{\"rule\":\"%s\",\"ms\":%.4f}\n", rule_name<Rule>::value, ms);
  }
  for (void* x : {(void*)q, (void*)k, (void*)v, (void*)gk, (void*)beta, (void*)b, (void*)w, (void*)o, (void*)s1}) CK(cudaFree(x));
}
}  // namespace

int main(int argc, char** argv) {
  const bool time = argc > 1 && !std::strcmp(argv[1], "--time");
  run<kda>(time), run<gdn2>(time), run<gla>(time);
  return 0;
}
