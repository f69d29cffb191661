// bench/cuda/perkey_ab.cu — gla's chunk kernel on its own (written for perkey_chunk_kernel.hpp; since 2026-12-02 the
// library's gla path is perkey_delta_kernel.hpp, so it now checks and times that one): the CUDA tests' gla
// chunkwise cases with 16-bit inputs against the float64 reference, and (-ns -tc=timing) its time against the general
// kernel's in the same process, 8×4096, H = 16, K = 128, V = 128 and 64, with and without qk_l2norm. It instantiates
// gla alone, so it builds in ~2 minutes on one core and runs in seconds (for a short device call; not built by CMake):
//   nvcc -std=c++20 -O3 -DNDEBUG -gencode=arch=compute_90a,code=sm_90a --expt-relaxed-constexpr \
//        -Iinclude -Itests -I<eigen3> bench/cuda/perkey_ab.cu -o perkey_ab
//   ./perkey_ab && ./perkey_ab -ns -tc=timing && compute-sanitizer --tool memcheck ./perkey_ab
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdio>
#include <limits>
#include <random>

#include "backend/cuda/consistency.hpp"

namespace linea::testing {

TEST_CASE("gla chunkwise 16-bit (per-key kernel) vs float64 reference") {
  const case_shape gva{.B = 2, .T = 150, .H = 2, .HV = 4, .K = 48, .V = 40, .initial_state = true, .seed = 11};
  const case_shape full{.B = 1, .T = 200, .H = 1, .HV = 2, .K = 128, .V = 128, .initial_state = true, .seed = 12};
  const case_shape varlen{.H = 1, .HV = 2, .K = 32, .V = 64, .seqlens = {37, 0, 130, 64}, .initial_state = true,
                          .head_first = true, .seed = 13};
  const case_shape extreme{.B = 1, .T = 160, .H = 2, .HV = 2, .K = 64, .V = 32, .gates = gate_range::extreme,
                           .beta_max = 2, .seed = 14};
  const case_shape aligned{.B = 2, .T = 150, .H = 1, .HV = 2, .K = 72, .V = 104, .initial_state = true, .seed = 23};
  const case_shape small{.B = 1, .T = 70, .H = 1, .HV = 2, .K = 32, .V = 24, .initial_state = true, .seed = 21};
  check_against_reference<gla, read::identity, cuda_chunkwise, bf16>(gva);
  check_against_reference<gla, read::identity, cuda_chunkwise, fp16>(gva);
  check_against_reference<gla, read::identity, cuda_chunkwise, bf16>(full);
  check_against_reference<gla, read::identity, cuda_chunkwise, bf16>(varlen);
  check_against_reference<gla, read::identity, cuda_chunkwise, bf16>(extreme);
  check_against_reference<gla, read::identity, cuda_chunkwise, fp16>(extreme);
  check_against_reference<gla, read::identity, cuda_chunkwise, bf16>(aligned);
  check_against_reference<gla, read::identity, cuda_chunkwise, fp16>(aligned);
  check_against_reference<gla, read::identity, cuda_chunkwise, bf16>(small);
}

TEST_CASE("gla per-key kernel: gates of exactly 0") {
  const case_shape shape{.B = 2, .T = 130, .H = 1, .HV = 2, .K = 64, .V = 64, .initial_state = true, .seed = 3};
  auto c = random_case<gla, bf16>::make(shape);
  const bf16 neg_inf = bf16(-std::numeric_limits<float>::infinity());
  for (index_t b = 0; b < 2; ++b)
    for (index_t t : {0, 37, 63, 64, 100, 129})
      for (index_t hv = 0; hv < 2; ++hv)
        for (index_t i = 0; i < 64; ++i)
          if (t % 2 == 0 || i == 3) c.gk(b, t, hv, i) = neg_inf;
  auto ref = c.cast<double>();
  reference::recurrent<gla, read::identity>(ref.args());
  device_case<gla, bf16> d{c};
  chunkwise<gla, read::identity, backend::cuda>(d.args(c.args()));
  d.back();
  expect_close("o", c.o, ref.o, tolerance_for<bf16>(shape.T));
  expect_close("final state", c.ht, ref.ht, tolerance_for<bf16>(shape.T));
}

TEST_CASE("gla per-key kernel: in-kernel gates") {
  const case_shape shape{.B = 2, .T = 150, .H = 1, .HV = 2, .K = 64, .V = 64, .initial_state = true, .seed = 31};
  auto c = random_case<gla, bf16>::make(shape);
  std::mt19937 rng(5);
  std::normal_distribution<double> normal(0.0, 1.0);
  for (auto& x : c.gk.values()) x = bf16(normal(rng));
  tensor<float, 1> A({shape.HV}), bias({shape.HV * shape.K});
  for (auto& x : A.values()) x = float(0.5 * normal(rng));
  for (auto& x : bias.values()) x = float(0.5 * normal(rng));
  for (const bool lower : {false, true}) {
    auto ref = c.cast<double>();
    auto ra = ref.args();
    ra.gate.A_log = contiguous<1>(static_cast<const float*>(A.data()), {shape.HV});
    ra.gate.dt_bias = contiguous<1>(static_cast<const float*>(bias.data()), {shape.HV * shape.K});
    if (lower) ra.gate.lower_bound = -5.0f;
    reference::recurrent<gla, read::identity>(ra);
    device_case<gla, bf16> d{c};
    auto a = d.args(c.args());
    a.gate.A_log = contiguous<1>(static_cast<const float*>(d.pool.copy(A)), {shape.HV});
    a.gate.dt_bias = contiguous<1>(static_cast<const float*>(d.pool.copy(bias)), {shape.HV * shape.K});
    if (lower) a.gate.lower_bound = -5.0f;
    chunkwise<gla, read::identity, backend::cuda>(a);
    d.back();
    expect_close("o", c.o, ref.o, tolerance_for<bf16>(shape.T));
    expect_close("final state", c.ht, ref.ht, tolerance_for<bf16>(shape.T));
  }
}

TEST_CASE("gla per-key kernel: qk_l2norm") {
  const case_shape shape{.B = 2, .T = 150, .H = 1, .HV = 2, .K = 64, .V = 64, .initial_state = true, .seed = 51};
  auto c = random_case<gla, bf16>::make(shape);
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> unit(0.5, 2.0);
  for (auto& x : c.q.values()) x = bf16(double(x) * unit(rng));
  for (auto& x : c.k.values()) x = bf16(double(x) * unit(rng));
  auto ref = c.cast<double>();
  auto ra = ref.args();
  ra.qk_l2norm = true;
  reference::recurrent<gla, read::identity>(ra);
  device_case<gla, bf16> d{c};
  auto a = d.args(c.args());
  a.qk_l2norm = true;
  chunkwise<gla, read::identity, backend::cuda>(a);
  d.back();
  expect_close("o", c.o, ref.o, tolerance_for<bf16>(shape.T));
  expect_close("final state", c.ht, ref.ht, tolerance_for<bf16>(shape.T));
  expect_close("residual", c.residual, ref.residual, tolerance_for<bf16>(shape.T));
}

// ---- timings: 8×4096, H = 16, K = 128, bf16; the per-key kernel (through linea::chunkwise) and the general kernel
__global__ void fill(bf16* p, std::int64_t n, std::uint32_t seed, int kind) {
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n; i += std::int64_t(gridDim.x) * blockDim.x) {
    std::uint64_t x = i * 0x9E3779B97F4A7C15ull + seed * 0xBF58476D1CE4E5B9ull;
    x ^= x >> 31, x *= 0x94D049BB133111EBull, x ^= x >> 29;
    const float u = float(x >> 40) / float(1ull << 24);
    float y = 2.f * u - 1.f;
    if (kind == 1) y = -logf(1.f + expf(-4.f * y));  // a log-sigmoid gate
    p[i] = cuda_detail::from_float<bf16>(y);
  }
}
void launch_general(const cuda_detail::kernel_args<bf16>& k, index_t rows) {
  using namespace cuda_detail;
  using E = __nv_bfloat16;
  constexpr int BV = chunk_bv<gla, bf16, E, pass::main>;
  constexpr std::size_t bytes = chunk_shape<gla, bf16, E, pass::main, BV>::bytes;
  constexpr auto kernel = chunk_kernel<gla, bf16, E, pass::main, BV>;
  allow_dynamic_shared<kernel>(bytes, 0);
  kernel<<<dim3(unsigned(k.HV), unsigned(rows), unsigned((k.V + BV - 1) / BV)), chunk_threads, bytes>>>(k);
  check_launch("chunk_kernel");
}
template <class F>
double time_ms(F&& f) {
  for (int i = 0; i < 3; ++i) f();
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0), cudaEventCreate(&e1);
  std::vector<double> t;
  for (int r = 0; r < 7; ++r) {
    cudaEventRecord(e0);
    for (int i = 0; i < 10; ++i) f();
    cudaEventRecord(e1);
    cudaEventSynchronize(e1);
    float ms = 0;
    cudaEventElapsedTime(&ms, e0, e1);
    t.push_back(ms / 10);
  }
  std::sort(t.begin(), t.end());
  return t[3];
}
TEST_CASE("timing" * doctest::skip(true)) {
  const index_t B = 8, T = 4096, H = 16, K = 128;
  const std::size_t nk = B * T * H * K;
  bf16 *q, *k, *v, *gk, *o;
  float* S;
  cuda_ok(cudaMalloc(&q, nk * 2)), cuda_ok(cudaMalloc(&k, nk * 2)), cuda_ok(cudaMalloc(&v, nk * 2));
  cuda_ok(cudaMalloc(&gk, nk * 2)), cuda_ok(cudaMalloc(&o, nk * 2)), cuda_ok(cudaMalloc(&S, B * H * K * K * 4));
  fill<<<2048, 256>>>(q, nk, 1, 0), fill<<<2048, 256>>>(k, nk, 2, 0), fill<<<2048, 256>>>(v, nk, 3, 0);
  fill<<<2048, 256>>>(gk, nk, 4, 1);
  cuda_ok(cudaDeviceSynchronize());
  for (const index_t V : {index_t(128), index_t(64)})
    for (const bool l2 : {false, true}) {
      arguments<bf16, float> a;
      a.q = contiguous<4>(static_cast<const bf16*>(q), {B, T, H, K});
      a.k = contiguous<4>(static_cast<const bf16*>(k), {B, T, H, K});
      a.v = strided<4>(static_cast<const bf16*>(v), {B, T, H, V}, {T * H * 128, H * 128, 128, 1});
      a.gk = contiguous<4>(static_cast<const bf16*>(gk), {B, T, H, K});
      a.o = strided<4>(o, {B, T, H, V}, {T * H * 128, H * 128, 128, 1});
      a.final_state = contiguous<4>(S, {B, H, K, V});
      a.qk_l2norm = l2;
      problem p;
      p.B = B, p.T = T, p.H = H, p.HV = H, p.K = K, p.V = V, p.N = B, p.group = 1, p.scale = 1.0 / std::sqrt(double(K));
      const auto ka = cuda_detail::make_kernel_args(a, p);
      const double perkey = time_ms([&] { chunkwise<gla, read::identity, backend::cuda>(a); });
      const double general = time_ms([&] { launch_general(ka, B); });
      std::printf("{\"kind\":\"gla_kernels\",\"V\":%ld,\"qk_l2norm\":%s,\"perkey_ms\":%.4f,\"general_ms\":%.4f}\n", long(V),
                  l2 ? "true" : "false", perkey, general);
    }
  cuda_ok(cudaDeviceSynchronize());
}

}  // namespace linea::testing
