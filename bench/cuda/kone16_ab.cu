// bench/cuda/kone16_ab.cu — the CUDA backward of delta and gated_delta (bf16, B = 8, T = 4096, H = 16, K = V = 128, L2
// norm in the kernel), timed with and without dL/dS_0 asked for: kone16's A/B. Not built by CMake. Built once as a
// unit that links the instance objects (-DLINEA_CUDA_EXTERN_INSTANCES -DLINEA_CUDA_EXTERN_BACKWARD_PHASES) and
// linked twice — with main's backward_phases object ("old") and kone16's ("new"; the other instance objects the
// same) — the two binaries run alternately in one device call (bench/cuda/results/h200-2026-12-04-kone16-scripts/).
// Prints one JSON line per (rule, variant): the best of three interleaved medians of 3 × 3 calls (CUDA events).
#include <cstdio>
#include <cstring>
#include <string>

#include <linea/cuda.hpp>

#include "ab_common.hpp"

namespace {

using linea::index_t;
using T = linea::bf16;

enum class fill { normal, logsigmoid, sigmoid };

__global__ void fill_kernel(T* x, std::size_t n, std::uint32_t seed, fill f) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n; i += std::size_t(gridDim.x) * blockDim.x) {
    const float z = linea_bench::hash_normal(i, seed);
    const float y = f == fill::normal ? z : f == fill::sigmoid ? 1.f / (1.f + __expf(-z)) : -log1pf(__expf(-z));
    x[i] = T(y);
  }
}
T* random_tensor(std::size_t n, std::uint32_t seed, fill f) {
  T* p = linea_bench::dalloc<T>(n);
  fill_kernel<<<1024, 256>>>(p, n, seed, f);
  linea::cuda_detail::check(cudaGetLastError(), "fill");
  return p;
}

template <class Rule>
void run(const char* name, index_t B, index_t T_) {
  using namespace linea;
  const index_t H = 16, K = 128, V = 128;
  const std::size_t nk = B * T_ * H * K, nv = B * T_ * H * V, ns = B * T_ * H, nst = B * H * K * V;
  T *q = random_tensor(nk, 1, fill::normal), *k = random_tensor(nk, 2, fill::normal), *v = random_tensor(nv, 3, fill::normal);
  T *g = random_tensor(ns, 4, fill::logsigmoid), *beta = random_tensor(ns, 5, fill::sigmoid);
  T* d_o = random_tensor(nv, 6, fill::normal);
  float* S0 = linea_bench::dalloc<float>(nst);
  T *dq = linea_bench::dalloc<T>(nk), *dk = linea_bench::dalloc<T>(nk), *dv = linea_bench::dalloc<T>(nv);
  T *dg = linea_bench::dalloc<T>(ns), *dbeta = linea_bench::dalloc<T>(ns);
  float* dS0 = linea_bench::dalloc<float>(nst);
  arguments<T, float> a;
  a.q = contiguous<4>(static_cast<const T*>(q), {B, T_, H, K});
  a.k = contiguous<4>(static_cast<const T*>(k), {B, T_, H, K});
  a.v = contiguous<4>(static_cast<const T*>(v), {B, T_, H, V});
  if constexpr (reads(Rule::inputs, input::g)) a.g = contiguous<3>(static_cast<const T*>(g), {B, T_, H});
  a.beta = contiguous<3>(static_cast<const T*>(beta), {B, T_, H});
  a.qk_l2norm = true;
  gradients<T, float> gr{.d_o = contiguous<4>(static_cast<const T*>(d_o), {B, T_, H, V}),
                         .dq = contiguous<4>(dq, {B, T_, H, K}),
                         .dk = contiguous<4>(dk, {B, T_, H, K}),
                         .dv = contiguous<4>(dv, {B, T_, H, V})};
  if (a.g.ptr) gr.dg = contiguous<3>(dg, {B, T_, H});
  gr.dbeta = contiguous<3>(dbeta, {B, T_, H});
  arguments<T, float> a0 = a;  // with an initial state, and dL/dS_0 asked for
  a0.initial_state = contiguous<4>(static_cast<const float*>(S0), {B, H, K, V});
  gradients<T, float> gr0 = gr;
  gr0.d_initial_state = contiguous<4>(dS0, {B, H, K, V});
  double plain = 1e30, with_s0 = 1e30;
  for (int r = 0; r < 3; ++r) {
    plain = std::min(plain, linea_bench::time_ms([&] { linea::backward<Rule, read::identity, backend::cuda>(a, gr); }, 3, 3));
    with_s0 = std::min(with_s0, linea_bench::time_ms([&] { linea::backward<Rule, read::identity, backend::cuda>(a0, gr0); }, 3, 3));
  }
  std::printf("{\"rule\":\"%s\",\"B\":%ld,\"T\":%ld,\"bwd_ms\":%.4f,\"bwd_s0_ms\":%.4f}\n", name, long(B), long(T_), plain,
              with_s0);
  std::fflush(stdout);
  for (void* p : {static_cast<void*>(q), static_cast<void*>(k), static_cast<void*>(v), static_cast<void*>(g),
                  static_cast<void*>(beta), static_cast<void*>(d_o), static_cast<void*>(S0), static_cast<void*>(dq),
                  static_cast<void*>(dk), static_cast<void*>(dv), static_cast<void*>(dg), static_cast<void*>(dbeta),
                  static_cast<void*>(dS0)})
    linea::cuda_detail::check(cudaFree(p), "cudaFree");
}

}  // namespace

int main(int argc, char** argv) {
  const bool long_too = argc > 1 && !std::strcmp(argv[1], "--long");
  try {
    run<linea::gated_delta>("gated_delta", 8, 4096);
    run<linea::delta>("delta", 8, 4096);
    if (long_too) run<linea::gated_delta>("gated_delta", 1, 32768), run<linea::delta>("delta", 1, 32768);
  } catch (const std::exception& e) {
    std::printf("error: %s\n", e.what());
    return 1;
  }
  return 0;
}
