// whole_ab.cu — the library's chunkwise call (public API only), bf16 H = 16 K = V = 128, final state written, for the
// erasing rules: whole (segment_tokens = 0), automatic, pieces of 4096. Built once against main's include/ and once
// against comb15's, run alternately in one device call (the normal path must not regress; the cut calls' gain).
// One JSON line per (rule, shape, segment_tokens); median of 7 repeats of 5 back-to-back calls after warm-up.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <vector>

#include <linea/cuda.hpp>

using namespace linea;
using T = bf16;
constexpr index_t H = 16, K = 128, V = 128, N = 65536;

__global__ void fill(T* p, std::int64_t n, std::uint32_t seed, int kind) {
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n; i += std::int64_t(gridDim.x) * blockDim.x) {
    std::uint64_t x = std::uint64_t(i) * 0x9E3779B97F4A7C15ull + seed * 0xBF58476D1CE4E5B9ull;
    x ^= x >> 31, x *= 0x94D049BB133111EBull, x ^= x >> 29;
    const float u = float(x >> 40) / float(1u << 24), z = 2.f * u - 1.f;
    float y = z;
    if (kind == 1) y = -log1pf(expf(-3.f * z));           // log decay
    if (kind == 2) y = 1.f / (1.f + expf(-3.f * z));      // β, b
    if (kind == 3) y = z * 0.15f;                         // keys of norm ~1
    p[i] = cuda_detail::from_float<T>(y);
  }
}
T* random_bf16(std::size_t n, std::uint32_t seed, int kind) {
  T* p = nullptr;
  cudaMalloc(&p, n * sizeof(T));
  fill<<<2048, 256>>>(p, std::int64_t(n), seed, kind);
  return p;
}

template <class Rule>
void shapes(const char* name) {
  static T *q = random_bf16(N * H * K, 1, 0), *k = random_bf16(N * H * K, 2, 3), *v = random_bf16(N * H * V, 3, 0),
           *g = random_bf16(N * H, 4, 1), *gk = random_bf16(N * H * K, 5, 1), *beta = random_bf16(N * H, 6, 2),
           *b = random_bf16(N * H * K, 7, 2), *w = random_bf16(N * H * V, 8, 2), *o = random_bf16(N * H * V, 9, 0);
  static float* state = [] { float* s = nullptr; cudaMalloc(&s, 64 * H * K * V * sizeof(float)); return s; }();
  struct shape { const char* name; index_t B, T_; bool varlen; };
  std::vector<std::int64_t> cu{0, 32768};
  for (int i = 0; i < 63; ++i) cu.push_back(cu.back() + 512);
  for (const shape s : {shape{"1x32768", 1, 32768, false}, shape{"2x16384", 2, 16384, false},
                        shape{"32768+63x512", 1, cu.back(), true}, shape{"8x4096", 8, 4096, false}}) {
    arguments<T, float> a;
    a.q = contiguous<4>(static_cast<const T*>(q), {s.B, s.T_, H, K});
    a.k = contiguous<4>(static_cast<const T*>(k), {s.B, s.T_, H, K});
    a.v = contiguous<4>(static_cast<const T*>(v), {s.B, s.T_, H, V});
    if constexpr (reads(Rule::inputs, input::g)) a.g = contiguous<3>(static_cast<const T*>(g), {s.B, s.T_, H});
    if constexpr (reads(Rule::inputs, input::gk)) a.gk = contiguous<4>(static_cast<const T*>(gk), {s.B, s.T_, H, K});
    if constexpr (reads(Rule::inputs, input::beta)) a.beta = contiguous<3>(static_cast<const T*>(beta), {s.B, s.T_, H});
    if constexpr (reads(Rule::inputs, input::b | input::w)) {
      a.b = contiguous<4>(static_cast<const T*>(b), {s.B, s.T_, H, K});
      a.w = contiguous<4>(static_cast<const T*>(w), {s.B, s.T_, H, V});
    }
    a.o = contiguous<4>(o, {s.B, s.T_, H, V});
    a.final_state = contiguous<4>(state, {s.varlen ? 64 : s.B, H, K, V});
    if (s.varlen) a.cu_seqlens = cu;
    for (const std::int64_t piece : {std::int64_t(0), std::int64_t(-1), std::int64_t(4096)}) {
      const cuda::launch l{.segment_tokens = piece};
      auto f = [&] { linea::chunkwise<Rule, read::identity, backend::cuda>(a, l); };
      for (int i = 0; i < 3; ++i) f();
      cudaEvent_t e0, e1;
      cudaEventCreate(&e0), cudaEventCreate(&e1);
      std::vector<float> t;
      for (int r = 0; r < 7; ++r) {
        cudaEventRecord(e0);
        for (int i = 0; i < 5; ++i) f();
        cudaEventRecord(e1);
        cudaEventSynchronize(e1);
        float ms = 0;
        cudaEventElapsedTime(&ms, e0, e1);
        t.push_back(ms / 5);
      }
      std::sort(t.begin(), t.end());
      std::printf("{\"tree\":\"%s\",\"rule\":\"%s\",\"shape\":\"%s\",\"segment_tokens\":%ld,\"ms\":%.4f,\"best_ms\":%.4f}\n",
                  TREE, name, s.name, long(piece), t[3], t[0]);
      std::fflush(stdout);
      cudaEventDestroy(e0), cudaEventDestroy(e1);
    }
  }
  if (cudaDeviceSynchronize() != cudaSuccess || cudaGetLastError() != cudaSuccess) std::printf("{\"error\":\"%s\"}\n", name);
}

int main() {
  shapes<gated_delta>("gated_delta");
  shapes<delta>("delta");
  shapes<kda>("kda");
  shapes<gdn2>("gdn2");
  return 0;
}
