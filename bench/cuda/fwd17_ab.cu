// bench/cuda/fwd17_ab.cu — the 64-token kernel of the rules that only add (scalar_chunk_kernel.hpp, linear_attn /
// simple_gla) against main 3bd08c2's (scalar_chunk_v0.hpp), fwd17's balanced kernel (scalar_chunk_v2.hpp) and a
// no-copy timing probe (scalar_chunk_noload.hpp) in one process, launched directly on the same kernel arguments
// (issue #15). Instantiates additive and simple_gla alone (not built by CMake):
//   nvcc -std=c++20 -O3 -DNDEBUG -gencode=arch=compute_90a,code=sm_90a --expt-relaxed-constexpr \
//        -Iinclude -Itests -I<eigen3> bench/cuda/fwd17_ab.cu -o fwd17_ab
//   ./fwd17_ab --check    the new kernels against main's on random inputs with every option the kernel takes; o,
//                         final state and residual compared (relative distance, max |Δ|); a JSON line per case; rc 1
//                         on a mismatch
//   ./fwd17_ab --time     interleaved timings (medians of 9 × 10 launches, rounds rotating which goes first),
//                         bf16 H = 16 K = V = 128: 8×4096 whole and with h0 (pass C of 1×32768 in pieces of 4096),
//                         2×16384, 1×32768, packed 32768 + 63×512
//   ./fwd17_ab --library  the library's call (linea::chunkwise, segmented where it cuts) at the same shapes
//   ./fwd17_ab --once     one launch of main's kernel and the library's per rule at 8×4096 with h0 (for ncu)
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "ab_common.hpp"
#include "scalar_chunk_v0.hpp"
#include "scalar_chunk_v2.hpp"
#include "scalar_chunk_noload.hpp"

namespace {
using namespace linea;
using linea_bench::dalloc;
using cuda_detail::check;
using E = __nv_bfloat16;

__global__ void fill(bf16* p, std::int64_t n, std::uint32_t seed, int kind, float amp) {
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n; i += std::int64_t(gridDim.x) * blockDim.x) {
    const float u = linea_bench::hash_uniform(std::uint64_t(i), seed), y = 2.f * u - 1.f;
    p[i] = cuda_detail::from_float<bf16>(kind == 1 ? -logf(1.f + expf(-4.f * y)) : amp * y);  // kind 1: log σ gate
  }
}
__global__ void fill_f(float* p, std::int64_t n, std::uint32_t seed, float amp) {
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n; i += std::int64_t(gridDim.x) * blockDim.x)
    p[i] = amp * (2.f * linea_bench::hash_uniform(std::uint64_t(i), seed) - 1.f);
}
// max |a − b| over n elements (as float)
template <class X>
__global__ void max_diff_kernel(const X* a, const X* b, std::int64_t n, unsigned* out) {
  float m = 0;
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n; i += std::int64_t(gridDim.x) * blockDim.x) {
    const float d = fabsf(float(a[i]) - float(b[i]));
    m = d != d ? INFINITY : fmaxf(m, d);
  }
  atomicMax(out, __float_as_uint(m));  // non-negative floats order as their bits
}
template <class X>
double max_diff(const X* a, const X* b, std::size_t n) {
  unsigned* d = dalloc<unsigned>(1);
  max_diff_kernel<<<512, 256>>>(a, b, std::int64_t(n), d);
  unsigned h = 0;
  check(cudaMemcpy(&h, d, 4, cudaMemcpyDeviceToHost), "cudaMemcpy");
  cudaFree(d);
  float f;
  std::memcpy(&f, &h, 4);
  return f;
}

struct options {
  index_t B = 8, T = 4096, H = 16, HV = 16, K = 128, V = 128;
  std::vector<std::int64_t> seqlens;  // packed (B = 1)
  bool h0 = false, final_state = true, residual = false, l2 = false, normalize = false, g_gamma = false, gate = false;
  double scale = 0;  // 0: K^(-1/2)
  std::string name;
  double tol = 1e-5;  // relative, against main's kernel
};

// The device buffers of one case; a second set of outputs for the old kernel.
struct buffers {
  options o;
  index_t Ttot = 0, N = 0;
  bf16 *q = nullptr, *k = nullptr, *v = nullptr, *g = nullptr, *out[2] = {}, *res[2] = {};
  float *S0 = nullptr, *S[2] = {}, *A = nullptr, *bias = nullptr;
  std::int64_t* cu = nullptr;

  explicit buffers(const options& x) : o(x) {
    Ttot = x.seqlens.empty() ? x.T : 0;
    for (auto l : x.seqlens) Ttot += l;
    const index_t B = x.seqlens.empty() ? x.B : 1;
    N = x.seqlens.empty() ? x.B : index_t(x.seqlens.size());
    const std::size_t nq = B * Ttot * x.H * x.K, nv = B * Ttot * x.HV * x.V, ns = N * x.HV * x.K * x.V;
    q = dalloc<bf16>(nq), k = dalloc<bf16>(nq), v = dalloc<bf16>(nv), g = dalloc<bf16>(B * Ttot * x.HV);
    fill<<<2048, 256>>>(q, nq, 1, 0, 1.f), fill<<<2048, 256>>>(k, nq, 2, 0, 1.f), fill<<<2048, 256>>>(v, nv, 3, 0, 1.f);
    fill<<<2048, 256>>>(g, B * Ttot * x.HV, 4, x.gate ? 0 : 1, 2.f);  // in-kernel gate: logits in [−2, 2]
    for (int i = 0; i < 2; ++i) {
      out[i] = dalloc<bf16>(nv), S[i] = dalloc<float>(ns);
      if (x.residual) res[i] = dalloc<bf16>(nv);
    }
    if (x.h0) S0 = dalloc<float>(ns), fill_f<<<2048, 256>>>(S0, ns, 5, 4.f);
    if (x.gate) {
      A = dalloc<float>(x.HV), bias = dalloc<float>(x.HV);
      fill_f<<<1, 32>>>(A, x.HV, 6, 1.f), fill_f<<<1, 32>>>(bias, x.HV, 7, 1.f);
    }
    if (!x.seqlens.empty()) {
      std::vector<std::int64_t> c{0};
      for (auto l : x.seqlens) c.push_back(c.back() + l);
      cu = dalloc<std::int64_t>(c.size());
      check(cudaMemcpy(cu, c.data(), c.size() * 8, cudaMemcpyHostToDevice), "cudaMemcpy");
    }
    check(cudaDeviceSynchronize(), "fill");
  }
  ~buffers() {
    for (void* p : {(void*)q, (void*)k, (void*)v, (void*)g, (void*)out[0], (void*)out[1], (void*)res[0], (void*)res[1],
                    (void*)S0, (void*)S[0], (void*)S[1], (void*)A, (void*)bias, (void*)cu})
      if (p) cudaFree(p);
  }
  std::size_t nv() const { return std::size_t(o.seqlens.empty() ? o.B : 1) * Ttot * o.HV * o.V; }
  std::size_t ns() const { return std::size_t(N) * o.HV * o.K * o.V; }

  std::vector<std::int64_t> cu_host;  // the offsets, for arguments::cu_seqlens

  // The library call's arguments for output set i.
  template <class Rule>
  arguments<bf16, float> call_args(int i) {
    const index_t B = o.seqlens.empty() ? o.B : 1;
    arguments<bf16, float> a;
    a.q = contiguous<4>(static_cast<const bf16*>(q), {B, Ttot, o.H, o.K});
    a.k = contiguous<4>(static_cast<const bf16*>(k), {B, Ttot, o.H, o.K});
    a.v = contiguous<4>(static_cast<const bf16*>(v), {B, Ttot, o.HV, o.V});
    if constexpr (Rule::decay::kind == decay_kind::scalar) {
      if (o.g_gamma) a.g = strided<3>(static_cast<const bf16*>(g), {B, Ttot, o.HV}, {0, 0, 1});
      else a.g = contiguous<3>(static_cast<const bf16*>(g), {B, Ttot, o.HV});
      if (o.gate) {
        a.gate.A_log = contiguous<1>(static_cast<const float*>(A), {o.HV});
        a.gate.dt_bias = contiguous<1>(static_cast<const float*>(bias), {o.HV});
      }
    }
    a.o = contiguous<4>(out[i], {B, Ttot, o.HV, o.V});
    if (o.residual) a.residual = contiguous<4>(res[i], {B, Ttot, o.HV, o.V});
    if (o.h0) a.initial_state = contiguous<4>(static_cast<const float*>(S0), {N, o.HV, o.K, o.V});
    if (o.final_state) a.final_state = contiguous<4>(S[i], {N, o.HV, o.K, o.V});
    a.qk_l2norm = o.l2, a.normalize = o.normalize;
    if (o.scale > 0) a.scale = o.scale;
    cu_host.assign(1, 0);
    for (auto l : o.seqlens) cu_host.push_back(cu_host.back() + l);
    if (!o.seqlens.empty()) a.cu_seqlens = std::span<const std::int64_t>(cu_host);
    return a;
  }

  // The kernel arguments for output set i, as the library forms them (make_kernel_args of a validated call).
  template <class Rule>
  cuda_detail::kernel_args<bf16> args(int i) {
    const auto a = call_args<Rule>(i);
    const problem p = validate_chunkwise<Rule, read::identity>(a);
    auto ka = cuda_detail::make_kernel_args(a, p);
    ka.cu_seqlens = cu;
    if (!cuda_detail::tiles::inputs_fit(ka)) throw error("fwd17_ab: inputs the 64-token kernel does not take");
    return ka;
  }
};

// Variant 2: the library's kernel (main's with Q's fragments shared by Q S and P); 0: main's; 1: fwd17's balanced
// kernel (scalar_chunk_v2.hpp); 3: the library's without the in-loop copies (a timing probe, wrong outputs).
template <class Rule, int Variant>
void launch(const cuda_detail::kernel_args<bf16>& k, index_t rows) {
  using namespace cuda_detail;
  const dim3 grid(unsigned(k.HV), unsigned(rows), unsigned((k.V + tiles::BV - 1) / tiles::BV));
  if constexpr (Variant == 2) {
    constexpr auto kernel = scalar_chunk_kernel<Rule, bf16, E>;
    allow_dynamic_shared<kernel>(scalar_chunk_shape::bytes, 0);
    kernel<<<grid, tiles::threads, scalar_chunk_shape::bytes>>>(k);
  } else if constexpr (Variant == 3) {
    constexpr auto kernel = probe::scalar_chunk_kernel_noload<Rule, bf16, E>;
    allow_dynamic_shared<kernel>(probe::scalar_chunk_shape_noload::bytes, 0);
    kernel<<<grid, tiles::threads, probe::scalar_chunk_shape_noload::bytes>>>(k);
  } else if constexpr (Variant == 1) {
    constexpr auto kernel = v2::scalar_chunk_kernel_v2<Rule, bf16, E>;
    allow_dynamic_shared<kernel>(v2::scalar_chunk_shape_v2::bytes, 0);
    kernel<<<grid, tiles::threads, v2::scalar_chunk_shape_v2::bytes>>>(k);
  } else {
    constexpr auto kernel = v0::scalar_chunk_kernel_v0<Rule, bf16, E>;
    allow_dynamic_shared<kernel>(v0::scalar_chunk_shape_v0::bytes, 0);
    kernel<<<grid, tiles::threads, v0::scalar_chunk_shape_v0::bytes>>>(k);
  }
  check_launch("fwd17_ab launch");
}

template <class Rule>
const char* rule_name() { return Rule::decay::kind == decay_kind::scalar ? "simple_gla" : "linear_attn"; }

// Variant V against main's kernel on one case: rc 0 when o, the final state and the residual agree within x.tol
// relative (they compute the same products in the same order: expected bit for bit, but for v2's normalize row sums).
template <class Rule, int V>
int check_case(const options& x) {
  buffers b(x);
  const auto k0 = b.template args<Rule>(0);
  const auto k1 = b.template args<Rule>(1);
  launch<Rule, V>(k0, b.N);
  launch<Rule, 0>(k1, b.N);
  check(cudaDeviceSynchronize(), "check_case");
  const double ro = linea_bench::relative_distance(b.out[0], b.out[1], b.nv()), mo = max_diff(b.out[0], b.out[1], b.nv());
  const double rs = linea_bench::relative_distance(b.S[0], b.S[1], b.ns()), ms = max_diff(b.S[0], b.S[1], b.ns());
  double rr = 0;
  if (x.residual) rr = linea_bench::relative_distance(b.res[0], b.res[1], b.nv());
  const bool ok = ro <= x.tol && rs <= x.tol && rr <= x.tol;
  std::printf("{\"kind\":\"check\",\"variant\":%d,\"rule\":\"%s\",\"case\":\"%s\",\"o_rel\":%.3g,\"o_max\":%.3g,\"state_rel\":%.3g,"
              "\"state_max\":%.3g,\"residual_rel\":%.3g,\"ok\":%s}\n",
              V, rule_name<Rule>(), x.name.c_str(), ro, mo, rs, ms, rr, ok ? "true" : "false");
  return ok ? 0 : 1;
}

int check_all() {
  int bad = 0;
  const std::vector<std::int64_t> packed{37, 0, 130, 64, 200, 1, 63, 65, 500};
  std::vector<options> cases;
  auto add = [&](options o, const char* n) { o.name = n, cases.push_back(o); };
  add({.B = 2, .T = 1000}, "plain 2x1000");
  add({.B = 2, .T = 1000, .h0 = true}, "h0");
  add({.B = 2, .T = 333, .H = 4, .HV = 16, .h0 = true}, "GVA 4->16, ragged T");
  add({.B = 2, .T = 700, .h0 = true, .final_state = false, .residual = true}, "residual, no final state");
  add({.B = 2, .T = 700, .h0 = true, .l2 = true}, "qk_l2norm");
  add({.B = 2, .T = 700, .h0 = true, .scale = 0.3}, "scale 0.3");
  add({.B = 2, .T = 500, .K = 72, .V = 104, .h0 = true}, "K 72 V 104");
  add({.T = 0, .seqlens = packed, .h0 = true}, "packed 9 sequences");
  add({.B = 2, .T = 700, .h0 = true, .g_gamma = true}, "g_gamma (simple_gla)");
  add({.B = 2, .T = 700, .h0 = true, .gate = true}, "in-kernel gate (simple_gla)");
  for (const auto& c : cases)
    bad += check_case<additive, 2>(c) + check_case<simple_gla, 2>(c) + check_case<additive, 1>(c) + check_case<simple_gla, 1>(c);
  for (const bool l2 : {false, true}) {
    // random-sign q, k put some q·z near 0, where the divisor amplifies a different order of P's row sums (v2)
    options n{.B = 2, .T = 700, .h0 = !l2, .l2 = l2, .normalize = true, .name = l2 ? "normalize + qk_l2norm" : "normalize",
              .tol = 1e-3};
    bad += check_case<additive, 2>(n) + check_case<additive, 1>(n);
  }
  std::printf("{\"kind\":\"check_summary\",\"mismatches\":%d}\n", bad);
  return bad ? 1 : 0;
}

template <class Rule>
void time_case(const options& x) {
  buffers b(x);
  const auto k0 = b.template args<Rule>(0);
  const auto k1 = b.template args<Rule>(1);
  std::vector<double> t[4];
  auto one = [&](int v) {
    auto f = [&] {
      if (v == 0) launch<Rule, 0>(k1, b.N);
      else if (v == 1) launch<Rule, 1>(k0, b.N);
      else if (v == 2) launch<Rule, 2>(k0, b.N);
      else launch<Rule, 3>(k0, b.N);
    };
    t[v].push_back(linea_bench::time_ms(f, 10, 1));
  };
  for (int r = 0; r < 9; ++r)  // rounds rotate which variant goes first
    for (int i = 0; i < 4; ++i) one((r + i) % 4);
  for (auto& x : t) std::sort(x.begin(), x.end());
  std::printf("{\"kind\":\"time\",\"rule\":\"%s\",\"shape\":\"%s\",\"v0_ms\":%.4f,\"v2_ms\":%.4f,\"new_ms\":%.4f,"
              "\"noload_ms\":%.4f,\"v0_min\":%.4f,\"v2_min\":%.4f,\"new_min\":%.4f,\"speedup\":%.3f}\n",
              rule_name<Rule>(), x.name.c_str(), t[0][4], t[1][4], t[2][4], t[3][4], t[0][0], t[1][0], t[2][0],
              t[0][4] / t[2][4]);
  std::fflush(stdout);
}

void time_all() {
  std::vector<std::int64_t> packed{32768};
  for (int i = 0; i < 63; ++i) packed.push_back(512);
  std::vector<options> cases;
  auto add = [&](options o, const char* n) { o.name = n, cases.push_back(o); };
  add({.B = 8, .T = 4096}, "8x4096");
  add({.B = 8, .T = 4096, .h0 = true}, "8x4096 h0 (pass C of 1x32768)");
  add({.B = 2, .T = 16384}, "2x16384 whole");
  add({.B = 1, .T = 32768}, "1x32768 whole");
  add({.T = 0, .seqlens = packed}, "32768+63x512 packed whole");
  for (const auto& c : cases) time_case<additive>(c), time_case<simple_gla>(c);
}

// The library's call (linea::chunkwise: the segmented forward where it cuts, pass C on the library's kernel), bf16
// H = 16 K = V = 128, final state written: the "after" of the whole forward (its "before" is another call's).
template <class Rule>
void time_library(const options& x) {
  buffers b(x);
  const auto a = b.template call_args<Rule>(0);
  const double ms = linea_bench::time_ms([&] { chunkwise<Rule, read::identity, backend::cuda>(a); }, 10, 9);
  std::printf("{\"kind\":\"library\",\"rule\":\"%s\",\"shape\":\"%s\",\"ms\":%.4f}\n", rule_name<Rule>(),
              x.name.c_str(), ms);
  std::fflush(stdout);
}

void library_all() {
  std::vector<std::int64_t> packed{32768};
  for (int i = 0; i < 63; ++i) packed.push_back(512);
  std::vector<options> cases;
  auto add = [&](options o, const char* n) { o.name = n, cases.push_back(o); };
  add({.B = 8, .T = 4096}, "8x4096");
  add({.B = 2, .T = 16384}, "2x16384");
  add({.B = 1, .T = 32768}, "1x32768");
  add({.T = 0, .seqlens = packed}, "32768+63x512 packed");
  for (const auto& c : cases) time_library<additive>(c), time_library<simple_gla>(c);
}

void once() {
  const options x{.B = 8, .T = 4096, .h0 = true};
  buffers b(x);
  launch<additive, 0>(b.args<additive>(1), b.N), launch<additive, 2>(b.args<additive>(0), b.N);
  launch<simple_gla, 0>(b.args<simple_gla>(1), b.N), launch<simple_gla, 2>(b.args<simple_gla>(0), b.N);
  check(cudaDeviceSynchronize(), "once");
}
}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "--check";
  try {
    if (mode == "--check") return check_all();
    if (mode == "--time") return time_all(), 0;
    if (mode == "--once") return once(), 0;
    if (mode == "--library") return library_all(), 0;
  } catch (const std::exception& e) {
    std::printf("{\"kind\":\"error\",\"what\":\"%s\"}\n", e.what());
    return 2;
  }
  std::printf("usage: fwd17_ab --check | --time | --library | --once\n");
  return 2;
}
