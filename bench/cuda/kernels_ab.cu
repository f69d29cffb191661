// bench/cuda/kernels_ab.cu — A/B timing of the chunk kernels and the decode step between two trees, kernels launched
// directly (cuda_detail::launch_chunk / launch_step: no instance library, a minute or two of nvcc): build it once
// against each tree's include/ and run both binaries in one device call (not built by CMake or build_nvcc.sh).
//
//   nvcc -std=c++20 -O3 -DNDEBUG -gencode=arch=compute_90a,code=sm_90a --expt-relaxed-constexpr \
//        -I<tree>/include -I<eigen3> bench/cuda/kernels_ab.cu -o ab_<tree>
//
// Chunkwise: B = 8, T = 4096, H = 16, K = V = 128, bf16, qk_l2norm in the kernel (so that the synthetic inputs stay
// bounded); decode: B = 256 rows through a permuted pool (device-side state_indices), fraction of the copy bandwidth
// measured in the same process. Median of 7 × 10 calls after 3 warm-up calls, CUDA events.
#include <linea/cuda.hpp>
#include <algorithm>
#include <cstdio>
#include <vector>
using namespace linea;
namespace cd = linea::cuda_detail;
#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { std::printf("CUDA %s\n", cudaGetErrorString(e_)); std::exit(1); } } while (0)

__global__ void fill(bf16* p, std::size_t n, float lo, float hi, unsigned seed) {
  for (std::size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += std::size_t(gridDim.x) * blockDim.x) {
    unsigned h = unsigned(i) * 2654435761u ^ seed; h ^= h >> 13; h *= 0x5bd1e995u; h ^= h >> 15;
    const float u = (h & 0xffffff) / 16777216.f;
    p[i] = cd::from_float<bf16>(lo + (hi - lo) * u);
  }
}
bf16* make(std::size_t n, float lo, float hi, unsigned seed) {
  bf16* p; CK(cudaMalloc(&p, n * sizeof(bf16))); fill<<<1024, 256>>>(p, n, lo, hi, seed); CK(cudaGetLastError()); return p;
}
template <class F>
double time_ms(F&& f) {
  for (int i = 0; i < 3; ++i) f();
  cudaEvent_t a, b; CK(cudaEventCreate(&a)); CK(cudaEventCreate(&b));
  std::vector<double> t;
  for (int r = 0; r < 7; ++r) {
    CK(cudaEventRecord(a)); for (int i = 0; i < 10; ++i) f(); CK(cudaEventRecord(b)); CK(cudaEventSynchronize(b));
    float ms; CK(cudaEventElapsedTime(&ms, a, b)); t.push_back(ms / 10);
  }
  std::sort(t.begin(), t.end()); return t[3];
}
template <class Rule>
arguments<bf16, float> args(index_t B, index_t T, index_t H, index_t K, index_t V, bf16* o, float* st) {
  const std::size_t nk = std::size_t(B) * T * H * K, nv = std::size_t(B) * T * H * V, ns = std::size_t(B) * T * H;
  arguments<bf16, float> a;
  a.q = contiguous<4>(static_cast<const bf16*>(make(nk, -1, 1, 1)), {B, T, H, K});
  a.k = contiguous<4>(static_cast<const bf16*>(make(nk, -1, 1, 2)), {B, T, H, K});
  a.v = contiguous<4>(static_cast<const bf16*>(make(nv, -1, 1, 3)), {B, T, H, V});
  if constexpr (reads(Rule::inputs, input::g)) a.g = contiguous<3>(static_cast<const bf16*>(make(ns, -0.1f, -0.01f, 4)), {B, T, H});
  if constexpr (reads(Rule::inputs, input::gk)) a.gk = contiguous<4>(static_cast<const bf16*>(make(nk, -0.1f, -0.01f, 5)), {B, T, H, K});
  if constexpr (reads(Rule::inputs, input::beta)) a.beta = contiguous<3>(static_cast<const bf16*>(make(ns, 0.2f, 0.9f, 6)), {B, T, H});
  if constexpr (reads(Rule::inputs, input::b | input::w)) {
    a.b = contiguous<4>(static_cast<const bf16*>(make(nk, 0.1f, 0.9f, 7)), {B, T, H, K});
    a.w = contiguous<4>(static_cast<const bf16*>(make(nv, 0.1f, 0.9f, 8)), {B, T, H, V});
  }
  a.o = contiguous<4>(o, {B, T, H, V});
  a.final_state = contiguous<4>(st, {B, H, K, V});
  a.qk_l2norm = true;
  return a;
}
problem prob(index_t B, index_t T, index_t H, index_t K, index_t V) {
  problem p; p.B = B, p.T = T, p.H = H, p.HV = H, p.K = K, p.V = V, p.N = B, p.group = 1, p.scale = 1.0 / 11.3137; return p;
}
template <class Rule>
void time_chunk(const char* name) {
  const index_t B = 8, T = 4096, H = 16, K = 128, V = 128;
  bf16* o; float* st; CK(cudaMalloc(&o, sizeof(bf16) * B * T * H * V)); CK(cudaMalloc(&st, sizeof(float) * B * H * K * V));
  auto a = args<Rule>(B, T, H, K, V, o, st);
  const auto k = cd::make_kernel_args(a, prob(B, T, H, K, V));
  const cd::exec x{};
  const double ms = time_ms([&] { cd::launch_chunk<Rule, bf16, cd::pass::main>(k, B, x); });
  std::printf("{\"kind\":\"chunk\",\"rule\":\"%s\",\"ms\":%.4f}\n", name, ms);
}
template <class Rule>
void time_decode(const char* name, double copy) {
  const index_t B = 256, H = 16, K = 128, V = 128;
  bf16* o; float* pool; CK(cudaMalloc(&o, sizeof(bf16) * B * H * V)); CK(cudaMalloc(&pool, sizeof(float) * B * H * K * V));
  CK(cudaMemset(pool, 0, sizeof(float) * B * H * K * V));
  auto a = args<Rule>(B, 1, H, K, V, o, pool);
  a.initial_state = contiguous<4>(static_cast<const float*>(pool), {B, H, K, V});
  auto k = cd::make_kernel_args(a, prob(B, 1, H, K, V));
  std::vector<std::int32_t> idx(B); for (index_t b = 0; b < B; ++b) idx[b] = std::int32_t((b * 37) % B);
  std::int32_t* d; CK(cudaMalloc(&d, B * 4)); CK(cudaMemcpy(d, idx.data(), B * 4, cudaMemcpyHostToDevice));
  k.state_indices = d;
  const cd::exec x{};
  const double ms = time_ms([&] { cd::launch_step<Rule, bf16, cd::pass::main>(k, B, x); });
  const double bytes = 2.0 * B * H * K * V * 4;
  std::printf("{\"kind\":\"decode_permuted\",\"rule\":\"%s\",\"ms\":%.4f,\"copy_frac\":%.3f}\n", name, ms, bytes / (ms * 1e-3) / 1e12 / copy);
}
int main() {
  const std::size_t n = std::size_t(1) << 31; char *s, *t; CK(cudaMalloc(&s, n)); CK(cudaMalloc(&t, n));
  const double cms = time_ms([&] { CK(cudaMemcpyAsync(t, s, n, cudaMemcpyDeviceToDevice)); });
  const double copy = 2.0 * n / (cms * 1e-3) / 1e12; CK(cudaFree(s)); CK(cudaFree(t));
  std::printf("{\"kind\":\"copy\",\"tbps\":%.3f}\n", copy);
  for (int rep = 0; rep < 2; ++rep) {
    time_decode<additive>("linear_attn", copy); time_decode<simple_gla>("simple_gla", copy); time_decode<gla>("gla", copy);
    time_decode<delta>("delta_rule", copy); time_decode<gated_delta>("gated_delta_rule", copy); time_decode<kda>("kda", copy);
    time_decode<gdn2>("gdn2", copy);
    time_chunk<additive>("linear_attn"); time_chunk<simple_gla>("simple_gla"); time_chunk<delta>("delta_rule");
    time_chunk<gated_delta>("gated_delta_rule"); time_chunk<gla>("gla"); time_chunk<kda>("kda");
  }
  CK(cudaDeviceSynchronize());
  return 0;
}
