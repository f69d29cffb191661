// bench/cuda/segments_bench.cu — CUDA-event timings of intra-sequence parallelism (backend/cuda/segments.hpp) and of
// context parallelism with simulated ranks (segments/context_parallel.hpp), H = HV = 16, K = V = 128, bf16 inputs,
// fp32 states, final state written:
//
//   long   every rule at 8×4096, 2×16384, 1×32768 and packed (one 32768 + 63 × 512): whole (segment_tokens = 0),
//          automatic (the cost model's piece, printed), and fixed pieces of 2048 and 4096 tokens;
//   cp     gated_delta and simple_gla at T = 262144 and 1048576: one GPU whole and automatic, and the work of one
//          rank of R = 2, 4, 8 (rank R-2 when R > 2: passes A and M, the combine over R-2 links, pass C) through a
//          loopback transport — what each GPU of R would do, without NCCL's time; bytes sent per rank.
//   sweep  every rule but gdn2 at 1×32768 and 2×16384 over segment_tokens 0, 512, 1024, 2048, 4096, 8192 and the
//          automatic choice (the piece it takes printed);
//   ccq    every rule at 8×4096, the identity read and CCQ (uniform weighting, C, m, z written): ms and the ratio;
//   ab     simple_gla and gla at 8×4096, 2×16384, 1×32768 and packed: pass M from the decay sums (the library's) against
//          the general pass M (main 861c7ef's), interleaved, pieces 512 .. 8192, the automatic choices (this tree's and
//          main's model), and pass M alone at 1×32768 in pieces of 2048 and 4096;
//   passa  linear_attn, simple_gla and gla at 1×32768, 2×16384, packed and 8×4096: pass A by slabs (the library's,
//          piece_state_kernel.hpp) against the chunk kernel's pass A (main d94ad0e's), interleaved, pieces 1024 .. 8192
//          and the automatic choices (this tree's and main's model); the whole call and the library's automatic one;
//   states delta, gated_delta, kda and gdn2 at 1×32768, 2×16384, packed and 8×4096: passes A and M for their final
//          states alone (the library's, kernel_args::states_only) against passes that write o (main d94ad0e's),
//          interleaved through segments::forward on one plan and scratch, pieces 1024 .. 8192; the library's call
//          whole and automatic beside them; and pass A, pass M and the combine alone at 1×32768 in pieces of 4096;
//   seg16  linear_attn, simple_gla and gla at 1×32768, 2×16384, packed and 8×4096: the library's pass A (seg16's
//          piece_state_kernel and reduce, slabs for 6 CTAs an SM) against main 430ab74's (piece_state_v0.hpp) and
//          against the library's with pass M on its own launch (unfused) and with slabs for 3, 9, 12 and 18 CTAs an
//          SM, interleaved through segments::forward on one plan and scratch, pieces 1024 .. 8192 and the automatic
//          choices (this tree's and main's model); the whole and the library's call; at 1×32768 and 2×16384 in pieces
//          of 2048 and 4096 the passes alone (A — with M where the variant fuses it — for each variant, M on its own
//          launch, the combine, C);
//   gdn2   gdn2 as `long` (whole, automatic, 2048, 4096 at the four shapes);
//   once16 one call each (after a warm-up call) of linear_attn, simple_gla and gla at 1×32768 in pieces of 4096, for
//          ncu's view of pass A's kernels;
//   once   one call of each configuration ncu is asked to split into kernels (after one warm-up call each; the
//          configurations are named on stderr): linear_attn and gated_delta 8×4096 identity and CCQ, gated_delta,
//          linear_attn and gla 1×32768 in pieces of 4096 and 2048.
//
// Prints one JSON object per line. Figures: median over repeats of the mean of back-to-back calls, after warm-up.
#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <functional>
#include <cstdio>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include <linea/cuda.hpp>

#include "ab_common.hpp"
#include "piece_state_v0.hpp"

using namespace linea;
using T = bf16;

#define CK(x) linea::cuda_detail::check((x), #x)

namespace {

enum class fill { normal, logsigmoid, sigmoid, unit };
__global__ void fill_kernel(T* p, std::int64_t n, std::uint32_t seed, fill kind, int D) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const float z = linea_bench::hash_normal(i, seed);  // N(0, 1)
    float x = z;
    if (kind == fill::logsigmoid) x = -log1pf(expf(-z));
    if (kind == fill::sigmoid) x = 1.f / (1.f + expf(-z));
    if (kind == fill::unit) x = z * rsqrtf(static_cast<float>(D));  // keys of norm ≈ 1
    p[i] = linea::cuda_detail::from_float<T>(x);
  }
}
template <class X>
X* dalloc(std::size_t n) {
  X* p = nullptr;
  CK(cudaMalloc(&p, std::max<std::size_t>(n, 1) * sizeof(X)));
  return p;
}
T* random_tensor(std::size_t n, std::uint32_t seed, fill kind, int D = 1) {
  T* p = dalloc<T>(n);
  fill_kernel<<<4096, 256>>>(p, static_cast<std::int64_t>(n), seed, kind, D);
  CK(cudaGetLastError());
  return p;
}

constexpr index_t H = 16, K = 128, V = 128;

// One pool of inputs for `tokens` tokens; a call views its first B·T of them.
struct pool {
  index_t tokens;
  T *q, *k, *v, *g, *gk, *beta, *b, *w, *o, *lam;
  float* state;
  explicit pool(index_t n) : tokens(n) {
    q = random_tensor(n * H * K, 1, fill::normal), k = random_tensor(n * H * K, 2, fill::unit, K);
    v = random_tensor(n * H * V, 3, fill::normal), g = random_tensor(n * H, 4, fill::logsigmoid);
    gk = random_tensor(n * H * K, 5, fill::logsigmoid), beta = random_tensor(n * H, 6, fill::sigmoid);
    b = random_tensor(n * H * K, 7, fill::sigmoid), w = random_tensor(n * H * V, 8, fill::sigmoid);
    o = dalloc<T>(n * H * V), lam = random_tensor(n * H, 9, fill::sigmoid);
    state = dalloc<float>(64 * H * K * V);
    CK(cudaDeviceSynchronize());
  }
};

template <class Rule>
arguments<T, float> make_args(const pool& x, index_t B, index_t T_, index_t t0 = 0, index_t states = -1) {
  arguments<T, float> a;
  const auto at = [&](T* p, index_t d) { return static_cast<const T*>(p) + t0 * H * d; };
  a.q = contiguous<4>(at(x.q, K), {B, T_, H, K});
  a.k = contiguous<4>(at(x.k, K), {B, T_, H, K});
  a.v = contiguous<4>(at(x.v, V), {B, T_, H, V});
  if constexpr (reads(Rule::inputs, input::g)) a.g = contiguous<3>(at(x.g, 1), {B, T_, H});
  if constexpr (reads(Rule::inputs, input::gk)) a.gk = contiguous<4>(at(x.gk, K), {B, T_, H, K});
  if constexpr (reads(Rule::inputs, input::beta)) a.beta = contiguous<3>(at(x.beta, 1), {B, T_, H});
  if constexpr (reads(Rule::inputs, input::b | input::w)) {
    a.b = contiguous<4>(at(x.b, K), {B, T_, H, K});
    a.w = contiguous<4>(at(x.w, V), {B, T_, H, V});
  }
  a.o = contiguous<4>(x.o + t0 * H * V, {B, T_, H, V});
  a.final_state = contiguous<4>(x.state, {states < 0 ? B : states, H, K, V});
  return a;
}

double host_us = 0;
template <class F>
double time_ms(F&& f, int calls = 5, int repeats = 5, int warmup = 2) {
  for (int i = 0; i < warmup; ++i) f();
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  std::vector<double> t, h;
  for (int r = 0; r < repeats; ++r) {
    CK(cudaEventRecord(e0));
    const auto h0 = std::chrono::steady_clock::now();
    for (int i = 0; i < calls; ++i) f();
    h.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - h0).count() / calls);
    CK(cudaEventRecord(e1));
    CK(cudaEventSynchronize(e1));
    float ms = 0;
    CK(cudaEventElapsedTime(&ms, e0, e1));
    t.push_back(ms / calls);
  }
  CK(cudaEventDestroy(e0));
  CK(cudaEventDestroy(e1));
  std::sort(t.begin(), t.end());
  std::sort(h.begin(), h.end());
  host_us = h[h.size() / 2];
  return t[t.size() / 2];
}

template <class Rule>
void long_shapes(const pool& x) {
  struct shape {
    const char* name;
    index_t B, T_;
    bool varlen;
  };
  std::vector<std::int64_t> cu{0, 32768};
  for (int i = 0; i < 63; ++i) cu.push_back(cu.back() + 512);
  for (const shape s : {shape{"8x4096", 8, 4096, false}, shape{"2x16384", 2, 16384, false},
                        shape{"1x32768", 1, 32768, false}, shape{"32768+63x512", 1, cu.back(), true}}) {
    arguments<T, float> a = make_args<Rule>(x, s.B, s.T_, 0, s.varlen ? 64 : -1);
    if (s.varlen) a.cu_seqlens = cu;
    const problem p = validate<Rule, read::identity>(a);
    const index_t tokens = s.B * s.T_;
    const index_t automatic = cuda_detail::piece_length<Rule>(a, segments::sequence_starts(a, p), p, cuda::launch{},
                                                              cuda_detail::current_device());
    for (const std::int64_t piece : {std::int64_t(0), std::int64_t(-1), std::int64_t(2048), std::int64_t(4096)}) {
      if (piece > 0 && s.T_ <= 4096 && !s.varlen) continue;
      const cuda::launch l{.segment_tokens = piece};
      const double ms = time_ms([&] { linea::chunkwise<Rule, read::identity, backend::cuda>(a, l); });
      std::printf("{\"kind\":\"long\",\"rule\":\"%s\",\"shape\":\"%s\",\"segment_tokens\":%ld,\"piece\":%ld,\"ms\":%.4f,"
                  "\"ns_per_token\":%.3f,\"host_us\":%.1f}\n",
                  rule_name<Rule>::value, s.name, long(piece), long(piece < 0 ? automatic : piece), ms,
                  ms * 1e6 / double(tokens), host_us);
      std::fflush(stdout);
    }
  }
}

// The CCQ read's arguments on top of make_args: λ in (0, 1), the statistics C, m, z written (uniform weighting).
struct ccq_outputs {
  float *C, *m, *z;
  explicit ccq_outputs(index_t B) : C(dalloc<float>(B * H * K * K)), m(dalloc<float>(B * H * K)), z(dalloc<float>(B * H)) {}
};
template <class Rule>
arguments<T, float> make_ccq_args(const pool& x, const ccq_outputs& s, index_t B, index_t T_) {
  arguments<T, float> a = make_args<Rule>(x, B, T_);
  a.ccq.lambda = contiguous<3>(static_cast<const T*>(x.lam), {B, T_, H});
  a.ccq.C = contiguous<4>(s.C, {B, H, K, K});
  a.ccq.m = contiguous<3>(s.m, {B, H, K});
  a.ccq.z = contiguous<2>(s.z, {B, H});
  return a;
}

// 8×4096: the identity read and CCQ on the same inputs.
template <class Rule>
void ccq_shapes(const pool& x, const ccq_outputs& s) {
  constexpr index_t B = 8, T_ = 4096;
  const arguments<T, float> a = make_args<Rule>(x, B, T_), c = make_ccq_args<Rule>(x, s, B, T_);
  const double id = time_ms([&] { linea::chunkwise<Rule, read::identity, backend::cuda>(a); }, 10, 7, 3);
  const double cq = time_ms([&] { linea::chunkwise<Rule, read::ccq<read::uniform>, backend::cuda>(c); }, 10, 7, 3);
  std::printf("{\"kind\":\"ccq\",\"rule\":\"%s\",\"shape\":\"8x4096\",\"identity_ms\":%.4f,\"ccq_ms\":%.4f,\"ratio\":%.3f,"
              "\"ccq_minus_identity_ms\":%.4f}\n",
              rule_name<Rule>::value, id, cq, cq / id, cq - id);
  std::fflush(stdout);
}

// segment_tokens swept at one long sequence and two half-long ones.
template <class Rule>
void sweep_shapes(const pool& x) {
  for (const auto [B, T_] : {std::pair<index_t, index_t>{1, 32768}, std::pair<index_t, index_t>{2, 16384}}) {
    const arguments<T, float> a = make_args<Rule>(x, B, T_);
    const problem p = validate<Rule, read::identity>(a);
    const index_t automatic = cuda_detail::piece_length<Rule>(a, segments::sequence_starts(a, p), p, cuda::launch{},
                                                              cuda_detail::current_device());
    for (const std::int64_t piece : {0, 512, 1024, 2048, 4096, 8192, -1}) {
      const cuda::launch l{.segment_tokens = piece};
      const double ms = time_ms([&] { linea::chunkwise<Rule, read::identity, backend::cuda>(a, l); });
      std::printf("{\"kind\":\"sweep\",\"rule\":\"%s\",\"shape\":\"%ldx%ld\",\"segment_tokens\":%ld,\"piece\":%ld,"
                  "\"ms\":%.4f,\"ns_per_token\":%.3f}\n",
                  rule_name<Rule>::value, long(B), long(T_), long(piece), long(piece < 0 ? automatic : piece), ms,
                  ms * 1e6 / double(B * T_));
      std::fflush(stdout);
    }
  }
}

// One call of a configuration after one warm-up call, synchronised, named on stderr (ncu's per-kernel split).
template <class F>
void once(const char* name, F&& f) {
  f();
  CK(cudaDeviceSynchronize());
  std::fprintf(stderr, "once: %s\n", name);
  f();
  CK(cudaDeviceSynchronize());
}
template <class Rule>
void once_ccq(const pool& x, const ccq_outputs& s) {
  const arguments<T, float> a = make_args<Rule>(x, 8, 4096), c = make_ccq_args<Rule>(x, s, 8, 4096);
  once(rule_name<Rule>::value, [&] { linea::chunkwise<Rule, read::identity, backend::cuda>(a); });
  once(rule_name<Rule>::value, [&] { linea::chunkwise<Rule, read::ccq<read::uniform>, backend::cuda>(c); });
}
template <class Rule>
void once_long(const pool& x) {
  const arguments<T, float> a = make_args<Rule>(x, 1, 32768);
  for (const std::int64_t piece : {4096, 2048})
    once(rule_name<Rule>::value, [&] { linea::chunkwise<Rule, read::identity, backend::cuda>(a, {.segment_tokens = piece}); });
}

void device_copy(void* dst, const void* src, std::size_t n) { CK(cudaMemcpyAsync(dst, src, n, cudaMemcpyDeviceToDevice, nullptr)); }

template <class Rule>
void context_parallel_shapes(const pool& x) {
  for (const index_t T_ : {index_t(262144), index_t(1048576)}) {
    if (T_ > x.tokens) continue;
    arguments<T, float> whole = make_args<Rule>(x, 1, T_);
    const double one = time_ms([&] { linea::chunkwise<Rule, read::identity, backend::cuda>(whole, {.segment_tokens = 0}); }, 1, 3, 1);
    const double autom = time_ms([&] { linea::chunkwise<Rule, read::identity, backend::cuda>(whole); }, 2, 3, 1);
    std::printf("{\"kind\":\"cp\",\"rule\":\"%s\",\"T\":%ld,\"ranks\":1,\"whole_ms\":%.3f,\"segmented_ms\":%.3f}\n",
                rule_name<Rule>::value, long(T_), one, autom);
    std::fflush(stdout);
    for (const int R : {2, 4, 8}) {
      const int r = R > 2 ? R - 2 : 0;  // the rank with the most work (rank R-1 skips passes A and M)
      const index_t L = T_ / R;
      arguments<T, float> shard = make_args<Rule>(x, 1, L, r * L);
      if (r != R - 1) shard.final_state = {};
      const problem p = validate<Rule, read::identity>(shard);
      cp::loopback t(r, R, device_copy);
      const double ms = time_ms([&] { context_parallel<Rule, read::identity, backend::cuda>(shard, t, cuda::launch{}); }, 2, 3, 1);
      const double best_one = std::min(one, autom);
      std::printf("{\"kind\":\"cp\",\"rule\":\"%s\",\"T\":%ld,\"ranks\":%d,\"rank\":%d,\"rank_ms\":%.3f,"
                  "\"speedup\":%.2f,\"efficiency\":%.2f,\"bytes_per_rank\":%zu}\n",
                  rule_name<Rule>::value, long(T_), R, r, ms, best_one / ms, best_one / ms / R,
                  cp::bytes_per_rank<Rule, float>(p));
      std::fflush(stdout);
    }
  }
}

// ---- --ab: pass M of the decay-only rules, the decay sums (the library's, decay_product_kernel.hpp) against the
// general pass M (the rule's chunk kernel with V = 1 from S_0 = 1: main 861c7ef's), both through segments::forward
// on the same plan and one preallocated scratch, interleaved in one process; the library's call
// (linea::chunkwise, which carves the cached workspace) beside them. Only this bench selects the general path.
struct general_pass_m_ops : cuda_detail::device_ops {
  using device_ops::device_ops;
  static constexpr bool sums_log_decays = false;
};

template <class Ops, class Rule>
std::size_t forward_scratch(const arguments<T, float>& a, const problem& p, const segments::plan& pl) {
  Ops counter(nullptr, cuda_detail::scratch_source::count, nullptr, 0);
  segments::forward<Rule>(counter, a, p, pl);
  return counter.carved_bytes();
}

// A then B, `calls` back-to-back calls each, `repeats` times after warm-up: the medians (ms per call).
template <class FA, class FB>
std::pair<double, double> time_ab(FA&& fa, FB&& fb, int calls = 5, int repeats = 7, int warmup = 2) {
  for (int i = 0; i < warmup; ++i) fa(), fb();
  cudaEvent_t e[3];
  for (auto& x : e) CK(cudaEventCreate(&x));
  std::vector<double> ta, tb;
  for (int r = 0; r < repeats; ++r) {
    CK(cudaEventRecord(e[0]));
    for (int i = 0; i < calls; ++i) fa();
    CK(cudaEventRecord(e[1]));
    for (int i = 0; i < calls; ++i) fb();
    CK(cudaEventRecord(e[2]));
    CK(cudaEventSynchronize(e[2]));
    float a = 0, b = 0;
    CK(cudaEventElapsedTime(&a, e[0], e[1]));
    CK(cudaEventElapsedTime(&b, e[1], e[2]));
    ta.push_back(a / calls), tb.push_back(b / calls);
  }
  for (auto& x : e) CK(cudaEventDestroy(x));
  std::sort(ta.begin(), ta.end());
  std::sort(tb.begin(), tb.end());
  return {ta[ta.size() / 2], tb[tb.size() / 2]};
}

// main 861c7ef's cost model for these rules (its calibrated_model), to print the piece main chose.
template <class Rule>
index_t main_choice(const std::vector<std::int64_t>& starts) {
  segments::cost_model m;
  if constexpr (std::is_same_v<Rule, gla>) m.slots = 132, m.units = 16, m.am_passes = 1.7, m.link = 20, m.fixed = 300;
  else m.slots = 264, m.units = 32, m.am_passes = 1, m.link = 70, m.fixed = 6000, m.m_passes = 2.7, m.m_units = 16;
  return segments::choose_piece(starts, m);
}

template <class Rule>
void ab_shapes(const pool& x) {
  struct shape {
    const char* name;
    index_t B, T_;
    bool varlen;
  };
  std::vector<std::int64_t> cu{0, 32768};
  for (int i = 0; i < 63; ++i) cu.push_back(cu.back() + 512);
  for (const shape s : {shape{"8x4096", 8, 4096, false}, shape{"2x16384", 2, 16384, false},
                        shape{"1x32768", 1, 32768, false}, shape{"32768+63x512", 1, cu.back(), true}}) {
    arguments<T, float> a = make_args<Rule>(x, s.B, s.T_, 0, s.varlen ? 64 : -1);
    if (s.varlen) a.cu_seqlens = cu;
    const problem p = validate<Rule, read::identity>(a);
    const std::vector<std::int64_t> starts = segments::sequence_starts(a, p);
    const index_t tokens = s.B * s.T_;
    const index_t automatic = cuda_detail::piece_length<Rule>(a, starts, p, cuda::launch{}, cuda_detail::current_device());
    const index_t main_auto = main_choice<Rule>(starts);
    const double whole = time_ms([&] { linea::chunkwise<Rule, read::identity, backend::cuda>(a, {.segment_tokens = 0}); });
    std::printf("{\"kind\":\"ab\",\"rule\":\"%s\",\"shape\":\"%s\",\"piece\":0,\"auto\":%ld,\"main_auto\":%ld,"
                "\"lib_ms\":%.4f,\"ns_per_token\":%.3f}\n",
                rule_name<Rule>::value, s.name, long(automatic), long(main_auto), whole, whole * 1e6 / double(tokens));
    std::fflush(stdout);
    for (const index_t piece : {index_t(512), index_t(1024), index_t(2048), index_t(4096), index_t(8192)}) {
      const segments::plan pl = segments::make_plan(starts, piece);
      if (!pl.cuts()) continue;
      const std::size_t bytes = std::max(forward_scratch<cuda_detail::device_ops, Rule>(a, p, pl),
                                         forward_scratch<general_pass_m_ops, Rule>(a, p, pl));
      void* buf = nullptr;
      CK(cudaMalloc(&buf, bytes));
      const auto sums = [&] {
        cuda_detail::device_ops ops(nullptr, cuda_detail::scratch_source::carve, buf, bytes);
        segments::forward<Rule>(ops, a, p, pl);
      };
      const auto general = [&] {
        general_pass_m_ops ops(nullptr, cuda_detail::scratch_source::carve, buf, bytes);
        segments::forward<Rule>(ops, a, p, pl);
      };
      const auto [t_sums, t_general] = time_ab(sums, general);
      const double lib = time_ms([&] { linea::chunkwise<Rule, read::identity, backend::cuda>(a, {.segment_tokens = piece}); });
      std::printf("{\"kind\":\"ab\",\"rule\":\"%s\",\"shape\":\"%s\",\"piece\":%ld,\"is_auto\":%d,\"is_main_auto\":%d,"
                  "\"lib_ms\":%.4f,\"sums_ms\":%.4f,\"general_ms\":%.4f,\"general_over_sums\":%.3f,\"ns_per_token\":%.3f}\n",
                  rule_name<Rule>::value, s.name, long(piece), int(piece == automatic), int(piece == main_auto), lib, t_sums,
                  t_general, t_general / t_sums, lib * 1e6 / double(tokens));
      std::fflush(stdout);
      // pass M alone on the first run of pieces (1×32768: every piece but the last)
      if (!std::strcmp(s.name, "1x32768") && (piece == 2048 || piece == 4096)) {
        const segments::run& r = pl.runs[0];
        const arguments<T, float> pa = segments::slice(segments::packed_arguments(a), r.t0, r.t1);
        const index_t L = r.t1 - r.t0;
        float* M = dalloc<float>(r.pieces() * H * K);
        T* zeros = dalloc<T>(H);
        CK(cudaMemset(zeros, 0, H * sizeof(T)));
        T* om = dalloc<T>(L * H);
        const view<float, 4> Mv = contiguous<4>(M, {r.pieces(), H, K, 1});
        const auto pass_m = [&](auto& ops, bool sum) {
          if (sum) ops.template decay_transitions<Rule>(pa, Mv, r.cu);
          else segments::transition_pass<Rule>(ops, pa, zeros, contiguous<4>(om, {1, L, H, 1}), Mv, r.cu);
        };
        cuda_detail::device_ops c1(nullptr, cuda_detail::scratch_source::count, nullptr, 0), c2(nullptr, cuda_detail::scratch_source::count, nullptr, 0);
        pass_m(c1, true), pass_m(c2, false);
        const std::size_t mb = std::max(c1.carved_bytes(), c2.carved_bytes());
        void* mbuf = dalloc<unsigned char>(mb);
        const auto [m_sums, m_general] = time_ab(
            [&] { cuda_detail::device_ops ops(nullptr, cuda_detail::scratch_source::carve, mbuf, mb); pass_m(ops, true); },
            [&] { cuda_detail::device_ops ops(nullptr, cuda_detail::scratch_source::carve, mbuf, mb); pass_m(ops, false); }, 10);
        std::printf("{\"kind\":\"pass_m\",\"rule\":\"%s\",\"shape\":\"%s\",\"piece\":%ld,\"pieces\":%ld,\"sums_ms\":%.4f,"
                    "\"general_ms\":%.4f,\"general_over_sums\":%.2f}\n",
                    rule_name<Rule>::value, s.name, long(piece), long(r.pieces()), m_sums, m_general, m_general / m_sums);
        std::fflush(stdout);
        CK(cudaDeviceSynchronize());
        cudaFree(M), cudaFree(zeros), cudaFree(om), cudaFree(mbuf);
      }
      CK(cudaDeviceSynchronize());
      cudaFree(buf);
    }
  }
}

// ---- --passa: pass A of the rules that only add (linear_attn, simple_gla, gla) as the slab reduction
// (piece_state_kernel.hpp, the library's) against main d94ad0e's pass A (the chunk kernel from zero), both through
// segments::forward on the same plan and one preallocated scratch, interleaved in one process; pieces 1024 .. 8192
// and the automatic choices of this tree's and main's cost model; the library's call and the whole (uncut) call.
struct chunk_pass_a_ops : cuda_detail::device_ops {
  using device_ops::device_ops;
  static constexpr bool reduces_piece_states = false;
};

// main d94ad0e's cost model for these rules (its calibrated_model, 16-bit inputs, H = 16, V = 128).
template <class Rule>
index_t main_passa_choice(const std::vector<std::int64_t>& starts) {
  segments::cost_model m;
  if constexpr (std::is_same_v<Rule, gla>) {
    m.slots = 132, m.units = 16, m.am_passes = 1.05, m.link = 20, m.fixed = 300;
  } else {
    m.slots = 264, m.units = 32, m.am_passes = std::is_same_v<Rule, simple_gla> ? 1.05 : 1.0, m.link = 70, m.fixed = 6000;
    m.min_saving = 0.10;
  }
  return segments::choose_piece(starts, m);
}

// The shapes --passa and --seg16 sweep (1×32768, 2×16384, 32768 + 63×512 packed, 8×4096): per shape one JSON line
// of kind `kind` with the uncut and the automatic call's times, the automatic piece and main's (main_choice(starts)),
// then at_piece(a, p, shape name, varlen, tokens, plan, piece, is_auto, is_main_auto) for pieces 1024 .. 8192 and both
// automatic choices, where the plan cuts.
template <class Rule, class MainChoice, class AtPiece>
void sweep_pieces(const pool& x, const char* kind, MainChoice main_choice, AtPiece at_piece) {
  struct shape {
    const char* name;
    index_t B, T_;
    bool varlen;
  };
  std::vector<std::int64_t> cu{0, 32768};
  for (int i = 0; i < 63; ++i) cu.push_back(cu.back() + 512);
  for (const shape s : {shape{"1x32768", 1, 32768, false}, shape{"2x16384", 2, 16384, false},
                        shape{"32768+63x512", 1, cu.back(), true}, shape{"8x4096", 8, 4096, false}}) {
    arguments<T, float> a = make_args<Rule>(x, s.B, s.T_, 0, s.varlen ? 64 : -1);
    if (s.varlen) a.cu_seqlens = cu;
    const problem p = validate<Rule, read::identity>(a);
    const std::vector<std::int64_t> starts = segments::sequence_starts(a, p);
    const index_t tokens = s.B * s.T_;
    const index_t automatic = cuda_detail::piece_length<Rule>(a, starts, p, cuda::launch{}, cuda_detail::current_device());
    const index_t main_auto = main_choice(starts);
    const double whole = time_ms([&] { linea::chunkwise<Rule, read::identity, backend::cuda>(a, {.segment_tokens = 0}); });
    const double lib_auto = time_ms([&] { linea::chunkwise<Rule, read::identity, backend::cuda>(a, {}); });
    std::printf("{\"kind\":\"%s\",\"rule\":\"%s\",\"shape\":\"%s\",\"piece\":0,\"auto\":%ld,\"main_auto\":%ld,"
                "\"whole_ms\":%.4f,\"lib_auto_ms\":%.4f,\"auto_ns_per_token\":%.3f}\n",
                kind, rule_name<Rule>::value, s.name, long(automatic), long(main_auto), whole, lib_auto,
                lib_auto * 1e6 / double(tokens));
    std::fflush(stdout);
    std::vector<index_t> pieces{1024, 2048, 4096, 8192};
    for (index_t c : {automatic, main_auto})
      if (c > 0 && std::find(pieces.begin(), pieces.end(), c) == pieces.end()) pieces.push_back(c);
    for (const index_t piece : pieces) {
      const segments::plan pl = segments::make_plan(starts, piece);
      if (!pl.cuts()) continue;
      at_piece(a, p, s.name, s.varlen, tokens, pl, piece, piece == automatic, piece == main_auto);
    }
  }
}

template <class Rule>
void passa_shapes(const pool& x) {
  sweep_pieces<Rule>(x, "passa", main_passa_choice<Rule>, [&](const arguments<T, float>& a, const problem& p,
                                                              const char* shape, bool, index_t tokens,
                                                              const segments::plan& pl, index_t piece, bool is_auto,
                                                              bool is_main_auto) {
    const std::size_t bytes = std::max(forward_scratch<cuda_detail::device_ops, Rule>(a, p, pl),
                                       forward_scratch<chunk_pass_a_ops, Rule>(a, p, pl));
    void* buf = nullptr;
    CK(cudaMalloc(&buf, bytes));
    const auto slabs = [&] {
      cuda_detail::device_ops ops(nullptr, cuda_detail::scratch_source::carve, buf, bytes);
      segments::forward<Rule>(ops, a, p, pl);
    };
    const auto chunk = [&] {
      chunk_pass_a_ops ops(nullptr, cuda_detail::scratch_source::carve, buf, bytes);
      segments::forward<Rule>(ops, a, p, pl);
    };
    const auto [t_new, t_old] = time_ab(slabs, chunk);
    std::printf("{\"kind\":\"passa\",\"rule\":\"%s\",\"shape\":\"%s\",\"piece\":%ld,\"is_auto\":%d,\"is_main_auto\":%d,"
                "\"slabs_ms\":%.4f,\"chunk_ms\":%.4f,\"chunk_over_slabs\":%.3f,\"ns_per_token\":%.3f}\n",
                rule_name<Rule>::value, shape, long(piece), int(is_auto), int(is_main_auto), t_new, t_old,
                t_old / t_new, t_new * 1e6 / double(tokens));
    std::fflush(stdout);
    CK(cudaDeviceSynchronize());
    cudaFree(buf);
  });
}

// ---- --states: passes A and M without outputs and the staged combine (the library's) against passes that write o
// and the row-wise combine (main d94ad0e's), and each change alone, on the same plan and preallocated scratch,
// interleaved in one process.
struct outputs_passes_ops : cuda_detail::device_ops {  // passes A and M write o; the staged combine
  using device_ops::device_ops;
  static constexpr bool states_only_passes = false;
};
template <class Base>
struct rowwise_combine : Base {  // combine_kernel, M read from global memory (main's)
  using Base::Base;
  template <class S>
  void combine(const S* from, S* to, const S* M, const S* B, const segments::state_dims& d,
               std::span<const segments::chain> chains) {
    this->combine_rowwise(from, to, M, B, d, chains);
  }
};
using main_ops = rowwise_combine<outputs_passes_ops>;
using states_rowwise_ops = rowwise_combine<cuda_detail::device_ops>;

// Each of fs in turn, `calls` back-to-back calls each, `repeats` times after warm-up: the medians (ms per call).
template <std::size_t N>
std::array<double, N> time_each(const std::array<std::function<void()>, N>& fs, int calls = 5, int repeats = 7) {
  for (int w = 0; w < 2; ++w)
    for (const auto& f : fs) f();
  cudaEvent_t e[N + 1];
  for (auto& x : e) CK(cudaEventCreate(&x));
  std::array<std::vector<double>, N> t;
  for (int r = 0; r < repeats; ++r) {
    CK(cudaEventRecord(e[0]));
    for (std::size_t k = 0; k < N; ++k) {
      for (int i = 0; i < calls; ++i) fs[k]();
      CK(cudaEventRecord(e[k + 1]));
    }
    CK(cudaEventSynchronize(e[N]));
    for (std::size_t k = 0; k < N; ++k) {
      float ms = 0;
      CK(cudaEventElapsedTime(&ms, e[k], e[k + 1]));
      t[k].push_back(ms / calls);
    }
  }
  for (auto& x : e) CK(cudaEventDestroy(x));
  std::array<double, N> med{};
  for (std::size_t k = 0; k < N; ++k) std::sort(t[k].begin(), t[k].end()), med[k] = t[k][t[k].size() / 2];
  return med;
}

template <class Rule>
void states_shapes(const pool& x) {
  struct shape {
    const char* name;
    index_t B, T_;
    bool varlen;
  };
  std::vector<std::int64_t> cu{0, 32768};
  for (int i = 0; i < 63; ++i) cu.push_back(cu.back() + 512);
  for (const shape s : {shape{"1x32768", 1, 32768, false}, shape{"2x16384", 2, 16384, false},
                        shape{"32768+63x512", 1, cu.back(), true}, shape{"8x4096", 8, 4096, false}}) {
    arguments<T, float> a = make_args<Rule>(x, s.B, s.T_, 0, s.varlen ? 64 : -1);
    if (s.varlen) a.cu_seqlens = cu;
    const problem p = validate<Rule, read::identity>(a);
    const std::vector<std::int64_t> starts = segments::sequence_starts(a, p);
    const index_t tokens = s.B * s.T_;
    const index_t automatic = cuda_detail::piece_length<Rule>(a, starts, p, cuda::launch{}, cuda_detail::current_device());
    const double whole = time_ms([&] { linea::chunkwise<Rule, read::identity, backend::cuda>(a, {.segment_tokens = 0}); });
    const double lib_auto = time_ms([&] { linea::chunkwise<Rule, read::identity, backend::cuda>(a); });
    std::printf("{\"kind\":\"states\",\"rule\":\"%s\",\"shape\":\"%s\",\"piece\":0,\"auto\":%ld,\"whole_ms\":%.4f,"
                "\"auto_ms\":%.4f,\"ns_per_token\":%.3f}\n",
                rule_name<Rule>::value, s.name, long(automatic), whole, lib_auto, whole * 1e6 / double(tokens));
    std::fflush(stdout);
    for (const index_t piece : {index_t(1024), index_t(2048), index_t(4096), index_t(8192)}) {
      const segments::plan pl = segments::make_plan(starts, piece);
      if (!pl.cuts()) continue;
      const std::size_t bytes = std::max(forward_scratch<cuda_detail::device_ops, Rule>(a, p, pl),
                                         forward_scratch<main_ops, Rule>(a, p, pl));
      void* buf = nullptr;
      CK(cudaMalloc(&buf, bytes));
      const auto with = [&](auto tag) {
        return std::function<void()>([&, tag] {
          typename decltype(tag)::type ops(nullptr, cuda_detail::scratch_source::carve, buf, bytes);
          segments::forward<Rule>(ops, a, p, pl);
        });
      };
      const auto t = time_each<4>({with(std::type_identity<cuda_detail::device_ops>{}), with(std::type_identity<main_ops>{}),
                                   with(std::type_identity<states_rowwise_ops>{}), with(std::type_identity<outputs_passes_ops>{})});
      std::printf("{\"kind\":\"states\",\"rule\":\"%s\",\"shape\":\"%s\",\"piece\":%ld,\"is_auto\":%d,"
                  "\"lib_ms\":%.4f,\"main_ms\":%.4f,\"states_only_ms\":%.4f,\"staged_only_ms\":%.4f,"
                  "\"main_over_lib\":%.3f,\"lib_vs_whole\":%.3f}\n",
                  rule_name<Rule>::value, s.name, long(piece), int(piece == automatic), t[0], t[1], t[2], t[3],
                  t[1] / t[0], t[0] / whole);
      std::fflush(stdout);
      if (!std::strcmp(s.name, "1x32768") && piece == 4096) {  // the passes alone: A, M (states only and not), combine
        const segments::run& r = pl.runs[0];
        arguments<T, float> pa = segments::slice(segments::packed_arguments(a), r.t0, r.t1);
        const segments::state_dims d{H, K, V, segments::transition_columns<Rule>(K)};
        float* Bs = dalloc<float>(pl.rows * d.state());
        float* Ms = dalloc<float>(pl.rows * d.transition());
        float* C = dalloc<float>(pl.total_pieces() * d.state());
        T* zeros = dalloc<T>(H * K);
        CK(cudaMemset(zeros, 0, H * K * sizeof(T)));
        pa.final_state = segments::state_rows(Bs, r.pieces(), H, K, V);
        const view<float, 4> Mv = segments::state_rows(Ms, r.pieces(), H, K, K);
        void* sbuf = dalloc<unsigned char>(1 << 20);
        const auto pass_a = [&](bool states_only) {
          cuda_detail::device_ops ops(nullptr, cuda_detail::scratch_source::carve, sbuf, 1 << 20);
          ops.template forward<Rule>(pa, r.cu, states_only);
        };
        const auto [a_states, a_outputs] = time_ab([&] { pass_a(true); }, [&] { pass_a(false); }, 10);
        const auto [m_states, m_outputs] = time_ab(
            [&] { cuda_detail::device_ops ops(nullptr, cuda_detail::scratch_source::carve, sbuf, 1 << 20);
                  segments::transition_pass<Rule>(ops, pa, zeros, pa.o, Mv, r.cu); },
            [&] { outputs_passes_ops ops(nullptr, cuda_detail::scratch_source::carve, sbuf, 1 << 20);
                  segments::transition_pass<Rule>(ops, pa, zeros, pa.o, Mv, r.cu); }, 10);
        const auto [c_staged, c_rowwise] = time_ab(
            [&] { cuda_detail::device_ops ops(nullptr, cuda_detail::scratch_source::carve, sbuf, 1 << 20);
                  ops.combine(C, C, Ms, Bs, d, std::span<const segments::chain>(pl.chains)); },
            [&] { cuda_detail::device_ops ops(nullptr, cuda_detail::scratch_source::carve, sbuf, 1 << 20);
                  ops.combine_rowwise(C, C, Ms, Bs, d, std::span<const segments::chain>(pl.chains)); }, 10);
        std::printf("{\"kind\":\"passes\",\"rule\":\"%s\",\"shape\":\"1x32768\",\"piece\":4096,\"pieces\":%ld,"
                    "\"a_states_ms\":%.4f,\"a_outputs_ms\":%.4f,\"m_states_ms\":%.4f,\"m_outputs_ms\":%.4f,"
                    "\"combine_staged_ms\":%.4f,\"combine_rowwise_ms\":%.4f}\n",
                    rule_name<Rule>::value, long(r.pieces()), a_states, a_outputs, m_states, m_outputs, c_staged, c_rowwise);
        std::fflush(stdout);
        CK(cudaDeviceSynchronize());
        cudaFree(Bs), cudaFree(Ms), cudaFree(C), cudaFree(zeros), cudaFree(sbuf);
      }
      CK(cudaDeviceSynchronize());
      cudaFree(buf);
    }
  }
}

// ---- --seg16: the library's pass A of the rules that only add against main 430ab74's and other slab counts
template <int CtasPerSm>
struct slab_ops : cuda_detail::device_ops {
  slab_ops(cudaStream_t s, cuda_detail::scratch_source src, void* base, std::size_t bytes) : device_ops(s, src, base, bytes) {
    slab_ctas_per_sm_ = CtasPerSm;
  }
};
// the library's slabs with pass M on its own launch (decay_transitions), as before seg16
struct unfused_m_ops : cuda_detail::device_ops {
  using device_ops::device_ops;
  template <class Rule, class X>
  bool piece_states(const arguments<X, float>& x, std::span<const std::int64_t> cu, const view<float, 4>& M = {}) {
    if (!device_ops::piece_states<Rule>(x, cu)) return false;
    if constexpr (cuda_detail::decay_product_rule<Rule>)
      if (!M.empty()) decay_transitions<Rule>(x, M, cu);
    return true;
  }
};
using v0_ops = cuda_detail::v0::pass_a_ops;
constexpr std::size_t seg16_variants = 7;
constexpr const char* seg16_names[seg16_variants] = {"lib", "main", "unfused", "slabs3", "slabs9", "slabs12", "slabs18"};

// main 430ab74's cost model for these rules (its calibrated_model, 16-bit inputs, H = 16, V = 128).
template <class Rule>
index_t main430_choice(const std::vector<std::int64_t>& starts) {
  segments::cost_model m;
  const double decay_m = std::is_same_v<Rule, additive> ? 0.0 : 0.05;
  if constexpr (std::is_same_v<Rule, gla>) {
    m.slots = 132, m.units = 16, m.am_passes = 0.9 + decay_m, m.link = 20, m.fixed = 300;
  } else {
    m.slots = 264, m.units = 32, m.am_passes = 0.55 + decay_m, m.link = 70, m.fixed = 6000;
    m.min_saving = 0.10;
  }
  return segments::choose_piece(starts, m);
}

// f(tag) for each variant's ops type, in seg16_names' order.
template <class F>
std::array<std::function<void()>, seg16_variants> seg16_each(F&& f) {
  return {f(std::type_identity<cuda_detail::device_ops>{}), f(std::type_identity<v0_ops>{}),
          f(std::type_identity<unfused_m_ops>{}), f(std::type_identity<slab_ops<3>>{}), f(std::type_identity<slab_ops<9>>{}),
          f(std::type_identity<slab_ops<12>>{}), f(std::type_identity<slab_ops<18>>{})};
}
template <class Rule>
std::size_t seg16_scratch(const arguments<T, float>& a, const problem& p, const segments::plan& pl) {
  return std::max({forward_scratch<cuda_detail::device_ops, Rule>(a, p, pl), forward_scratch<v0_ops, Rule>(a, p, pl),
                   forward_scratch<unfused_m_ops, Rule>(a, p, pl), forward_scratch<slab_ops<3>, Rule>(a, p, pl), forward_scratch<slab_ops<9>, Rule>(a, p, pl),
                   forward_scratch<slab_ops<12>, Rule>(a, p, pl), forward_scratch<slab_ops<18>, Rule>(a, p, pl)});
}
void print_variants(const std::array<double, seg16_variants>& t) {
  for (std::size_t k = 0; k < seg16_variants; ++k) std::printf(",\"%s_ms\":%.4f", seg16_names[k], t[k]);
}

// The passes of the segmented call alone (one run: 1×32768 or 2×16384), each pass A variant, M, the combine, C.
template <class Rule>
void seg16_passes(const arguments<T, float>& a, const char* shape, index_t piece, const segments::plan& pl) {
  const arguments<T, float> x = segments::packed_arguments(a);
  const segments::state_dims d{H, K, V, segments::transition_columns<Rule>(K)};
  const index_t rows = pl.rows, PC = pl.total_pieces();
  float* Bs = dalloc<float>(rows * d.state());
  float* Ms = dalloc<float>(std::max<index_t>(rows * d.transition(), 1));
  float* C = dalloc<float>(PC * d.state());
  CK(cudaMemset(C, 0, PC * d.state() * sizeof(float)));
  CK(cudaMemset(Ms, 0, std::max<index_t>(rows * d.transition(), 1) * sizeof(float)));
  const std::size_t sbytes = std::size_t(512) << 20;
  void* sbuf = dalloc<unsigned char>(sbytes);
  const auto pass_a = [&](auto tag) {
    return std::function<void()>([&, tag] {
      typename decltype(tag)::type ops(nullptr, cuda_detail::scratch_source::carve, sbuf, sbytes);
      for (const segments::run& r : pl.runs) {
        arguments<T, float> pa = segments::slice(x, r.t0, r.t1);
        pa.final_state = segments::state_rows(Bs + r.first_row * d.state(), r.pieces(), H, K, V);
        const view<float, 4> Mr = d.KM ? segments::state_rows(Ms + r.first_row * d.transition(), r.pieces(), H, K, d.KM)
                                       : view<float, 4>{};
        segments::piece_states<Rule>(ops, pa, std::span<const std::int64_t>(r.cu), Mr);  // with pass M where fused
      }
    });
  };
  const auto ta = time_each<seg16_variants>(seg16_each(pass_a), 10);
  double tm = 0;
  if (d.KM)
    tm = time_ms([&] {
      cuda_detail::device_ops ops(nullptr, cuda_detail::scratch_source::carve, sbuf, sbytes);
      for (const segments::run& r : pl.runs) {
        const arguments<T, float> pa = segments::slice(x, r.t0, r.t1);
        segments::transitions<Rule>(ops, pa, static_cast<const T*>(nullptr), view<T, 4>{},
                                    segments::state_rows(Ms + r.first_row * d.transition(), r.pieces(), H, K, d.KM), r.cu);
      }
    }, 10);
  const double tc = time_ms([&] {
    cuda_detail::device_ops ops(nullptr, cuda_detail::scratch_source::carve, sbuf, sbytes);
    ops.combine(C, C, d.KM ? Ms : nullptr, Bs, d, std::span<const segments::chain>(pl.chains));
  }, 10);
  const double tpc = time_ms([&] {
    cuda_detail::device_ops ops(nullptr, cuda_detail::scratch_source::carve, sbuf, sbytes);
    arguments<T, float> pc = x;
    pc.initial_state = segments::state_rows(C, PC, H, K, V);
    pc.final_state = segments::state_rows(C, PC, H, K, V);
    ops.template forward<Rule>(pc, std::span<const std::int64_t>(pl.cu_all));
  }, 10);
  std::printf("{\"kind\":\"seg16_passes\",\"rule\":\"%s\",\"shape\":\"%s\",\"piece\":%ld,\"pieces\":%ld", rule_name<Rule>::value,
              shape, long(piece), long(PC));
  for (std::size_t k = 0; k < seg16_variants; ++k) std::printf(",\"a_%s_ms\":%.4f", seg16_names[k], ta[k]);
  std::printf(",\"m_ms\":%.4f,\"combine_ms\":%.4f,\"c_ms\":%.4f}\n", tm, tc, tpc);
  std::fflush(stdout);
  CK(cudaDeviceSynchronize());
  cudaFree(Bs), cudaFree(Ms), cudaFree(C), cudaFree(sbuf);
}

template <class Rule>
void seg16_shapes(const pool& x) {
  sweep_pieces<Rule>(x, "seg16", main430_choice<Rule>, [&](const arguments<T, float>& a, const problem& p,
                                                           const char* shape, bool varlen, index_t tokens,
                                                           const segments::plan& pl, index_t piece, bool is_auto,
                                                           bool is_main_auto) {
    const std::size_t bytes = seg16_scratch<Rule>(a, p, pl);
    void* buf = nullptr;
    CK(cudaMalloc(&buf, bytes));
    const auto with = [&](auto tag) {
      return std::function<void()>([&, tag] {
        typename decltype(tag)::type ops(nullptr, cuda_detail::scratch_source::carve, buf, bytes);
        segments::forward<Rule>(ops, a, p, pl);
      });
    };
    const auto t = time_each<seg16_variants>(seg16_each(with));
    std::printf("{\"kind\":\"seg16\",\"rule\":\"%s\",\"shape\":\"%s\",\"piece\":%ld,\"is_auto\":%d,\"is_main_auto\":%d",
                rule_name<Rule>::value, shape, long(piece), int(is_auto), int(is_main_auto));
    print_variants(t);
    std::printf(",\"main_over_lib\":%.3f,\"ns_per_token\":%.3f}\n", t[1] / t[0], t[0] * 1e6 / double(tokens));
    std::fflush(stdout);
    CK(cudaDeviceSynchronize());
    cudaFree(buf);
    if (!varlen && a.q.extent(0) <= 2 && (piece == 2048 || piece == 4096)) seg16_passes<Rule>(a, shape, piece, pl);
  });
}

}  // namespace

int main(int argc, char** argv) {
  bool long_only = false, cp_only = false, sweep = false, ccq = false, one = false, ab = false, passa = false, states = false;
  bool seg16 = false, gdn2_only = false, once16 = false;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--sweep")) sweep = true;
    if (!std::strcmp(argv[i], "--ccq")) ccq = true;
    if (!std::strcmp(argv[i], "--once")) one = true;
    if (!std::strcmp(argv[i], "--long")) long_only = true;
    if (!std::strcmp(argv[i], "--cp")) cp_only = true;
    if (!std::strcmp(argv[i], "--ab")) ab = true;
    if (!std::strcmp(argv[i], "--passa")) passa = true;
    if (!std::strcmp(argv[i], "--states")) states = true;
    if (!std::strcmp(argv[i], "--seg16")) seg16 = true;
    if (!std::strcmp(argv[i], "--gdn2")) gdn2_only = true;
    if (!std::strcmp(argv[i], "--once16")) once16 = true;
  }
  try {
    cudaDeviceProp prop{};
    CK(cudaGetDeviceProperties(&prop, 0));
    std::printf("{\"kind\":\"device\",\"name\":\"%s\",\"sms\":%d}\n", prop.name, prop.multiProcessorCount);
    if (once16) {
      const pool x(32768);
      const auto one = [&](auto tag) {
        using Rule = typename decltype(tag)::type;
        const arguments<T, float> a = make_args<Rule>(x, 1, 32768);
        once(rule_name<Rule>::value, [&] { linea::chunkwise<Rule, read::identity, backend::cuda>(a, {.segment_tokens = 4096}); });
      };
      one(std::type_identity<additive>{}), one(std::type_identity<simple_gla>{}), one(std::type_identity<gla>{});
      return 0;
    }
    if (seg16 || gdn2_only) {  // pass A of the rules that only add: the library's, main's, other slab counts; gdn2
      const pool x(65536);
      if (seg16) seg16_shapes<additive>(x), seg16_shapes<simple_gla>(x), seg16_shapes<gla>(x);
      if (gdn2_only) long_shapes<gdn2>(x);
      return 0;
    }
    if (states) {  // the erasing rules: passes A and M without outputs against main's
      const pool x(65536);
      states_shapes<gated_delta>(x), states_shapes<delta>(x), states_shapes<kda>(x), states_shapes<gdn2>(x);
      return 0;
    }
    if (passa) {  // the rules that only add: pass A by slabs against the chunk kernel's
      const pool x(65536);
      passa_shapes<additive>(x), passa_shapes<simple_gla>(x), passa_shapes<gla>(x);
      return 0;
    }
    if (ab) {  // simple_gla and gla: the decay sums against the general pass M
      const pool x(65536);
      ab_shapes<simple_gla>(x), ab_shapes<gla>(x);
      return 0;
    }
    if (sweep || ccq || one) {
      const pool x(65536);
      const ccq_outputs s(8);
      if (one) {
        once_ccq<additive>(x, s), once_ccq<gated_delta>(x, s);
        once_long<gated_delta>(x), once_long<additive>(x), once_long<gla>(x);
      }
      if (ccq) {
        ccq_shapes<additive>(x, s), ccq_shapes<simple_gla>(x, s), ccq_shapes<gla>(x, s), ccq_shapes<delta>(x, s);
        ccq_shapes<gated_delta>(x, s), ccq_shapes<kda>(x, s), ccq_shapes<gdn2>(x, s);
      }
      if (sweep) {
        sweep_shapes<gated_delta>(x), sweep_shapes<delta>(x), sweep_shapes<simple_gla>(x);
        sweep_shapes<additive>(x), sweep_shapes<gla>(x), sweep_shapes<kda>(x);
      }
      return 0;
    }
    if (!cp_only) {
      const pool x(65536);
      long_shapes<gated_delta>(x);
      long_shapes<delta>(x);
      long_shapes<simple_gla>(x);
      long_shapes<gla>(x);
      long_shapes<kda>(x);
      long_shapes<additive>(x);
      long_shapes<gdn2>(x);
    }
    if (!long_only) {
      const pool x(1048576);
      context_parallel_shapes<gated_delta>(x);
      context_parallel_shapes<simple_gla>(x);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "segments_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
