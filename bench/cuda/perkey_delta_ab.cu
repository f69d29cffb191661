// bench/cuda/perkey_delta_ab.cu — the per-key rules' chunk kernels on the H200 (not built by CMake; for a short
// device call). The library's path (gla: perkey_delta_kernel.hpp; kda, gdn2: the general kernel) timed through
// linea::chunkwise at 8×4096, 2×16384 and 1×32768 (H = 16, K = V = 128, bf16; the piece the cost model picks, and
// the call whole); at 8×4096 the other kernel of each rule launched directly in the same process (gla:
// perkey_chunk_kernel.hpp; kda, gdn2: perkey_delta_kernel.hpp), with the relative distance of its o and final state
// from the library's; and gla's forward on the inputs of `linea_cuda_bench --backward` next to those of its
// chunkwise rows and of perkey_ab.cu (with and without an initial state). Built against the CUDA instances
// (extern), as the test suite:
//   nvcc -std=c++20 -O3 -DNDEBUG -gencode=arch=compute_90a,code=sm_90a --expt-relaxed-constexpr \
//        -DLINEA_CUDA_EXTERN_INSTANCES -Iinclude -c bench/cuda/perkey_delta_ab.cu && link with the instances' objects
// (2026-12-02's call ran the previous version of this file, which launched the general kernel directly and sent kda
// and gdn2 to perkey_delta_kernel.hpp through the library: bench/cuda/README.md.)
// pkf14 (2026-12-03): pipeline_ab — this branch's perkey_delta_kernel against main e98ccba's (perkey_delta_ab_v0.hpp)
// and against the rule's other kernel, o and final-state distances, at 8×4096 and 1×32768, ordinary and extreme
// gates (log α uniform in [−20, 0]); `--check`: small shapes only, for compute-sanitizer. pkf14 built it without
// the extern instances (one unit instantiating the three rules' forward), as
//   nvcc -std=c++20 -O3 -DNDEBUG -gencode=arch=compute_90a,code=sm_90a --expt-relaxed-constexpr -Iinclude \
//        -I/usr/include/eigen3 bench/cuda/perkey_delta_ab.cu -o perkey_delta_ab
// pk18 (2026-12-04): "old" is now main 5386113's kernel (perkey_delta_ab_v0.hpp, pkf14 + pkf14-next); `--check` adds
// features_ab — in-kernel gates (with and without the lower bound) and gates cp.async cannot read (misaligned gk / b:
// the staging's element-by-element copy), new against old and both against float64. (1 min 20 s here, -lineinfo.)
// pk19 (2026-12-04): "old" is main 6dca2f0's kernel (pk18 + pk18-next); "new" is this branch's with e = b ⊙ k formed in
// phase E (DerivedFactors = false, the library's: must be bit-identical to old), "derived" the same with two
// exponentials a row in ordinary chunks (DerivedFactors = true: a rounding apart, judged against float64). `--check`
// adds K = 72 (channels past K: zeros, in-kernel gates' dt_bias of K entries a head) and mixed gates (chunks with
// and without wide channels in one sequence), prints a verdict a case and exits 2 if any case fails.
// pko (2026-12-05, issue #15): "old" is the library's kernel as main 634174a launches it (DerivedFactors, the o and
// residual strips stored as the accumulators' 4-byte pairs: tiles::strip_store::pairs), "new" the same with the
// strips in full sectors (strip_store::sectors) — a store change only: must be bit-identical to old —, "exact" new
// without DerivedFactors (judged against float64); the v0 copy of the kernel is gone (session 12). `--check` adds
// outputs_ab: o and the residual in other layouts (head-first, misaligned, column stride 2, V = 100 in padded rows,
// residual), bit for bit against old over the whole buffers. `--lib`: the library's path alone at 8×4096 (the call
// runs it from two builds, with and without LINEA_PERKEY_PAIR_STORES, in alternating processes); `--once`: one
// launch of old and new a rule at 8×4096 (for ncu).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <tuple>
#include <vector>

#include <linea/cuda.hpp>

#include "ab_common.hpp"

using namespace linea;
using T = bf16;
#define CK(x) linea::cuda_detail::check((x), #x)

namespace {

// The inputs of bench_cuda.cu (the same hash, the same distributions), so the rows compare with its own.
using linea_bench::fill_state;
using linea_bench::hash_uniform;
using linea_bench::normalize_rows;
enum class fill { normal, logsigmoid, sigmoid, uniform, logsigmoid4, extreme, mixed };  // uniform, logsigmoid4:
// perkey_ab.cu's; extreme: log α uniform in [−20, 0]; mixed (pk19): extreme in every 16th key channel of the first
// chunk of every three (32 tokens), log-sigmoid elsewhere — chunks with and without wide channels in one sequence
__global__ void fill_kernel(T* p, std::int64_t n, std::uint32_t seed, fill kind, std::int64_t hk = 1, int kw = 1) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const float z = linea_bench::hash_normal(i, seed);  // N(0, 1)
    float x = z;
    if (kind == fill::logsigmoid) x = -log1pf(expf(-z));
    if (kind == fill::sigmoid) x = 1.f / (1.f + expf(-z));
    if (kind == fill::uniform) x = 2.f * hash_uniform(i, seed) - 1.f;
    if (kind == fill::logsigmoid4) x = -logf(1.f + expf(-4.f * (2.f * hash_uniform(i, seed) - 1.f)));
    if (kind == fill::extreme) x = -20.f * hash_uniform(i, seed);
    if (kind == fill::mixed) {  // [B, T, H, K] with hk = H·K, kw = K; i / hk: the row in the batch (period 96)
      const bool wild = (i % kw) % 16 == 0 && (i / hk) % 96 < 32;
      x = wild ? -20.f * hash_uniform(i, seed) : -log1pf(expf(-z));
    }
    p[i] = linea::cuda_detail::from_float<T>(x);
  }
}
T* random_tensor(std::size_t n, std::uint32_t seed, fill kind, std::int64_t hk = 1, int kw = 1) {
  T* p = nullptr;
  CK(cudaMalloc(&p, n * sizeof(T)));
  fill_kernel<<<2048, 256>>>(p, static_cast<std::int64_t>(n), seed, kind, hk, kw);
  CK(cudaGetLastError());
  return p;
}

struct inputs {
  index_t B, T_;
  T *q, *k, *v, *gk, *beta, *b, *w, *o;
  float *s0, *s1;
};
constexpr index_t H = 16;
index_t V = 128;  // (pko: 104 while outputs_ab allocates V = 100 in padded rows)
index_t K = 128;  // 72 in --check's narrow cases (pk19)
enum gates_kind : int { ordinary_gates = 0, extreme_gates = 1, mixed_gates = 2 };
inputs make_inputs(index_t B, index_t T_, std::uint32_t seed, bool perkey_ab_fills = false, int gates = ordinary_gates) {
  const std::size_t nk = B * T_ * H * K, nv = B * T_ * H * V, ns = B * T_ * H;  // (v, w, o are V wide: K = 72 in --check)
  const fill qkv = perkey_ab_fills ? fill::uniform : fill::normal;
  inputs x{B, T_};
  x.q = random_tensor(nk, seed + 1, qkv);
  x.k = random_tensor(nk, seed + 2, qkv);
  if (!perkey_ab_fills) normalize_rows<<<static_cast<unsigned>((ns + 7) / 8), 256>>>(x.k, static_cast<std::int64_t>(ns), int(K));
  x.v = random_tensor(nv, seed + 3, qkv);
  x.gk = random_tensor(nk, seed + 5,
                       gates == extreme_gates ? fill::extreme
                       : gates == mixed_gates ? fill::mixed
                       : perkey_ab_fills      ? fill::logsigmoid4
                                              : fill::logsigmoid,
                       std::int64_t(H * K), int(K));
  x.beta = random_tensor(ns, seed + 6, fill::sigmoid);
  x.b = random_tensor(nk, seed + 7, fill::sigmoid);
  x.w = random_tensor(nv, seed + 8, fill::sigmoid);
  CK(cudaMalloc(&x.o, nv * sizeof(T)));
  CK(cudaMalloc(&x.s0, B * H * K * V * sizeof(float)));
  CK(cudaMalloc(&x.s1, B * H * K * V * sizeof(float)));
  CK(cudaMemset(x.s0, 0, B * H * K * V * sizeof(float)));
  CK(cudaDeviceSynchronize());
  return x;
}
void free_inputs(inputs& x) {
  for (void* p : {(void*)x.q, (void*)x.k, (void*)x.v, (void*)x.gk, (void*)x.beta, (void*)x.b, (void*)x.w, (void*)x.o,
                  (void*)x.s0, (void*)x.s1})
    CK(cudaFree(p));
}

template <class Rule>
arguments<T, float> make_args(const inputs& x, bool initial_state) {
  const index_t B = x.B, T_ = x.T_;
  arguments<T, float> a;
  a.q = contiguous<4>(static_cast<const T*>(x.q), {B, T_, H, K});
  a.k = contiguous<4>(static_cast<const T*>(x.k), {B, T_, H, K});
  a.v = contiguous<4>(static_cast<const T*>(x.v), {B, T_, H, V});
  a.gk = contiguous<4>(static_cast<const T*>(x.gk), {B, T_, H, K});
  if constexpr (reads(Rule::inputs, input::beta)) a.beta = contiguous<3>(static_cast<const T*>(x.beta), {B, T_, H});
  if constexpr (reads(Rule::inputs, input::b)) a.b = contiguous<4>(static_cast<const T*>(x.b), {B, T_, H, K});
  if constexpr (reads(Rule::inputs, input::w)) a.w = contiguous<4>(static_cast<const T*>(x.w), {B, T_, H, V});
  a.o = contiguous<4>(x.o, {B, T_, H, V});
  if (initial_state) a.initial_state = contiguous<4>(static_cast<const float*>(x.s0), {B, H, K, V});
  a.final_state = contiguous<4>(x.s1, {B, H, K, V});
  return a;
}

template <class F>
double time_ms(F&& f, int calls = 10, int repeats = 7, int warmup = 3) {  // f(i): i the call's index
  return linea_bench::time_calls_ms(f, calls, repeats, warmup);
}

double copy_tbps() {
  const std::size_t n = std::size_t(1) << 31;
  char *a = nullptr, *b = nullptr;
  CK(cudaMalloc(&a, n)), CK(cudaMalloc(&b, n));
  CK(cudaMemset(a, 1, n));
  const double ms = time_ms([&](int) { CK(cudaMemcpyAsync(b, a, n, cudaMemcpyDeviceToDevice)); }, 5, 7, 2);
  CK(cudaFree(a)), CK(cudaFree(b));
  return 2.0 * n / (ms * 1e-3) / 1e12;
}

// The kernel the library does not take for this rule, launched directly: gla's own 64-token kernel, or the
// warp-specialised per-key kernel for kda and gdn2.
template <class Rule>
void launch_other(const cuda_detail::kernel_args<T>& k, index_t rows) {
  using namespace cuda_detail;
  using E = __nv_bfloat16;
  if constexpr (erases<Rule>) {
    using sh = perkey_delta_shape;
    constexpr auto kernel = perkey_delta_kernel<Rule, T, E>;
    allow_dynamic_shared<kernel>(sh::bytes, 0);
    kernel<<<dim3(unsigned(k.HV), unsigned(rows), 1u), sh::threads, sh::bytes>>>(k);
  } else {
    using sh = perkey_chunk_shape;
    constexpr auto kernel = perkey_chunk_kernel<Rule, T, E>;
    allow_dynamic_shared<kernel>(sh::bytes, 0);
    kernel<<<dim3(unsigned(k.HV), unsigned(rows), 1u), sh::threads, sh::bytes>>>(k);
  }
  check_launch("perkey kernel");
}

// The general chunk kernel (chunk_kernel.hpp), launched as launch_chunk's fallback branch does.
template <class Rule>
void launch_general(const cuda_detail::kernel_args<T>& k, index_t rows) {
  using namespace cuda_detail;
  using E = __nv_bfloat16;
  constexpr int BV = chunk_bv<Rule, T, E, pass::main>;
  constexpr std::size_t bytes = chunk_shape<Rule, T, E, pass::main, BV>::bytes;
  constexpr auto kernel = chunk_kernel<Rule, T, E, pass::main, BV>;
  allow_dynamic_shared<kernel>(bytes, 0);
  kernel<<<dim3(unsigned(k.HV), unsigned(rows), unsigned((k.V + BV - 1) / BV)), chunk_threads, bytes>>>(k);
  check_launch("chunk_kernel");
}
// perkey_delta_kernel with DerivedFactors and the strips in pairs (Variant 0, old: main 634174a's library choice),
// in full sectors (1, new) and in full sectors without DerivedFactors (2, exact), launched directly over whole
// sequences.
template <class Rule, int Variant>
void launch_pipeline(const cuda_detail::kernel_args<T>& k, index_t rows) {
  using namespace cuda_detail;
  using E = __nv_bfloat16;
  using sh = perkey_delta_shape;
  using tiles::strip_store;
  constexpr auto kernel = Variant == 0   ? perkey_delta_kernel<Rule, T, E, true, strip_store::pairs>
                          : Variant == 1 ? perkey_delta_kernel<Rule, T, E, true, strip_store::sectors>
                                         : perkey_delta_kernel<Rule, T, E, false, strip_store::sectors>;
  allow_dynamic_shared<kernel>(sh::bytes, 0);
  kernel<<<dim3(unsigned(k.HV), unsigned(rows), 1u), sh::threads, sh::bytes>>>(k);
  check_launch("perkey_delta_kernel");
}

// Bytes a call must move at least: q, k, v, gk (and β or b, w) read, o written, the final state written.
template <class Rule>
double min_bytes(index_t B, index_t T_) {
  const double tok = double(B) * T_ * H;
  double bytes = tok * (2 * K + V + V + K) * 2 + double(B) * H * K * V * 4;
  if (reads(Rule::inputs, input::beta)) bytes += tok * 2;
  if (reads(Rule::inputs, input::b)) bytes += tok * K * 2;
  if (reads(Rule::inputs, input::w)) bytes += tok * V * 2;
  return bytes;
}

template <class Rule>
void rows_at(index_t B, index_t T_, double copy, bool other_kernel = true) {
  inputs x[2] = {make_inputs(B, T_, 100), make_inputs(B, T_, 200)};
  arguments<T, float> a[2] = {make_args<Rule>(x[0], false), make_args<Rule>(x[1], false)};
  const problem p = validate_chunkwise<Rule, read::identity>(a[0]);
  cuda::launch whole;
  whole.segment_tokens = 0;
  const index_t piece = cuda_detail::piece_length<Rule>(a[0], segments::sequence_starts(a[0], p), p, cuda::launch{},
                                                        cuda_detail::current_device());
  const int calls = B * T_ > 8 * 4096 ? 3 : 10, repeats = B * T_ > 8 * 4096 ? 5 : 7;
  const double ms = time_ms([&](int i) { chunkwise<Rule, read::identity, backend::cuda>(a[i & 1]); }, calls, repeats);
  const double ms_whole =
      time_ms([&](int i) { chunkwise<Rule, read::identity, backend::cuda>(a[i & 1], whole); }, calls, repeats);
  const double tb = min_bytes<Rule>(B, T_) / (ms * 1e-3) / 1e12;
  std::printf("{\"kind\":\"perkey_chunkwise\",\"rule\":\"%s\",\"B\":%ld,\"T\":%ld,\"piece\":%ld,\"ms\":%.4f,"
              "\"whole_ms\":%.4f,\"tbps\":%.3f,\"copy_frac\":%.3f",
              rule_name<Rule>::value, long(B), long(T_), long(piece), ms, ms_whole, tb, tb / copy);
  if (B == 8 && other_kernel) {
    const auto k0 = cuda_detail::make_kernel_args(a[0], p), k1 = cuda_detail::make_kernel_args(a[1], p);
    const double other = time_ms([&](int i) {
      if constexpr (erases<Rule>) launch_general<Rule>(i & 1 ? k1 : k0, B);
      else launch_other<Rule>(i & 1 ? k1 : k0, B);
    });
    std::printf(",\"other_kernel_ms\":%.4f", other);
  }
  std::printf("}\n");
  std::fflush(stdout);
  free_inputs(x[0]), free_inputs(x[1]);
}

// gla's forward as `linea_cuda_bench --backward` times it (one input set, seed 500, 10 calls × 5 repeats) and as its
// chunkwise rows do (two sets, seeds 100 / 200, alternating), with and without an initial state; kda beside it.
template <class Rule>
void forward_variants() {
  inputs one = make_inputs(8, 4096, 500), two[2] = {make_inputs(8, 4096, 100), make_inputs(8, 4096, 200)};
  for (const bool s0 : {false, true}) {
    auto a = make_args<Rule>(one, s0);
    arguments<T, float> b[2] = {make_args<Rule>(two[0], s0), make_args<Rule>(two[1], s0)};
    const double backward_style = time_ms([&](int) { chunkwise<Rule, read::identity, backend::cuda>(a); }, 10, 5, 2);
    const double row_style = time_ms([&](int i) { chunkwise<Rule, read::identity, backend::cuda>(b[i & 1]); });
    const double one_set_rows = time_ms([&](int) { chunkwise<Rule, read::identity, backend::cuda>(b[0]); });
    std::printf("{\"kind\":\"forward_variants\",\"rule\":\"%s\",\"initial_state\":%s,\"one_set_seed500_ms\":%.4f,"
                "\"two_sets_ms\":%.4f,\"one_set_seed100_ms\":%.4f}\n",
                rule_name<Rule>::value, s0 ? "true" : "false", backward_style, row_style, one_set_rows);
    std::fflush(stdout);
  }
  {  // perkey_ab.cu's inputs (uniform q, k, v; gk = logsigmoid(4u)), where gla timed 1.016 ms
    inputs u = make_inputs(8, 4096, 700, true);
    auto a = make_args<Rule>(u, false);
    const double ms = time_ms([&](int) { chunkwise<Rule, read::identity, backend::cuda>(a); });
    std::printf("{\"kind\":\"forward_variants\",\"rule\":\"%s\",\"perkey_ab_inputs_ms\":%.4f}\n", rule_name<Rule>::value, ms);
    std::fflush(stdout);
    free_inputs(u);
  }
  free_inputs(one), free_inputs(two[0]), free_inputs(two[1]);
}

// (helpers of pipeline_ab)
template <class X>
std::vector<float> to_host(const X* p, std::size_t n) {
  std::vector<X> h(n);
  CK(cudaMemcpy(h.data(), p, n * sizeof(X), cudaMemcpyDeviceToHost));
  std::vector<float> f(n);
  for (std::size_t i = 0; i < n; ++i) f[i] = static_cast<float>(h[i]);
  return f;
}
double rel_distance(const std::vector<float>& x, const std::vector<float>& y) {
  double d = 0, n = 0;
  for (std::size_t i = 0; i < x.size(); ++i) d += double(x[i] - y[i]) * (x[i] - y[i]), n += double(y[i]) * y[i];
  return std::sqrt(d / n);
}
// The float64 recurrence (linea::reference) on the inputs of x, copied to the host as float (16-bit values exactly):
// o and the final state, to measure SPEC §5's relative distances on small shapes.
template <class Rule>
std::pair<std::vector<float>, std::vector<float>> reference_outputs(const inputs& x, bool initial_state,
                                                                    const gate_activation& gate = {}) {
  const index_t B = x.B, T_ = x.T_;
  const std::size_t nk = B * T_ * H * K, nv = B * T_ * H * V, ns = B * T_ * H, nst = B * H * K * V;
  auto q = to_host(x.q, nk), k = to_host(x.k, nk), v = to_host(x.v, nv), gk = to_host(x.gk, nk);
  auto beta = to_host(x.beta, ns), b = to_host(x.b, nk), w = to_host(x.w, nv);
  auto s0 = to_host(x.s0, nst);
  std::vector<float> o(nv), s1(nst);
  arguments<float, float> a;
  a.q = contiguous<4>(static_cast<const float*>(q.data()), {B, T_, H, K});
  a.k = contiguous<4>(static_cast<const float*>(k.data()), {B, T_, H, K});
  a.v = contiguous<4>(static_cast<const float*>(v.data()), {B, T_, H, V});
  a.gk = contiguous<4>(static_cast<const float*>(gk.data()), {B, T_, H, K});
  if constexpr (reads(Rule::inputs, input::beta)) a.beta = contiguous<3>(static_cast<const float*>(beta.data()), {B, T_, H});
  if constexpr (reads(Rule::inputs, input::b)) a.b = contiguous<4>(static_cast<const float*>(b.data()), {B, T_, H, K});
  if constexpr (reads(Rule::inputs, input::w)) a.w = contiguous<4>(static_cast<const float*>(w.data()), {B, T_, H, V});
  a.o = contiguous<4>(o.data(), {B, T_, H, V});
  if (initial_state) a.initial_state = contiguous<4>(static_cast<const float*>(s0.data()), {B, H, K, V});
  a.final_state = contiguous<4>(s1.data(), {B, H, K, V});
  a.gate = gate;
  reference::recurrent<Rule, read::identity, double>(a);
  return {o, s1};
}

// --check's verdicts (pk19; pko: "derived" is now the exact variant): new bit-identical to old (o and final state),
// every output of new and exact finite, new and exact within SPEC §5 of the float64 recurrence (1e-2 relative,
// 16-bit inputs) where it is computed.
int failures = 0;
bool verdict(bool bit_identical, bool finite, double ref_o_new, double ref_s_new, double ref_o_der, double ref_s_der) {
  const auto within = [](double x) { return x <= 1e-2; };  // (−1: not computed)
  const bool pass = bit_identical && finite && within(ref_o_new) && within(ref_s_new) && within(ref_o_der) &&
                    within(ref_s_der);
  failures += !pass;
  return pass;
}
bool all_finite(const std::vector<float>& x) {
  for (float v : x)
    if (!std::isfinite(v)) return false;
  return true;
}

// New and exact against old (pko: the library's kernel as main 634174a launches it) against the other kernel of
// the rule (kda, gdn2: the general kernel; gla: perkey_chunk_kernel.hpp), whole sequences, launched directly: distances of o and the final state (the
// relative Frobenius distance), then the times, three rounds interleaved (best median).
template <class Rule>
void pipeline_ab(index_t B, index_t T_, bool initial_state, int gates, bool timed = true) {
  inputs x[2] = {make_inputs(B, T_, 100, false, gates), make_inputs(B, T_, 200, false, gates)};
  if (initial_state) fill_state<<<2048, 256>>>(x[0].s0, std::int64_t(B * H * K * V), 9);
  CK(cudaMemset(x[1].s0, 0, B * H * K * V * sizeof(float)));
  arguments<T, float> a[2] = {make_args<Rule>(x[0], initial_state), make_args<Rule>(x[1], initial_state)};
  const problem p = validate_chunkwise<Rule, read::identity>(a[0]);
  const cuda_detail::kernel_args<T> k[2] = {cuda_detail::make_kernel_args(a[0], p), cuda_detail::make_kernel_args(a[1], p)};
  auto fresh = [&](int i) { return launch_pipeline<Rule, 1>(k[i & 1], B); };
  auto exact = [&](int i) { return launch_pipeline<Rule, 2>(k[i & 1], B); };
  auto old = [&](int i) { return launch_pipeline<Rule, 0>(k[i & 1], B); };
  auto other = [&](int i) {
    if constexpr (erases<Rule>) launch_general<Rule>(k[i & 1], B);
    else launch_other<Rule>(k[i & 1], B);
  };
  const std::size_t no = std::size_t(B) * T_ * H * V, ns = std::size_t(B) * H * K * V;
  auto outputs = [&](auto&& f) {
    CK(cudaMemset(x[0].o, 0xff, no * sizeof(T)));  // NaN: an output the kernel skipped shows
    f(0);
    CK(cudaDeviceSynchronize());
    return std::pair{to_host(x[0].o, no), to_host(x[0].s1, ns)};
  };
  const auto [o_new, s_new] = outputs(fresh);
  const auto [o_exa, s_exa] = outputs(exact);
  const auto [o_old, s_old] = outputs(old);
  const auto [o_oth, s_oth] = outputs(other);
  double ref_o_new = -1, ref_s_new = -1, ref_o_old = -1, ref_s_old = -1, ref_o_exa = -1, ref_s_exa = -1;
  if (B * T_ <= 1024) {  // small shapes: SPEC §5's distances from the float64 recurrence (bound 1e-2 for 16-bit inputs)
    const auto [o_ref, s_ref] = reference_outputs<Rule>(x[0], initial_state);
    ref_o_new = rel_distance(o_new, o_ref), ref_s_new = rel_distance(s_new, s_ref);
    ref_o_exa = rel_distance(o_exa, o_ref), ref_s_exa = rel_distance(s_exa, s_ref);
    ref_o_old = rel_distance(o_old, o_ref), ref_s_old = rel_distance(s_old, s_ref);
  }
  const bool finite = all_finite(o_new) && all_finite(s_new) && all_finite(o_exa) && all_finite(s_exa);
  const bool same = o_new == o_old && s_new == s_old;  // bit for bit (every value finite or the check fails anyway)
  const bool pass = verdict(same, finite, ref_o_new, ref_s_new, ref_o_exa, ref_s_exa);
  double t_new = 1e30, t_exa = 1e30, t_old = 1e30, t_oth = 1e30;
  const bool long_call = B * T_ > 8 * 4096;  // fewer calls: 10-30 ms each
  for (int round = 0; timed && round < (long_call ? 2 : 3); ++round) {
    t_new = std::min(t_new, long_call ? time_ms(fresh, 3, 5, 1) : time_ms(fresh));
    t_exa = std::min(t_exa, long_call ? time_ms(exact, 3, 5, 1) : time_ms(exact));
    t_old = std::min(t_old, long_call ? time_ms(old, 3, 5, 1) : time_ms(old));
    t_oth = std::min(t_oth, long_call ? time_ms(other, 3, 5, 1) : time_ms(other));
  }
  const double tb = min_bytes<Rule>(B, T_) / (t_new * 1e-3) / 1e12;
  std::printf("{\"kind\":\"pipeline_ab\",\"rule\":\"%s\",\"B\":%ld,\"T\":%ld,\"K\":%ld,\"initial_state\":%s,"
              "\"gates\":\"%s\",\"pass\":%s,\"new_ms\":%.4f,\"exact_ms\":%.4f,\"old_ms\":%.4f,\"other_ms\":%.4f,"
              "\"new_tbps\":%.3f,\"finite\":%s,\"new_bit_identical_old\":%s,\"o_new_old\":%.2e,\"state_new_old\":%.2e,"
              "\"o_exact_old\":%.2e,\"state_exact_old\":%.2e,\"o_new_other\":%.2e,\"state_new_other\":%.2e,"
              "\"ref_o_new\":%.2e,\"ref_state_new\":%.2e,\"ref_o_exact\":%.2e,\"ref_state_exact\":%.2e,"
              "\"ref_o_old\":%.2e,\"ref_state_old\":%.2e}\n",
              rule_name<Rule>::value, long(B), long(T_), long(K), initial_state ? "true" : "false",
              gates == extreme_gates ? "extreme" : gates == mixed_gates ? "mixed" : "ordinary", pass ? "true" : "false",
              t_new, t_exa, t_old, t_oth, tb, finite ? "true" : "false", same ? "true" : "false",
              rel_distance(o_new, o_old), rel_distance(s_new, s_old), rel_distance(o_exa, o_old),
              rel_distance(s_exa, s_old), rel_distance(o_new, o_oth), rel_distance(s_new, s_oth), ref_o_new, ref_s_new,
              ref_o_exa, ref_s_exa, ref_o_old, ref_s_old);
  std::fflush(stdout);
  free_inputs(x[0]), free_inputs(x[1]);
}

// pk18: what the gates' staging changed, new against old and both against the float64 recurrence, untimed:
// in-kernel gates (gk raw logits, A_log, a dt_bias per key channel, with and without the lower bound) and gates
// cp.async cannot read (gk, and gdn2's b and — pk19 — w, one element past a 16-byte boundary: the stagings'
// element-by-element copies). 2 × 150 with an initial state (a partial last chunk). pk19: derived (pko: exact) too,
// at K = 128 and 72 (old: pko's, see launch_pipeline).
template <class Rule>
void features_ab(bool gated, bool misaligned, bool lower_bound) {
  const index_t B = 2, T_ = 150;
  inputs x = make_inputs(B, T_, 300, false, ordinary_gates);
  fill_state<<<2048, 256>>>(x.s0, std::int64_t(B * H * K * V), 11);
  arguments<T, float> a = make_args<Rule>(x, true);
  const std::size_t nk = std::size_t(B) * T_ * H * K;
  std::vector<float> A(H), dt(H * K);
  for (index_t h = 0; h < H; ++h) A[h] = std::log(0.5f + 0.1f * float(h % 5));
  for (index_t i = 0; i < H * K; ++i) dt[i] = 0.02f * float(i % 11) - 0.1f;
  float *A_d = nullptr, *dt_d = nullptr;
  T *gk_shift = nullptr, *b_shift = nullptr, *w_shift = nullptr;
  gate_activation host_gate;
  if (gated) {
    CK(cudaMalloc(&A_d, H * sizeof(float))), CK(cudaMalloc(&dt_d, H * K * sizeof(float)));
    CK(cudaMemcpy(A_d, A.data(), H * sizeof(float), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dt_d, dt.data(), H * K * sizeof(float), cudaMemcpyHostToDevice));
    fill_kernel<<<2048, 256>>>(x.gk, std::int64_t(nk), 55, fill::normal);  // raw logits
    a.gate.A_log = contiguous<1>(static_cast<const float*>(A_d), {H});
    a.gate.dt_bias = contiguous<1>(static_cast<const float*>(dt_d), {H * K});
    host_gate.A_log = contiguous<1>(static_cast<const float*>(A.data()), {H});
    host_gate.dt_bias = contiguous<1>(static_cast<const float*>(dt.data()), {H * K});
    if (lower_bound) a.gate.lower_bound = host_gate.lower_bound = -5.f;
  }
  if (misaligned) {  // the same values one element further on: rows no longer 16-byte aligned
    CK(cudaMalloc(&gk_shift, (nk + 8) * sizeof(T))), CK(cudaMalloc(&b_shift, (nk + 8) * sizeof(T)));
    CK(cudaMemcpy(gk_shift + 1, x.gk, nk * sizeof(T), cudaMemcpyDeviceToDevice));
    CK(cudaMemcpy(b_shift + 1, x.b, nk * sizeof(T), cudaMemcpyDeviceToDevice));
    a.gk = contiguous<4>(static_cast<const T*>(gk_shift + 1), {B, T_, H, K});
    if constexpr (reads(Rule::inputs, input::b)) a.b = contiguous<4>(static_cast<const T*>(b_shift + 1), {B, T_, H, K});
    if constexpr (reads(Rule::inputs, input::w)) {  // (pk19: gdn2's w staged by the consumers, element by element here)
      const std::size_t nv = std::size_t(B) * T_ * H * V;
      CK(cudaMalloc(&w_shift, (nv + 8) * sizeof(T)));
      CK(cudaMemcpy(w_shift + 1, x.w, nv * sizeof(T), cudaMemcpyDeviceToDevice));
      a.w = contiguous<4>(static_cast<const T*>(w_shift + 1), {B, T_, H, V});
    }
  }
  CK(cudaDeviceSynchronize());
  const problem p = validate_chunkwise<Rule, read::identity>(a);
  const cuda_detail::kernel_args<T> k = cuda_detail::make_kernel_args(a, p);
  const std::size_t no = std::size_t(B) * T_ * H * V, ns = std::size_t(B) * H * K * V;
  auto outputs = [&](int variant) {
    CK(cudaMemset(x.o, 0xff, no * sizeof(T)));  // NaN: an output the kernel skipped shows
    if (variant == 0) launch_pipeline<Rule, 0>(k, B);
    else if (variant == 1) launch_pipeline<Rule, 1>(k, B);
    else launch_pipeline<Rule, 2>(k, B);
    CK(cudaDeviceSynchronize());
    return std::pair{to_host(x.o, no), to_host(x.s1, ns)};
  };
  const auto [o_new, s_new] = outputs(1);
  const auto [o_exa, s_exa] = outputs(2);
  const auto [o_old, s_old] = outputs(0);
  const auto [o_ref, s_ref] = reference_outputs<Rule>(x, true, host_gate);  // (x's gk: the same values as a.gk)
  double max_o = 0;
  for (std::size_t i = 0; i < o_new.size(); ++i) max_o = std::max(max_o, double(std::fabs(o_new[i] - o_old[i])));
  const bool finite = all_finite(o_new) && all_finite(s_new) && all_finite(o_exa) && all_finite(s_exa);
  const bool same = o_new == o_old && s_new == s_old;
  const double ref_o_new = rel_distance(o_new, o_ref), ref_s_new = rel_distance(s_new, s_ref);
  const double ref_o_exa = rel_distance(o_exa, o_ref), ref_s_exa = rel_distance(s_exa, s_ref);
  const bool pass = verdict(same, finite, ref_o_new, ref_s_new, ref_o_exa, ref_s_exa);
  std::printf("{\"kind\":\"features_ab\",\"rule\":\"%s\",\"K\":%ld,\"gated\":%s,\"lower_bound\":%s,"
              "\"misaligned_gates\":%s,\"pass\":%s,\"finite\":%s,\"new_bit_identical_old\":%s,\"o_new_old\":%.2e,"
              "\"o_new_old_max_abs\":%.2e,\"state_new_old\":%.2e,\"o_exact_old\":%.2e,\"ref_o_new\":%.2e,"
              "\"ref_state_new\":%.2e,\"ref_o_exact\":%.2e,\"ref_state_exact\":%.2e,\"ref_o_old\":%.2e,"
              "\"ref_state_old\":%.2e}\n",
              rule_name<Rule>::value, long(K), gated ? "true" : "false", lower_bound ? "true" : "false",
              misaligned ? "true" : "false", pass ? "true" : "false", finite ? "true" : "false", same ? "true" : "false",
              rel_distance(o_new, o_old), max_o, rel_distance(s_new, s_old), rel_distance(o_exa, o_old), ref_o_new,
              ref_s_new, ref_o_exa, ref_s_exa, rel_distance(o_old, o_ref), rel_distance(s_old, s_ref));
  std::fflush(stdout);
  for (void* q : {(void*)A_d, (void*)dt_d, (void*)gk_shift, (void*)b_shift, (void*)w_shift}) if (q) CK(cudaFree(q));
  free_inputs(x);
}

// pko: the strips' layouts, old against new bit for bit over the whole output buffers (poisoned first, so that a
// store past the view, or one missing, shows): 2 × 150 with an initial state (a partial last chunk), ordinary gates.
//   0 contiguous o, and the residual (erasing rules: the strip of u; gla copies v itself)
//   1 head-first o ([B, H, T, V] in memory: rows still contiguous and aligned, full sectors)
//   2 o one element past a 16-byte boundary (the pairs' fallback, 2-byte stores where unaligned)
//   3 o with column stride 2 (the pairs' element stores)
//   4 V = 100 in rows of 104 (v, w, o, residual): the last 16-byte piece of a row partly past Vw, stored by elements
enum output_layout : int { plain_with_residual, head_first, misaligned_o, column_stride_2, narrow_padded_v };
template <class Rule>
void outputs_ab(int layout) {
  const index_t B = 2, T_ = 150, Vl = layout == narrow_padded_v ? 100 : 128, VS = layout == narrow_padded_v ? 104 : 128;
  V = VS;
  inputs x = make_inputs(B, T_, 400, false, ordinary_gates);
  fill_state<<<2048, 256>>>(x.s0, std::int64_t(B * H * K * V), 13);
  V = 128;
  arguments<T, float> a = make_args<Rule>(x, true);
  const std::size_t span = std::size_t(B) * T_ * H * VS * 2 + 8;  // room for column stride 2 and the shift
  T *o_buf = nullptr, *r_buf = nullptr;
  CK(cudaMalloc(&o_buf, span * sizeof(T))), CK(cudaMalloc(&r_buf, span * sizeof(T)));
  const std::array<index_t, 4> ext{B, T_, H, Vl}, rows{T_ * H * VS, H * VS, VS, 1};
  a.o = strided<4>(o_buf, ext, rows);
  if (layout == head_first) a.o = strided<4>(o_buf, ext, {T_ * H * VS, VS, T_ * VS, 1});
  if (layout == misaligned_o) a.o = strided<4>(o_buf + 1, ext, rows);
  if (layout == column_stride_2) a.o = strided<4>(o_buf, ext, {2 * T_ * H * VS, 2 * H * VS, 2 * VS, 2});
  if (layout == narrow_padded_v) {
    a.v = strided<4>(static_cast<const T*>(x.v), ext, rows);
    if constexpr (reads(Rule::inputs, input::w)) a.w = strided<4>(static_cast<const T*>(x.w), ext, rows);
    a.initial_state = contiguous<4>(static_cast<const float*>(x.s0), {B, H, K, Vl});
    a.final_state = contiguous<4>(x.s1, {B, H, K, Vl});
  }
  const bool residual = layout == plain_with_residual || layout == narrow_padded_v;
  if (residual) a.residual = strided<4>(r_buf, ext, rows);
  const problem p = validate_chunkwise<Rule, read::identity>(a);
  const cuda_detail::kernel_args<T> k = cuda_detail::make_kernel_args(a, p);
  const std::size_t ns = std::size_t(B) * H * K * Vl;
  auto outputs = [&](int variant) {
    CK(cudaMemset(o_buf, 0xff, span * sizeof(T))), CK(cudaMemset(r_buf, 0xff, span * sizeof(T)));  // NaN
    if (variant == 0) launch_pipeline<Rule, 0>(k, B);
    else launch_pipeline<Rule, 1>(k, B);
    CK(cudaDeviceSynchronize());
    std::vector<std::uint16_t> o(span), r(span);
    CK(cudaMemcpy(o.data(), o_buf, span * sizeof(T), cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(r.data(), r_buf, span * sizeof(T), cudaMemcpyDeviceToHost));
    return std::tuple{o, r, to_host(x.s1, ns)};
  };
  const auto [o_new, r_new, s_new] = outputs(1);
  const auto [o_old, r_old, s_old] = outputs(0);
  // every element of the views written (not the poison's NaN), by old and new alike
  std::size_t unwritten = 0;
  for (index_t b = 0; b < B; ++b)
    for (index_t t = 0; t < T_; ++t)
      for (index_t h = 0; h < H; ++h)
        for (index_t j = 0; j < Vl; ++j) {
          const std::size_t at = std::size_t(a.o.row(b, t, h) + j * a.o.str[3] - o_buf);  // (addresses only)
          unwritten += o_new[at] == 0xffff;
          if (residual) unwritten += r_new[std::size_t(a.residual.row(b, t, h) + j - r_buf)] == 0xffff;
        }
  const bool same = o_new == o_old && r_new == r_old && s_new == s_old;
  const bool pass = same && unwritten == 0;
  failures += !pass;
  std::printf("{\"kind\":\"outputs_ab\",\"rule\":\"%s\",\"layout\":%d,\"V\":%ld,\"residual\":%s,\"pass\":%s,"
              "\"new_bit_identical_old\":%s,\"unwritten\":%zu}\n",
              rule_name<Rule>::value, layout, long(Vl), residual ? "true" : "false", pass ? "true" : "false",
              same ? "true" : "false", unwritten);
  std::fflush(stdout);
  CK(cudaFree(o_buf)), CK(cudaFree(r_buf));
  free_inputs(x);
}

// pko: one launch of old and of new at 8×4096 (ordinary gates, no initial state), for ncu's store sectors.
template <class Rule>
void once() {
  inputs x = make_inputs(8, 4096, 100);
  const arguments<T, float> a = make_args<Rule>(x, false);
  const cuda_detail::kernel_args<T> k = cuda_detail::make_kernel_args(a, validate_chunkwise<Rule, read::identity>(a));
  launch_pipeline<Rule, 0>(k, 8);
  launch_pipeline<Rule, 1>(k, 8);
  CK(cudaDeviceSynchronize());
  free_inputs(x);
}

}  // namespace

int main(int argc, char** argv) {
  bool long_shapes = true, variants = false, check = false, gla_long = false, lib = false, one = false;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--short")) long_shapes = false;
    if (!std::strcmp(argv[i], "--variants")) variants = true;
    if (!std::strcmp(argv[i], "--check")) check = true;  // small shapes only (for compute-sanitizer)
    if (!std::strcmp(argv[i], "--gla-long")) gla_long = true;  // gla's library path at 2×16384 and 1×32768 only
    if (!std::strcmp(argv[i], "--lib")) lib = true;  // pko: the library's path at 8×4096 alone
    if (!std::strcmp(argv[i], "--once")) one = true;  // pko: one launch of old and new a rule (ncu)
  }
  try {
    cudaDeviceProp prop{};
    CK(cudaGetDeviceProperties(&prop, 0));
    const double copy = copy_tbps();
    std::printf("{\"kind\":\"device\",\"name\":\"%s\",\"sms\":%d,\"copy_tbps\":%.3f}\n", prop.name,
                prop.multiProcessorCount, copy);
    std::fflush(stdout);
    if (one) return once<kda>(), once<gdn2>(), once<gla>(), 0;
    if (lib) {
      for (int round = 0; round < 3; ++round) rows_at<kda>(8, 4096, copy, false), rows_at<gdn2>(8, 4096, copy, false),
                                                rows_at<gla>(8, 4096, copy, false);
      return 0;
    }
    if (gla_long) {  // (pk18: the cost model's pieces on the faster kernel)
      rows_at<gla>(2, 16384, copy);
      rows_at<gla>(1, 32768, copy);
      return 0;
    }
    if (check) {  // small: a tail, an initial state, extreme and mixed gates; K = 128, then K = 72 (pk19)
      // PERKEY_CHECK=sanitize: a quarter of the cases (compute-sanitizer's racecheck of all of them would pass
      // device_call.sh's 150 s): every kernel path once — ordinary and mixed chunks, K = 72, in-kernel and
      // misaligned gates
      const char* subset = std::getenv("PERKEY_CHECK");
      const bool all = !(subset && !std::strcmp(subset, "sanitize"));
      for (const index_t k_width : {index_t(128), index_t(72)}) {
        K = k_width;
        for (const int gates : {ordinary_gates, extreme_gates, mixed_gates}) {
          if (!all && (gates == extreme_gates || (K != 128 && gates == ordinary_gates))) continue;
          pipeline_ab<kda>(2, 150, true, gates, false);
          pipeline_ab<gdn2>(2, 150, true, gates, false);
          pipeline_ab<gla>(2, 150, true, gates, false);
        }
        for (const int gates : {ordinary_gates, extreme_gates, mixed_gates}) {  // (no initial state)
          if (!all && (K != 128 || gates != extreme_gates)) continue;
          pipeline_ab<kda>(1, 333, false, gates, false);
          pipeline_ab<gdn2>(1, 333, false, gates, false);
          pipeline_ab<gla>(1, 333, false, gates, false);
        }
        for (const auto& [gated, misaligned, lb] : {std::tuple{true, false, false}, {true, false, true},
                                                    {false, true, false}, {true, true, true}}) {
          if (!all && (K == 128 || !(gated && misaligned))) continue;
          features_ab<kda>(gated, misaligned, lb);
          features_ab<gdn2>(gated, misaligned, lb);
          features_ab<gla>(gated, misaligned, lb);
        }
      }
      K = 128;
      for (const int layout : {plain_with_residual, head_first, misaligned_o, column_stride_2, narrow_padded_v}) {
        if (!all && layout != narrow_padded_v && layout != plain_with_residual) continue;
        outputs_ab<kda>(layout);
        outputs_ab<gdn2>(layout);
        outputs_ab<gla>(layout);
      }
      std::printf("{\"kind\":\"check_summary\",\"failures\":%d}\n", failures);
      return failures ? 2 : 0;
    }
    for (const auto& [B, T_] : {std::pair<index_t, index_t>{8, 4096}, {1, 32768}}) {
      if (B != 8 && !long_shapes) continue;
      for (const int gates : {ordinary_gates, extreme_gates}) {
        pipeline_ab<kda>(B, T_, false, gates);
        pipeline_ab<gdn2>(B, T_, false, gates);
        pipeline_ab<gla>(B, T_, false, gates);
      }
    }
    for (const auto& [B, T_] : {std::pair<index_t, index_t>{8, 4096}, {2, 16384}, {1, 32768}}) {
      if (B != 8 && !long_shapes) continue;
      rows_at<kda>(B, T_, copy);
      rows_at<gdn2>(B, T_, copy);
      rows_at<gla>(B, T_, copy);
    }
    for (const int gates : {ordinary_gates, extreme_gates}) {  // (2×333: a tail, an initial state)
      pipeline_ab<gla>(2, 333, true, gates);
      pipeline_ab<kda>(2, 333, true, gates);
      pipeline_ab<gdn2>(2, 333, true, gates);
    }
    if (variants) forward_variants<gla>(), forward_variants<kda>();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "perkey_delta_ab: %s\n", e.what());
    return 1;
  }
  return 0;
}
