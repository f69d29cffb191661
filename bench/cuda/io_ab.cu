// bench/cuda/io_ab.cu — the CUDA backward's per-token phases, the library's kernels against main 861c7ef's
// (io_ab_v0.hpp), A/B in one process (not built by CMake; for a short device call):
//   phase 0  inputs_kernel          the caller's inputs as the float32 workspace (q̂, k̂ after the L2 norm, v, d_o,
//                                   log α, gates)
//   phase 5  input_adjoint_kernel   the workspace gradients as the caller's dq, dk, dg / dgk, dβ (+ dA_log, ddt_bias)
// For each case: the relative distance ‖new − old‖ / ‖old‖ of every tensor either phase writes (phase 5 reads random
// workspace gradients), then, for the timed cases, each phase both ways (CUDA events, interleaved, best of medians).
//   nvcc -std=c++20 -O3 -DNDEBUG -gencode=arch=compute_90a,code=sm_90a --expt-relaxed-constexpr -Iinclude \
//        bench/cuda/io_ab.cu -o io_ab
//   io_ab            8×4096 and 1×32768 timed (bf16, H = 16, K = V = 128, L2 norm in kernel; gated_delta, kda), then
//                    the odd cases
//   io_ab --check    the odd cases only (K = 37, V = 45 or K = 64, V = 96; GVA; an inner stride of 2, head-first
//                    rows; in-kernel gates; float32 and bf16): distances, for a sanitizer
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include <linea/cuda.hpp>

#include "ab_common.hpp"
#include "io_ab_v0.hpp"

using namespace linea;
#define CK(x) linea::cuda_detail::check((x), #x)
namespace bwd = linea::cuda_detail::bwd;

namespace {

using linea_bench::dalloc;
using linea_bench::hash_uniform;
using linea_bench::time_ms;

template <class X>
__global__ void fill_kernel(X* p, std::int64_t n, std::uint32_t seed, float lo, float hi) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
    p[i] = linea::cuda_detail::from_float<X>(lo + (hi - lo) * hash_uniform(i, seed));
}
template <class X>
X* random(std::size_t n, std::uint32_t seed, float lo = -2.f, float hi = 2.f) {
  X* p = dalloc<X>(n);
  fill_kernel<<<1024, 256>>>(p, std::int64_t(n), seed, lo, hi);
  return p;
}

template <class X>
__global__ void widen(const X* p, double* out, std::int64_t n) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
    out[i] = static_cast<double>(static_cast<float>(p[i]));
}
__global__ void widen_d(const double* p, double* out, std::int64_t n) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
    out[i] = p[i];
}
// ‖a − b‖ / ‖b‖ over n elements (host copies; INFINITY if a holds a non-finite value b does not)
template <class X>
double distance(const X* a, const X* b, std::size_t n) {
  double *da = dalloc<double>(n), *db = dalloc<double>(n);
  if constexpr (std::is_same_v<X, double>) widen_d<<<1024, 256>>>(a, da, n), widen_d<<<1024, 256>>>(b, db, n);
  else widen<<<1024, 256>>>(a, da, n), widen<<<1024, 256>>>(b, db, n);
  std::vector<double> ha(n), hb(n);
  CK(cudaMemcpy(ha.data(), da, n * sizeof(double), cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(hb.data(), db, n * sizeof(double), cudaMemcpyDeviceToHost));
  CK(cudaFree(da)), CK(cudaFree(db));
  double x = 0, y = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (std::isfinite(ha[i]) != std::isfinite(hb[i])) return INFINITY;
    if (!std::isfinite(hb[i])) continue;
    x += (ha[i] - hb[i]) * (ha[i] - hb[i]), y += hb[i] * hb[i];
  }
  return y > 0 ? std::sqrt(x / y) : std::sqrt(x);
}

struct shape {
  index_t B, T, H, HV, K, V;
  bool odd_strides, gates, timed;
};

// A [B, T, R, D] input: contiguous, or (odd strides) head-first [B, R, T, D] with an inner stride of `inner`.
template <class X>
view<const X, 4> input(std::size_t& seed, const shape& s, index_t R, index_t D, int inner, float lo = -2.f, float hi = 2.f) {
  const std::size_t n = std::size_t(s.B * s.T * R * D) * std::size_t(inner);
  const X* p = random<X>(n, std::uint32_t(++seed), lo, hi);
  if (!s.odd_strides) return contiguous<4>(p, {s.B, s.T, R, D});
  return strided<4>(p, {s.B, s.T, R, D}, {R * s.T * D * inner, D * inner, s.T * D * inner, inner});
}

template <class Rule, class X>
void ab(const shape& s) {
  constexpr bool per_key = Rule::decay::kind == decay_kind::per_key;
  std::size_t seed = 0;
  arguments<X, float> a;
  a.q = input<X>(seed, s, s.H, s.K, s.odd_strides ? 2 : 1);
  a.k = input<X>(seed, s, s.H, s.K, 1);
  a.v = input<X>(seed, s, s.HV, s.V, 1);
  a.qk_l2norm = true;
  const bool gates = s.gates && Rule::decay::kind != decay_kind::none;  // (in-kernel gates need a decay)
  const float glo = gates ? -3.f : -1.f, ghi = gates ? 3.f : 0.f;  // logits, or log decays
  const std::size_t ns = std::size_t(s.B * s.T * s.HV), nkv = ns * std::size_t(s.K);
  if constexpr (reads(Rule::inputs, input::g)) a.g = contiguous<3>(static_cast<const X*>(random<X>(ns, 11, glo, ghi)), {s.B, s.T, s.HV});
  if constexpr (reads(Rule::inputs, input::gk))
    a.gk = contiguous<4>(static_cast<const X*>(random<X>(nkv, 12, glo, ghi)), {s.B, s.T, s.HV, s.K});
  if constexpr (reads(Rule::inputs, input::beta)) {
    a.beta = contiguous<3>(static_cast<const X*>(random<X>(ns, 13, -2.f, 2.f)), {s.B, s.T, s.HV});
    a.beta_act = beta_activation::sigmoid;
  }
  if (gates) {
    a.gate.A_log = contiguous<1>(static_cast<const float*>(random<float>(std::size_t(s.HV), 14, -1.f, 1.f)), {s.HV});
    const index_t nb = per_key ? s.HV * s.K : s.HV;
    a.gate.dt_bias = contiguous<1>(static_cast<const float*>(random<float>(std::size_t(nb), 15, -1.f, 1.f)), {nb});
  }
  const view<const X, 4> d_o = input<X>(seed, s, s.HV, s.V, s.odd_strides ? 2 : 1);
  const std::size_t nk = std::size_t(s.B * s.T * s.H * s.K);
  X *dq[2] = {dalloc<X>(nk), dalloc<X>(nk)}, *dk[2] = {dalloc<X>(nk), dalloc<X>(nk)};
  X *dg[2] = {dalloc<X>(ns), dalloc<X>(ns)}, *dbeta[2] = {dalloc<X>(ns), dalloc<X>(ns)};
  X *dgk[2] = {dalloc<X>(nkv), dalloc<X>(nkv)};
  double* sums[2] = {dalloc<double>(std::size_t(s.HV + s.HV * s.K)), dalloc<double>(std::size_t(s.HV + s.HV * s.K))};
  gradients<X, float> gr{.d_o = d_o};
  gr.dq = contiguous<4>(dq[0], {s.B, s.T, s.H, s.K}), gr.dk = contiguous<4>(dk[0], {s.B, s.T, s.H, s.K});
  gr.dv = contiguous<4>(dalloc<X>(std::size_t(s.B * s.T * s.HV * s.V)), {s.B, s.T, s.HV, s.V});

  const problem p = reference::validate_backward<Rule, read::identity>(a, gr);
  arguments<X, float> fa = a;
  const cuda_detail::kernel_args<X> ka = cuda_detail::make_kernel_args(fa, p);
  const bwd::scratch_layout lay = bwd::layout_scratch<Rule, read::identity>(a);
  bwd::work w[2];
  unsigned char* ws[2];
  for (int i = 0; i < 2; ++i) {
    ws[i] = dalloc<unsigned char>(lay.bytes);
    w[i] = bwd::plan_work(p, lay.plan, ws[i]);
  }
  const std::size_t tokens = std::size_t(s.B * s.T);
  const auto phase0 = [&](int i) {
    if (i == 0) bwd::v0::inputs_kernel<Rule, X><<<unsigned(tokens), bwd::threads>>>(ka, d_o, w[0]);
    else bwd::inputs_kernel<Rule, X><<<unsigned(tokens), bwd::threads>>>(ka, d_o, w[1]);
    CK(cudaGetLastError());
  };
  // phase 5 on workspace 0's gradients (random), into output set i
  const std::size_t HV = std::size_t(s.HV), K = std::size_t(s.K);
  fill_kernel<<<1024, 256>>>(w[0].dq, std::int64_t(tokens * HV * K), 21, -1.f, 1.f);
  fill_kernel<<<1024, 256>>>(w[0].dk, std::int64_t(tokens * HV * K), 22, -1.f, 1.f);
  fill_kernel<<<1024, 256>>>(w[0].dlog_alpha, std::int64_t(tokens * HV), 23, -1.f, 1.f);
  fill_kernel<<<1024, 256>>>(w[0].derase, std::int64_t(tokens * HV), 24, -1.f, 1.f);
  if (per_key) fill_kernel<<<1024, 256>>>(w[0].dlog_alpha_k, std::int64_t(tokens * HV * K), 25, -1.f, 1.f);
  bwd::input_grads<X> og[2];
  for (int i = 0; i < 2; ++i) {
    og[i].dq = contiguous<4>(dq[i], {s.B, s.T, s.H, s.K}), og[i].dk = contiguous<4>(dk[i], {s.B, s.T, s.H, s.K});
    if (a.g.ptr) og[i].dg = contiguous<3>(dg[i], {s.B, s.T, s.HV});
    if (a.beta.ptr) og[i].dbeta = contiguous<3>(dbeta[i], {s.B, s.T, s.HV});
    if (a.gk.ptr) og[i].dgk = contiguous<4>(dgk[i], {s.B, s.T, s.HV, s.K});
    if (gates) {
      og[i].sum_A_log = sums[i], og[i].sum_dt_bias = sums[i] + s.HV;
      og[i].dA_log = contiguous<1>(dalloc<float>(HV), {s.HV});
      og[i].ddt_bias = contiguous<1>(dalloc<float>(per_key ? HV * K : HV), {per_key ? s.HV * s.K : s.HV});
    }
  }
  const auto phase5 = [&](int i) {
    if (i == 0) bwd::v0::input_adjoint_kernel<X><<<unsigned(tokens), bwd::threads>>>(ka, w[0], og[0]);
    else bwd::input_adjoint_kernel<X><<<unsigned(tokens), bwd::threads>>>(ka, w[0], og[1]);
    CK(cudaGetLastError());
  };
  phase0(0), phase0(1), phase5(0), phase5(1);
  CK(cudaDeviceSynchronize());

  std::printf("{\"rule\":\"%s\",\"type\":\"%s\",\"B\":%ld,\"T\":%ld,\"H\":%ld,\"HV\":%ld,\"K\":%ld,\"V\":%ld,\"odd\":%d,\"gates\":%d",
              rule_name<Rule>::value, std::is_same_v<X, float> ? "float32" : "bf16", long(s.B), long(s.T), long(s.H),
              long(s.HV), long(s.K), long(s.V), int(s.odd_strides), int(gates));
  double worst = 0;
  const auto report = [&](const char* name, double d) {
    worst = std::max(worst, std::isfinite(d) ? d : 1e30);
    std::printf(",\"%s\":%.3g", name, d);
  };
  const std::size_t nhk = tokens * std::size_t(s.H) * K, nv = tokens * HV * std::size_t(s.V);
  report("q", distance(w[1].q, w[0].q, nhk)), report("k", distance(w[1].k, w[0].k, nhk));
  report("v", distance(w[1].v, w[0].v, nv)), report("d_o", distance(w[1].d_o, w[0].d_o, nv));
  report("log_alpha", distance(w[1].log_alpha, w[0].log_alpha, tokens * HV));
  if (a.beta.ptr) report("erase", distance(w[1].erase, w[0].erase, tokens * HV));
  if (per_key) report("log_alpha_k", distance(w[1].log_alpha_k, w[0].log_alpha_k, tokens * HV * K));
  report("dq", distance(dq[1], dq[0], nk)), report("dk", distance(dk[1], dk[0], nk));
  if (a.g.ptr) report("dg", distance(dg[1], dg[0], ns));
  if (a.beta.ptr) report("dbeta", distance(dbeta[1], dbeta[0], ns));
  if (a.gk.ptr) report("dgk", distance(dgk[1], dgk[0], nkv));
  if (gates) report("sums", distance(sums[1], sums[0], std::size_t(s.HV + (per_key ? s.HV * s.K : s.HV))));
  std::printf(",\"worst\":%.3g", worst);
  if (s.timed) {
    double t0[2] = {1e30, 1e30}, t5[2] = {1e30, 1e30};
    for (int r = 0; r < 3; ++r)
      for (int i = 0; i < 2; ++i) {
        t0[i] = std::min(t0[i], time_ms([&] { phase0(i); }, 5, 5));
        t5[i] = std::min(t5[i], time_ms([&] { phase5(i); }, 5, 5));
      }
    const double gb0 = double(2 * nhk + 2 * nv) * sizeof(X) + double(2 * nhk + 2 * nv) * 4;  // read + written
    const double gb5 = double(2 * tokens * HV * K) * 4 + double(2 * nhk) * sizeof(X) * 2;
    std::printf(",\"phase0_old_ms\":%.4f,\"phase0_new_ms\":%.4f,\"phase0_speedup\":%.3f,\"phase0_new_TBps\":%.2f", t0[0],
                t0[1], t0[0] / t0[1], gb0 / t0[1] * 1e-9);
    std::printf(",\"phase5_old_ms\":%.4f,\"phase5_new_ms\":%.4f,\"phase5_speedup\":%.3f,\"phase5_new_TBps\":%.2f", t5[0],
                t5[1], t5[0] / t5[1], gb5 / t5[1] * 1e-9);
  }
  std::printf("}\n");
  std::fflush(stdout);
  CK(cudaDeviceSynchronize());
}

}  // namespace

int main(int argc, char** argv) {
  const bool check = argc > 1 && std::string(argv[1]) == "--check";
  if (!check) {
    for (const shape& s : {shape{8, 4096, 16, 16, 128, 128, false, false, true}, shape{1, 32768, 16, 16, 128, 128, false, false, true}}) {
      ab<gated_delta, bf16>(s);
      ab<kda, bf16>(s);
    }
    ab<gated_delta, float>(shape{8, 4096, 16, 16, 128, 128, false, false, true});
  }
  for (const shape& s : {shape{2, 150, 2, 4, 37, 45, true, true, false}, shape{2, 130, 2, 4, 64, 96, true, false, false},
                         shape{1, 70, 3, 3, 128, 128, false, true, false}}) {
    ab<gated_delta, bf16>(s), ab<gated_delta, float>(s);
    ab<kda, bf16>(s), ab<kda, float>(s);
    ab<simple_gla, bf16>(s), ab<additive, float>(s);
  }
  return 0;
}
