// bench/cuda/decode_ab.cu — issue #13's decode step: main a8e5b3d's decode kernel (decode_ab_v0.hpp, verbatim) and the
// library's (whole tiles: the state's loads and stores back to back) in the batch's order and with the pool walk
// (decode_order.hpp, the library's choice), in one process (not built by CMake; for a short device call):
//   nvcc -std=c++20 -O3 -DNDEBUG -gencode=arch=compute_90a,code=sm_90a --expt-relaxed-constexpr -Iinclude \
//        bench/cuda/decode_ab.cu -o decode_ab
// Decode step B = 256, H = HV = 16, K = V = 128, bf16 inputs, fp32 pool updated in place (bench_cuda.cu's shape and
// timing: median of 9 × 20 back-to-back launches after warm-up, two input sets alternating), every rule, four state
// modes: row b = state b (no indices), device indices in order (b → b), permuted (b → 37·b mod 256, the issue's case),
// a pool twice the batch (N = 512, b → 37·b mod 512: the pool walk's largest range) and four times (N = 1024,
// b → 149·b mod 1024: the batch's states spread over 1 GB; the pool walk keeps the batch's order). Three rounds
// interleaved, the copy bandwidth (cudaMemcpy of 2 GiB) measured at the start of each. One JSON object per line.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

#include <linea/cuda.hpp>

#include "ab_common.hpp"
#include "decode_ab_v0.hpp"

using namespace linea;
using T = bf16;
#define CK(x) linea::cuda_detail::check((x), #x)

namespace {

namespace cd = linea::cuda_detail;

// kind 0: N(0, 1) scaled by `scale`; 1: log-sigmoid of N(0, 1) (gates); 2: sigmoid (β, erase / write gates)
__global__ void fill_kernel(T* p, std::int64_t n, std::uint32_t seed, int kind, float scale) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const float z = linea_bench::hash_normal(i, seed);  // N(0, 1)
    float x = z * scale;
    if (kind == 1) x = -log1pf(expf(-z));
    if (kind == 2) x = 1.f / (1.f + expf(-z));
    p[i] = cd::from_float<T>(x);
  }
}
template <class X>
X* dalloc(std::size_t n) {
  X* p = nullptr;
  CK(cudaMalloc(&p, n * sizeof(X)));
  return p;
}
T* random_tensor(std::size_t n, std::uint32_t seed, int kind, float scale = 1) {
  T* p = dalloc<T>(n);
  fill_kernel<<<1024, 256>>>(p, static_cast<std::int64_t>(n), seed, kind, scale);
  CK(cudaGetLastError());
  return p;
}

template <class F>
double time_ms(F&& f, int calls = 20, int repeats = 9, int warmup = 5) {  // f(i): i the call's index
  return linea_bench::time_calls_ms(f, calls, repeats, warmup);
}
double copy_tbps() {
  const std::size_t n = std::size_t(1) << 31;
  char* a = dalloc<char>(n);
  char* b = dalloc<char>(n);
  CK(cudaMemset(a, 1, n));
  const double ms = time_ms([&](int) { CK(cudaMemcpyAsync(b, a, n, cudaMemcpyDeviceToDevice)); }, 5, 7, 2);
  CK(cudaFree(a));
  CK(cudaFree(b));
  return 2.0 * n / (ms * 1e-3) / 1e12;
}

constexpr index_t B = 256, H = 16, K = 128, V = 128, big_pool = 4 * B;

struct inputs {
  T *q, *k, *v, *g, *gk, *beta, *b, *w;
};
inputs make_inputs(std::uint32_t seed) {
  const std::size_t nk = B * H * K, nv = B * H * V, ns = B * H;
  // keys scaled to norm ~1 (the delta rules' keys are unit vectors in practice; the state stays bounded in place)
  return {random_tensor(nk, seed + 1, 0), random_tensor(nk, seed + 2, 0, 1.f / std::sqrt(float(K))),
          random_tensor(nv, seed + 3, 0), random_tensor(ns, seed + 4, 1),
          random_tensor(nk, seed + 5, 1), random_tensor(ns, seed + 6, 2),
          random_tensor(nk, seed + 7, 2), random_tensor(nv, seed + 8, 2)};
}

enum class mode { none, in_order, permuted, pool2, big_pool };
const char* mode_name(mode m) {
  const char* names[] = {"none", "device_in_order", "device", "device_pool2", "device_pool4"};
  return names[static_cast<int>(m)];
}

struct pool {
  float* state;         // big_pool · H · K · V floats (the first B rows serve the other modes)
  T* o;                 // [B, 1, H, V]
  std::int32_t* idx[5]; // per mode (none: null)
};

template <class Rule>
cd::kernel_args<T> make_kargs(const inputs& x, const pool& p, mode m) {
  const index_t N = m == mode::big_pool ? big_pool : m == mode::pool2 ? 2 * B : B;
  arguments<T, float> a;
  a.q = contiguous<4>(static_cast<const T*>(x.q), {B, 1, H, K});
  a.k = contiguous<4>(static_cast<const T*>(x.k), {B, 1, H, K});
  a.v = contiguous<4>(static_cast<const T*>(x.v), {B, 1, H, V});
  if constexpr (linea::reads(Rule::inputs, linea::input::g)) a.g = contiguous<3>(static_cast<const T*>(x.g), {B, 1, H});
  if constexpr (linea::reads(Rule::inputs, linea::input::gk)) a.gk = contiguous<4>(static_cast<const T*>(x.gk), {B, 1, H, K});
  if constexpr (linea::reads(Rule::inputs, linea::input::beta)) a.beta = contiguous<3>(static_cast<const T*>(x.beta), {B, 1, H});
  if constexpr (linea::reads(Rule::inputs, linea::input::b | linea::input::w)) {
    a.b = contiguous<4>(static_cast<const T*>(x.b), {B, 1, H, K});
    a.w = contiguous<4>(static_cast<const T*>(x.w), {B, 1, H, V});
  }
  a.o = contiguous<4>(p.o, {B, 1, H, V});
  a.initial_state = contiguous<4>(static_cast<const float*>(p.state), {N, H, K, V});  // in place
  a.final_state = contiguous<4>(p.state, {N, H, K, V});
  problem pr;
  pr.B = B, pr.T = 1, pr.H = H, pr.HV = H, pr.K = K, pr.V = V, pr.N = N, pr.group = 1;
  pr.scale = 1.0 / std::sqrt(double(K));
  auto k = cd::make_kernel_args(a, pr);
  k.state_indices = p.idx[static_cast<int>(m)];
  return k;
}

template <class Rule, class Launch>
void run(const char* variant, const inputs* sets, const pool& p, mode m, double copy, Launch&& launch) {
  cd::kernel_args<T> k[2] = {make_kargs<Rule>(sets[0], p, m), make_kargs<Rule>(sets[1], p, m)};
  const double ms = time_ms([&](int i) { launch(k[i & 1]); });
  const double bytes = 2.0 * B * H * K * V * 4;
  std::printf("{\"kind\":\"decode_ab\",\"rule\":\"%s\",\"variant\":\"%s\",\"indices\":\"%s\",\"ms\":%.4f,"
              "\"copy_frac\":%.3f}\n",
              rule_name<Rule>::value, variant, mode_name(m), ms, bytes / (ms * 1e-3) / 1e12 / copy);
  std::fflush(stdout);
}

template <class Rule>
void all_variants(const inputs* sets, const pool& p, mode m, double copy) {
  using W = cd::decode_walk;
  const cd::exec x{};
  run<Rule>("main_v0", sets, p, m, copy, [&](const auto& k) {
    const dim3 grid(1, static_cast<unsigned>(H), static_cast<unsigned>(B));
    cd::decode_v0::decode_kernel<Rule, T, 128, 4, 4, false, 3><<<grid, 128>>>(k);
  });
  // (call 3 of bench/cuda/README.md's dec6 section named these "library" and "library_pool_walk")
  run<Rule>("batch_walk", sets, p, m, copy,
            [&](const auto& k) { cd::launch_decode_k<Rule, T, 128, 4, 4, false, 3, W::batch>(k, B, x); });
  run<Rule>("pool_walk", sets, p, m, copy,  // the library's choice
            [&](const auto& k) { cd::launch_decode_k<Rule, T, 128, 4, 4, false, 3, W::pool>(k, B, x); });
}

}  // namespace

int main() {
  try {
    const inputs sets[2] = {make_inputs(300), make_inputs(400)};
    pool p{};
    p.state = dalloc<float>(std::size_t(big_pool) * H * K * V);
    CK(cudaMemset(p.state, 0, std::size_t(big_pool) * H * K * V * sizeof(float)));
    p.o = dalloc<T>(B * H * V);
    for (mode m : {mode::in_order, mode::permuted, mode::pool2, mode::big_pool}) {
      std::vector<std::int32_t> idx(B);
      for (index_t b = 0; b < B; ++b)
        idx[b] = static_cast<std::int32_t>(m == mode::in_order   ? b
                                           : m == mode::permuted ? b * 37 % B
                                           : m == mode::pool2    ? b * 37 % (2 * B)
                                                                 : b * 149 % big_pool);
      p.idx[static_cast<int>(m)] = dalloc<std::int32_t>(B);
      CK(cudaMemcpy(p.idx[static_cast<int>(m)], idx.data(), B * sizeof(std::int32_t), cudaMemcpyHostToDevice));
    }
    CK(cudaDeviceSynchronize());
    for (int round = 0; round < 3; ++round) {
      const double copy = copy_tbps();
      std::printf("{\"kind\":\"round\",\"round\":%d,\"copy_tbps\":%.3f}\n", round, copy);
      for (mode m : {mode::none, mode::in_order, mode::permuted, mode::pool2, mode::big_pool})
        all_rules::for_each([&]<class Rule>() { all_variants<Rule>(sets, p, m, copy); });
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "decode_ab: %s\n", e.what());
    return 1;
  }
  return 0;
}
