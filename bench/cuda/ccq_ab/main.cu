// bench/cuda/ccq_ab/main.cu — main's chunkwise CCQ read against the branch's in one process (bf16 inputs, fp32
// states):
//
//   check   every case on both sides from the same inputs; o, q̃, final state, C, m, z compared (relative error:
//           max |new − main| / max |main|), fails above 1e-2 (SPEC §5's bf16 tolerance; main's read is the one the
//           suite checks against the float64 reference)
//   small   the branch side alone on small cases (compute-sanitizer)
//   time    8×4096 H = HV = 16 K = V = 128, identity and CCQ (uniform, C, m, z written) per rule, main and branch
//           interleaved: CUDA events, 10 calls per repeat, 3 warm-up, median of 7; "mainc" is main's CCQ read with
//           ccq_chunk_kernel's grid as before fwd7-ccq-grid (chunks fastest, dim3(slots, HV)), "newc" the branch's
//           kernels on that grid
//   once    one call of each side's CCQ read for additive and gated_delta (ncu)
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "ccq_ab.hpp"

#define CK(x)                                                                       \
  do {                                                                              \
    cudaError_t e_ = (x);                                                           \
    if (e_ != cudaSuccess) {                                                        \
      std::fprintf(stderr, "%s: %s (%s:%d)\n", #x, cudaGetErrorString(e_), __FILE__, __LINE__); \
      std::exit(2);                                                                 \
    }                                                                               \
  } while (0)

namespace {

__device__ float hash_uniform(std::uint64_t i, std::uint32_t seed) {
  std::uint64_t x = i * 0x9E3779B97F4A7C15ull + seed * 0xBF58476D1CE4E5B9ull;
  x ^= x >> 31, x *= 0x94D049BB133111EBull, x ^= x >> 29;
  return static_cast<float>(x >> 40) / static_cast<float>(1ull << 24);
}
enum fill { normal, logsigmoid, logsigmoid_extreme, sigmoid, unit, positive };
__device__ float draw(std::int64_t i, std::uint32_t seed, int kind, float scale) {
  const float u1 = fmaxf(hash_uniform(i, seed), 1e-7f), u2 = hash_uniform(i, seed + 77);
  const float z = sqrtf(-2.f * logf(u1)) * cospif(2.f * u2);
  if (kind == logsigmoid) return -log1pf(expf(-z));
  if (kind == logsigmoid_extreme) return -log1pf(expf(-6.f * z));
  if (kind == sigmoid) return 1.f / (1.f + expf(-z));
  if (kind == unit) return z * scale;
  if (kind == positive) return 1.f + hash_uniform(i, seed + 5);
  return z;
}
__global__ void fill16(unsigned short* p, std::int64_t n, std::uint32_t seed, int kind, float scale) {
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n; i += std::int64_t(gridDim.x) * blockDim.x) {
    const float x = draw(i, seed, kind, scale);  // bf16, round to nearest even
    unsigned u;
    std::memcpy(&u, &x, 4);
    u += 0x7fffu + ((u >> 16) & 1u);
    p[i] = static_cast<unsigned short>(u >> 16);
  }
}
__global__ void fill32(float* p, std::int64_t n, std::uint32_t seed, int kind, float scale) {
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n; i += std::int64_t(gridDim.x) * blockDim.x)
    p[i] = draw(i, seed, kind, scale);
}
void* d16(std::size_t n, std::uint32_t seed, int kind, float scale = 1) {
  void* p;
  CK(cudaMalloc(&p, (n + 64) * 2));
  fill16<<<2048, 256>>>(static_cast<unsigned short*>(p), std::int64_t(n + 64), seed, kind, scale);
  return p;
}
float* d32(std::size_t n, std::uint32_t seed, int kind, float scale = 1) {
  float* p;
  CK(cudaMalloc(&p, (n + 64) * 4));
  fill32<<<2048, 256>>>(p, std::int64_t(n + 64), seed, kind, scale);
  return p;
}

using call_fn = void (*)(const ab_case&, const ab_buffers&, void*);
const char* rules[] = {"linear_attn", "gated_delta_rule", "gla", "kda"};

std::vector<float> back16(const void* p, std::size_t n) {
  std::vector<unsigned short> h(n);
  CK(cudaMemcpy(h.data(), p, n * 2, cudaMemcpyDeviceToHost));
  std::vector<float> f(n);
  for (std::size_t i = 0; i < n; ++i) {
    const unsigned u = unsigned(h[i]) << 16;
    std::memcpy(&f[i], &u, 4);
  }
  return f;
}
std::vector<float> back32(const float* p, std::size_t n) {
  std::vector<float> f(n);
  CK(cudaMemcpy(f.data(), p, n * 4, cudaMemcpyDeviceToHost));
  return f;
}
double rel(const std::vector<float>& x, const std::vector<float>& ref) {
  double d = 0, m = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (!std::isfinite(x[i]) || !std::isfinite(ref[i])) return std::isfinite(x[i]) == std::isfinite(ref[i]) ? 0 : 1e30;
    d = std::max(d, double(std::fabs(x[i] - ref[i]))), m = std::max(m, double(std::fabs(ref[i])));
  }
  return m > 0 ? d / m : d;
}

struct outputs {
  std::vector<float> o, qt, state, C, m, z;
};
outputs run_side(call_fn f, const ab_case& c, const ab_buffers& x) {
  const std::size_t N = c.cu ? c.ncu - 1 : c.B, tok = c.B * c.T;
  CK(cudaMemset(x.o, 0, tok * c.HV * c.V * 2));
  CK(cudaMemset(x.qt, 0, tok * c.HV * c.K * 2));
  f(c, x, nullptr);
  CK(cudaDeviceSynchronize());
  outputs r;
  r.o = back16(x.o, tok * c.HV * c.V);
  if (c.q_tilde) r.qt = back16(x.qt, tok * c.HV * c.K);
  r.state = back32(x.state, N * c.HV * c.K * c.V);
  if (c.read) r.C = back32(x.C, N * c.HV * c.K * c.K), r.m = back32(x.m, N * c.HV * c.K), r.z = back32(x.z, N * c.HV);
  return r;
}

std::vector<ab_case> check_cases() {
  static const std::int64_t packed[] = {0, 37, 37, 167, 231, 1231};  // {37, 0, 130, 64, 1000}
  static const std::int64_t packed2[] = {0, 1, 65, 200, 200, 4096};
  std::vector<ab_case> v;
  for (int rule = 0; rule < 4; ++rule) {
    v.push_back({"8x4096 uniform q_tilde", rule, 1, 8, 4096, 16, 16, 128, 128, nullptr, 0, false, false, false, true});
    v.push_back({"gva decayed initial l2", rule, 2, 2, 150, 2, 4, 48, 40, nullptr, 0, true, false, true, true});
    v.push_back({"full decayed explicit c_t", rule, 2, 1, 200, 1, 2, 128, 128, nullptr, 0, false, true, false, true});
    v.push_back({"packed decayed initial", rule, 2, 1, 1231, 1, 2, 32, 64, packed, 6, false, false, true, true});
    v.push_back({"packed gva uniform l2", rule, 1, 1, 4096, 2, 8, 128, 64, packed2, 6, true, false, false, true});
    v.push_back({"extreme uniform", rule, 1, 1, 160, 2, 2, 64, 32, nullptr, 0, false, false, false, true, true});
    v.push_back({"extreme decayed initial", rule, 2, 1, 160, 2, 2, 64, 32, nullptr, 0, false, false, true, true, true});
    v.push_back({"unaligned rows gva decayed l2 K=72", rule, 2, 3, 300, 1, 3, 72, 56, nullptr, 0, true, false, true, true,
                 false, 1});
    v.push_back({"unaligned rows gva uniform K=128", rule, 1, 2, 257, 2, 4, 128, 128, nullptr, 0, false, false, false, true,
                 false, 1});
    v.push_back({"K=8 decayed", rule, 2, 2, 130, 2, 2, 8, 16, nullptr, 0, false, false, true, false});
  }
  return v;
}

double time_call(call_fn f, const ab_case& c, const ab_buffers& x) {
  for (int i = 0; i < 3; ++i) f(c, x, nullptr);
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  std::vector<double> t;
  for (int r = 0; r < 7; ++r) {
    CK(cudaEventRecord(e0));
    for (int i = 0; i < 10; ++i) f(c, x, nullptr);
    CK(cudaEventRecord(e1));
    CK(cudaEventSynchronize(e1));
    float ms = 0;
    CK(cudaEventElapsedTime(&ms, e0, e1));
    t.push_back(ms / 10);
  }
  CK(cudaEventDestroy(e0));
  CK(cudaEventDestroy(e1));
  std::sort(t.begin(), t.end());
  return t[3];
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "check";
  const std::size_t tok = (mode == "small" ? 4096 : 8 * 4096) + 64, HV = 16, D = 128;
  ab_buffers x{};
  x.q = d16(tok * HV * D, 1, normal), x.k = d16(tok * HV * D, 2, unit, 1.f / std::sqrt(128.f));
  x.v = d16(tok * HV * D, 3, normal), x.g = d16(tok * HV, 4, logsigmoid), x.gx = d16(tok * HV, 14, logsigmoid_extreme);
  x.gk = d16(tok * HV * D, 5, logsigmoid), x.gkx = d16(tok * HV * D, 15, logsigmoid_extreme);
  x.beta = d16(tok * HV, 6, sigmoid), x.lam = d16(tok * HV, 9, sigmoid), x.logd = d16(tok * HV, 10, logsigmoid);
  x.o = d16(tok * HV * D, 0, normal), x.qt = d16(tok * HV * D, 0, normal);
  const std::size_t rows = mode == "small" ? 8 : 64, S = rows * HV * D * D;  // state rows (sequences)
  x.state = d32(S, 0, normal), x.C = d32(S, 0, normal), x.m = d32(rows * HV * D, 0, normal);
  x.z = d32(rows * HV, 0, normal), x.C0 = d32(S, 21, unit, 0.05f), x.m0 = d32(rows * HV * D, 22, unit, 0.3f);
  x.z0 = d32(rows * HV, 23, positive);
  CK(cudaDeviceSynchronize());

  int failed = 0;
  if (mode == "check") {
    for (const ab_case& c : check_cases()) {
      const outputs a = run_side(ccq_ab_call_main, c, x), b = run_side(ccq_ab_call_new, c, x);
      double e[6] = {rel(b.o, a.o), c.q_tilde ? rel(b.qt, a.qt) : 0, rel(b.state, a.state), 0, 0, 0};
      if (c.read) e[3] = rel(b.C, a.C), e[4] = rel(b.m, a.m), e[5] = rel(b.z, a.z);
      const double worst = *std::max_element(e, e + 6);
      const bool ok = worst <= 1e-2;
      failed += !ok;
      std::printf("{\"kind\":\"check\",\"rule\":\"%s\",\"case\":\"%s\",\"o\":%.3g,\"q_tilde\":%.3g,\"state\":%.3g,"
                  "\"C\":%.3g,\"m\":%.3g,\"z\":%.3g,\"pass\":%s}\n",
                  rules[c.rule], c.name, e[0], e[1], e[2], e[3], e[4], e[5], ok ? "true" : "false");
      std::fflush(stdout);
    }
    std::printf("{\"kind\":\"check_summary\",\"failed\":%d}\n", failed);
  } else if (mode == "small") {
    static const std::int64_t packed[] = {0, 37, 37, 167, 231};
    for (int rule = 0; rule < 4; ++rule) {
      const ab_case cs[] = {
          {"small gva decayed initial l2", rule, 2, 2, 150, 2, 4, 48, 40, nullptr, 0, true, false, true, true},
          {"small packed uniform", rule, 1, 1, 231, 1, 2, 128, 64, packed, 5, false, false, false, true},
          {"small unaligned gva decayed", rule, 2, 1, 100, 1, 2, 72, 32, nullptr, 0, false, true, true, true, false, 1}};
      for (const ab_case& c : cs) {
        ccq_ab_call_new(c, x, nullptr);
        CK(cudaDeviceSynchronize());
      }
    }
    std::printf("small: done\n");
  } else if (mode == "time") {
    for (int rule = 0; rule < 4; ++rule) {
      ab_case id{"8x4096", rule, 0, 8, 4096, 16, 16, 128, 128};
      ab_case cq = id;
      cq.read = 1;
      // identity: main, branch; CCQ: mainc, main, new, newc, twice, interleaved
      const call_fn sides[] = {ccq_ab_call_mainc, ccq_ab_call_main, ccq_ab_call_new, ccq_ab_call_newc};
      const double id_main = time_call(ccq_ab_call_main, id, x), id_new = time_call(ccq_ab_call_new, id, x);
      double t[2][4];
      for (int round = 0; round < 2; ++round)
        for (int s = 0; s < 4; ++s) t[round][s] = time_call(sides[s], cq, x);
      double best[4];
      for (int s = 0; s < 4; ++s) best[s] = std::min(t[0][s], t[1][s]);
      std::printf("{\"kind\":\"ccq\",\"rule\":\"%s\",\"shape\":\"8x4096\",\"identity_ms_main\":%.4f,"
                  "\"identity_ms_new\":%.4f,\"ccq_ms_mainc\":[%.4f,%.4f],\"ccq_ms_main\":[%.4f,%.4f],"
                  "\"ccq_ms_new\":[%.4f,%.4f],\"ccq_ms_newc\":[%.4f,%.4f],\"ratio_mainc\":%.3f,\"ratio_main\":%.3f,"
                  "\"ratio_new\":%.3f,\"ratio_newc\":%.3f,\"speedup_vs_main\":%.3f}\n",
                  rules[rule], id_main, id_new, t[0][0], t[1][0], t[0][1], t[1][1], t[0][2], t[1][2], t[0][3], t[1][3],
                  best[0] / id_main, best[1] / id_main, best[2] / id_new, best[3] / id_new, best[1] / best[2]);
      std::fflush(stdout);
    }
  } else if (mode == "once") {
    for (int rule = 0; rule < 2; ++rule) {
      const ab_case cq{"8x4096", rule, 1, 8, 4096, 16, 16, 128, 128};
      for (call_fn f : {ccq_ab_call_mainc, ccq_ab_call_main, ccq_ab_call_new, ccq_ab_call_newc}) {
        f(cq, x, nullptr);  // one call: ncu flushes the caches before each kernel it measures
        CK(cudaDeviceSynchronize());
      }
    }
  }
  return failed ? 1 : 0;
}
