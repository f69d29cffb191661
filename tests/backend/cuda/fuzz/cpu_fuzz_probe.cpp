// tests/backend/cuda/fuzz/cpu_fuzz_probe.cpp — one CUDA fuzz case (seed, index) rebuilt on the CPU, without a GPU:
// the same inputs (cuda_fuzz_inputs.hpp), the float64 reference, the reference's own recurrence computed in float32
// on those inputs, and the CPU backend; every output / gradient tensor's relative error against float64, and the
// conditioning estimates the fuzz driver judges by (cuda_fuzz_conditioning.hpp). Diagnostic tool, not in CMake:
//
//   g++ -std=c++20 -O2 -march=native -Iinclude -Itests -isystem /usr/include/eigen3 \
//       tests/backend/cuda/fuzz/cpu_fuzz_probe.cpp -o /tmp/cpu_fuzz_probe -lpthread
//   /tmp/cpu_fuzz_probe SEED INDEX [SEED INDEX ...]
//
// Compiled for the delta-rule family (delta, gated_delta) × (identity, CCQ uniform; gated_delta CCQ decayed) × (float32,
// bf16), the rules of
// the cases it was written for (acc15, bench/cuda/README.md); other cases are listed and skipped.
#include <cstdio>
#include <cstdlib>
#include <string>

#include <linea/linea.hpp>

#include "backend/cuda/fuzz/cuda_fuzz_conditioning.hpp"
#include "backend/cuda/fuzz/cuda_fuzz_inputs.hpp"
#include "support/gradient_buffers.hpp"
#include "support/tolerance.hpp"

using namespace linea;
using namespace linea::cuda_fuzz;

namespace {

template <class X, int R>
double rel(const tensor<X, R>& got, const tensor<double, R>& want) {
  double num = 0, den = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double x = double(got.data()[i]), r = want.data()[i];
    if (std::isfinite(r)) num += (x - r) * (x - r), den += r * r;
  }
  return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}


double round16(double x) { return double(bf16(x)); }

// The chunkwise forward's arithmetic for the scalar-decay delta rules (delta, gated_delta), emulated in float64 with
// the CUDA kernel's 16-bit operands rounded to bf16 (chunk_phases/: the state operand S for X·S and Q·S, the erase
// key β ⊙ k, the written value β ⊙ v, the corrections U for Kᵀ U and the intra-chunk read); `round_u`, `round_s`
// switch the rounding of U and of S off to see which one the error comes from. Returns the final state's relative
// error against the float64 reference's.
template <class Rule, class T, class S>
double emulate_chunkwise(const arguments<T, S>& a, const tensor<double, 4>& want_ht, index_t C, bool round_u, bool round_s) {
  const problem p = validate<Rule, read::identity>(a);
  token_loader<Rule, double> load(p);
  const index_t K = p.K, V = p.V;
  double num = 0, den = 0;
  for (index_t n = 0; n < p.N; ++n) {
    const sequence seq = sequence_of(a, p, n);
    for (index_t hv = 0; hv < p.HV; ++hv) {
      std::vector<double> St(static_cast<std::size_t>(K * V), 0.0);
      if (!a.initial_state.empty())
        for (index_t i = 0; i < K; ++i)
          for (index_t j = 0; j < V; ++j) St[i * V + j] = double(a.initial_state(n, hv, i, j));
      for (index_t c0 = seq.t_begin; c0 < seq.t_end; c0 += C) {
        const index_t L = std::min(C, seq.t_end - c0);
        std::vector<double> k(static_cast<std::size_t>(L * K)), ek(k.size()), wv(static_cast<std::size_t>(L * V)), G(static_cast<std::size_t>(L));
        double g = 0;
        for (index_t r = 0; r < L; ++r) {
          const auto x = load.load(a, p, seq.batch, c0 + r, hv);
          g += Rule::decay::log_alpha(x, 0), G[r] = g;
          for (index_t i = 0; i < K; ++i) k[r * K + i] = x.k[i], ek[r * K + i] = round16(erase_key<Rule>(x, i));
          for (index_t j = 0; j < V; ++j) wv[r * V + j] = round16(write_target<Rule>(x, j));
        }
        std::vector<double> Sb(St);
        if (round_s) for (auto& e : Sb) e = round16(e);
        std::vector<double> U(static_cast<std::size_t>(L * V));
        for (index_t r = 0; r < L; ++r)
          for (index_t j = 0; j < V; ++j) {
            double xs = 0;
            for (index_t i = 0; i < K; ++i) xs += ek[r * K + i] * Sb[i * V + j];
            double z = wv[r * V + j] - std::exp(G[r]) * xs;
            for (index_t s2 = 0; s2 < r; ++s2) {  // (I + A) U = Z, A_rs = e^{G_r − G_s} (β_r k_r)·k_s
              double kk = 0;
              for (index_t i = 0; i < K; ++i) kk += ek[r * K + i] * k[s2 * K + i];
              z -= std::exp(G[r] - G[s2]) * kk * U[s2 * V + j];
            }
            U[r * V + j] = z;
          }
        for (index_t r = 0; r < L; ++r)
          for (index_t j = 0; j < V; ++j) U[r * V + j] = round_u ? round16(U[r * V + j]) : U[r * V + j];
        for (index_t i = 0; i < K; ++i)
          for (index_t j = 0; j < V; ++j) {
            double s2 = std::exp(G[L - 1]) * St[i * V + j];
            for (index_t r = 0; r < L; ++r) s2 += std::exp(G[L - 1] - G[r]) * k[r * K + i] * U[r * V + j];
            St[i * V + j] = s2;
          }
      }
      for (index_t i = 0; i < K; ++i)
        for (index_t j = 0; j < V; ++j) {
          const double d = St[i * V + j] - want_ht(n, hv, i, j);
          num += d * d, den += want_ht(n, hv, i, j) * want_ht(n, hv, i, j);
        }
    }
  }
  return std::sqrt(num / den);
}

template <class Rule, class Read, class T>
void forward(const plan& p) {
  fuzz_inputs<Rule, T> in(p), in32(p);
  auto ra = in.ref.args();
  in.apply(p, ra, in.sref, in.gamma_ref);
  reference::recurrent<Rule, Read>(ra);
  auto r32 = in32.ref.args();  // the same (T-exact) values, the recurrence in float32, outputs kept in float64
  in32.apply(p, r32, in32.sref, in32.gamma_ref);
  reference::recurrent<Rule, Read, float>(r32);
  auto ha = in.c.args();
  in.apply(p, ha, in.s, in.gamma);
  linea::recurrent<Rule, Read, backend::cpu>(ha);
  const double tol = testing::tolerance_for<T>(in.c.shape.T);
  std::printf("  tol %.3g\n", tol);
  std::printf("  o:           ref-in-float32 %.3g   cpu %.3g\n", rel(in32.ref.o, in.ref.o), rel(in.c.o, in.ref.o));
  std::printf("  final_state: ref-in-float32 %.3g   cpu %.3g\n", rel(in32.ref.ht, in.ref.ht), rel(in.c.ht, in.ref.ht));
  if constexpr (!Read::is_identity) {
    std::printf("  q_tilde:     ref-in-float32 %.3g   cpu %.3g\n", rel(in32.sref.q_tilde, in.sref.q_tilde), rel(in.s.q_tilde, in.sref.q_tilde));
    std::printf("  ccq C:       ref-in-float32 %.3g   cpu %.3g\n", rel(in32.sref.C, in.sref.C), rel(in.s.C, in.sref.C));
    std::printf("  ccq m, z:    cpu %.3g, %.3g\n", rel(in.s.m, in.sref.m), rel(in.s.z, in.sref.z));
    // The CUDA kernels read q̃ (and, with the L2 norm, k̂) as 16-bit operands: the main pass as the identity read on
    // the float64 q̃ and k̂, each rounded to bf16 or not, against the CCQ reference's o (seed 20261220 case 285; both
    // rounded is the fuzz driver's estimate).
    if (in.sref.q_tilde.size())
      for (const bool round_q : {false, true})
        for (const bool round_k : {false, true})
          std::printf("  o from q~ %s, k^ %s (identity read): %.3g\n", round_q ? "bf16" : "exact", round_k ? "bf16" : "exact",
                      operand_rounding_o<Rule, bf16>(ra, in.sref.q_tilde, in.ref.o, round_q, round_k));
  }
  if constexpr (Read::is_identity) {
    std::printf("  final_state conditioning %.3g\n", final_state_conditioning<Rule>(ra));
    if constexpr (erases<Rule>) {
      std::printf("  emulated chunkwise (bf16 operands), final_state error, chunk %ld: %.3g (U exact: %.3g, S exact: %.3g, both exact: %.3g)\n",
                  long(p.chunk), emulate_chunkwise<Rule>(ra, in.ref.ht, p.chunk, true, true), emulate_chunkwise<Rule>(ra, in.ref.ht, p.chunk, false, true),
                  emulate_chunkwise<Rule>(ra, in.ref.ht, p.chunk, true, false), emulate_chunkwise<Rule>(ra, in.ref.ht, p.chunk, false, false));
      std::printf("  same at chunk 64: %.3g\n", emulate_chunkwise<Rule>(ra, in.ref.ht, 64, true, true));
      for (index_t C : {16, 64}) {
        const auto e = estimate_write_rounding<Rule>(ra, 0x1p-8, C, static_cast<const tensor<double, 4>*>(nullptr));
        std::printf("  write-rounding estimate, chunk %ld: final_state %.3g, o %.3g\n", long(C), e.final_state,
                    e.relative_to(e.o_error2, in.ref.o));
      }
    }
  }
}

template <class Rule, class Read, class T>
void backward(const plan& p) {
  fuzz_inputs<Rule, T> in(p), in32(p);
  auto& c = in.c;
  rng_t rng(p.shape.seed * 13ull + 5);  // as run_backward draws dL/do, dL/dS_T
  std::normal_distribution<double> normal(0.0, 1.0);
  tensor<T, 4> d_o(c.o.extents());
  tensor<float, 4> dht(p.ht ? c.ht.extents() : std::array<index_t, 4>{});
  for (auto& x : d_o.values()) x = T(normal(rng));
  for (auto& x : dht.values()) x = float(normal(rng));
  tensor<double, 4> d_o64(d_o.extents()), dht64(dht.extents());
  for (std::size_t i = 0; i < d_o.size(); ++i) d_o64.data()[i] = double(d_o.data()[i]);
  for (std::size_t i = 0; i < dht.size(); ++i) dht64.data()[i] = double(dht.data()[i]);
  const auto dht_view = p.ht ? contiguous<4>(static_cast<const float*>(dht.data()), dht.extents()) : view<const float, 4>{};
  const auto dht64_view = p.ht ? contiguous<4>(static_cast<const double*>(dht64.data()), dht64.extents()) : view<const double, 4>{};
#define SZ {c.N, c.shape.B, c.shape.T, c.shape.H, c.shape.HV, c.shape.K, c.shape.V}
  const bool ccq = p.read != read_kind::identity;
  const auto nan_fill = [](auto&) {};

  testing::gradient_buffers<double, double> want, want32;
  auto ra = in.ref.args();
  in.apply(p, ra, in.sref, in.gamma_ref);
  auto gr = want.make(ra, contiguous<4>(static_cast<const double*>(d_o64.data()), d_o64.extents()), dht64_view, SZ, p.g_gamma, ccq, nan_fill);
  reference::backward<Rule, Read>(ra, gr);
  auto r32 = in32.ref.args();
  in32.apply(p, r32, in32.sref, in32.gamma_ref);
  auto g32 = want32.make(r32, contiguous<4>(static_cast<const double*>(d_o64.data()), d_o64.extents()), dht64_view, SZ, p.g_gamma, ccq, nan_fill);
  reference::backward<Rule, Read, float>(r32, g32);

  auto ha = c.args();
  in.apply(p, ha, in.s, in.gamma);
  ha.final_state = {}, ha.residual = {};
  testing::gradient_buffers<T, float> got;
  auto hg = got.make(ha, contiguous<4>(static_cast<const T*>(d_o.data()), d_o.extents()), dht_view, SZ, p.g_gamma, ccq, nan_fill);
  linea::backward<Rule, Read, backend::cpu>(ha, hg);

  std::printf("  tol %.3g\n", testing::gradient_tolerance_for<T>());
  if (c.shape.K == 1 && std::is_same_v<Rule, linea::delta>) {  // K = 1: how far S_0 survives the first chunk
    const problem pr = validate<Rule, Read>(ra);
    token_loader<Rule, double> load(pr);
    for (index_t n = 0; n < pr.N; ++n)
      for (index_t hv = 0; hv < pr.HV; ++hv) {
        const sequence seq = sequence_of(ra, pr, n);
        double prod = 1, at[4] = {0, 0, 0, 0};
        for (index_t t = seq.t_begin; t < std::min(seq.t_end, seq.t_begin + 64); ++t) {
          const auto x = load.load(ra, pr, seq.batch, t, hv);
          prod *= 1 - erase_key<Rule>(x, 0) * x.k[0];
          const index_t r = t - seq.t_begin;
          if (r == 0) at[0] = prod;
          if (r == 3) at[1] = prod;
          if (r == 15) at[2] = prod;
          at[3] = prod;
        }
        std::printf("  sequence %ld head %ld: prod(1 - beta k^2) over tokens 1, 4, 16, 64: %.3g %.3g %.3g %.3g\n", long(n), long(hv), at[0], at[1], at[2], at[3]);
      }
    double dh0 = 0, dv = 0;
    for (auto x : want.dh0.values()) dh0 += x * x;
    for (auto x : want.dv.values()) dv += x * x;
    std::printf("  |d_initial_state| %.3g, |dv| / sqrt(tokens) %.3g\n", std::sqrt(dh0), std::sqrt(dv / double(c.shape.T * c.shape.B)));
  }
  got.for_each(want, [&](const char* name, const auto& t, const auto& w) {
    if (!w.size()) return;
    double e32 = 0;
    want32.for_each(want32, [&](const char* n2, const auto& t32, const auto&) {
      if (std::string(n2) == name) {
        if constexpr (std::is_same_v<std::decay_t<decltype(t32)>, std::decay_t<decltype(w)>>) e32 = rel(t32, w);
      }
    });
    std::printf("  %-16s ref-in-float32 %.3g   cpu %.3g\n", name, e32, rel(t, w));
  });
  if constexpr (Read::is_identity && !std::is_same_v<T, float>) {
    const auto e = estimate_write_rounding<Rule>(ra, 0x1p-8, 64, &d_o64);
    std::printf("  write-rounding estimate, chunk 64: dq %.3g\n", e.relative_to(e.dq_error2, want.dq));
  }
  if (want.dA_log.size()) std::printf("  dA_log sum conditioning %.3g\n", token_sum_conditioning(ra, want, false));
  if (want.ddt_bias.size()) std::printf("  ddt_bias sum conditioning %.3g\n", token_sum_conditioning(ra, want, true));
}

template <class Rule, class Read, class T>
void run(const plan& p) {
  if (p.form == form_kind::backward) backward<Rule, Read, T>(p);
  else if (p.form != form_kind::step) forward<Rule, Read, T>(p);
}

template <class Rule, class Read>
void by_type(const plan& p) {
  if (p.type == dtype::f32) run<Rule, Read, float>(p);
  else if (p.type == dtype::bf16) run<Rule, Read, bf16>(p);
  else std::printf("  (fp16: not compiled in the probe)\n");
}

}  // namespace

// --sweep SEED FROM TO: the write-rounding estimates of every 16-bit chunkwise forward / identity backward case of
// the delta family (delta, gated_delta, kda, gdn2) in [FROM, TO), against the bound: how often criterion (1) of
// judge_conditioning can apply at all.
template <class Rule, class T>
void sweep_one(const plan& p) {
  fuzz_inputs<Rule, T> in(p);
  auto ra = in.ref.args();
  in.apply(p, ra, in.sref, in.gamma_ref);
  const double eps = std::is_same_v<T, bf16> ? 0x1p-8 : 0x1p-11;
  if (p.form == form_kind::backward) {
    rng_t rng(p.shape.seed * 13ull + 5);
    std::normal_distribution<double> normal(0.0, 1.0);
    tensor<double, 4> d_o(in.c.o.extents());
    for (auto& x : d_o.values()) x = double(T(normal(rng)));
    const auto e = estimate_write_rounding<Rule>(ra, eps, 64, &d_o);
    reference::recurrent<Rule, read::identity>(ra);
    const double dq = e.dq2 > 0 ? std::sqrt(e.dq_error2 / e.dq2) : 0;
    std::printf("%ld %s dq %.3g%s\n", p.index, p.describe().c_str(), dq, dq >= 1e-2 ? "  <-- >= tol/2" : "");
  } else {
    reference::recurrent<Rule, read::identity>(ra);
    const auto e = estimate_write_rounding<Rule>(ra, eps, 32, static_cast<const tensor<double, 4>*>(nullptr));
    std::printf("%ld %s final_state %.3g o %.3g%s\n", p.index, p.describe().c_str(), e.final_state,
                e.relative_to(e.o_error2, in.ref.o), std::max(e.final_state, e.relative_to(e.o_error2, in.ref.o)) >= 5e-3 ? "  <-- >= tol/2" : "");
  }
}

int main(int argc, char** argv) {
  if (argc == 5 && std::string(argv[1]) == "--sweep") {
    for (long i = std::atol(argv[3]); i < std::atol(argv[4]); ++i) {
      const plan p = make_plan(std::atol(argv[2]), i);
      if (!p.expect.empty() || p.type == dtype::f32 || p.read != read_kind::identity) continue;
      if (p.form != form_kind::chunkwise && p.form != form_kind::backward) continue;
      if (p.form == form_kind::backward && p.l2) continue;
      const bool h = p.type == dtype::bf16;
      if (p.rule == 3) h ? sweep_one<linea::delta, bf16>(p) : sweep_one<linea::delta, fp16>(p);
      else if (p.rule == 4) h ? sweep_one<linea::gated_delta, bf16>(p) : sweep_one<linea::gated_delta, fp16>(p);
      else if (p.rule == 5) h ? sweep_one<linea::kda, bf16>(p) : sweep_one<linea::kda, fp16>(p);
      else if (p.rule == 6) h ? sweep_one<linea::gdn2, bf16>(p) : sweep_one<linea::gdn2, fp16>(p);
    }
    return 0;
  }
  for (int i = 1; i + 1 < argc; i += 2) {
    const plan p = make_plan(std::atol(argv[i]), std::atol(argv[i + 1]));
    std::printf("case %s %s: %s\n", argv[i], argv[i + 1], p.describe().c_str());
    if (!p.expect.empty()) continue;
    const bool uniform = p.read == read_kind::uniform;
    if (p.read == read_kind::decayed) {
      if (p.rule == 4) by_type<linea::gated_delta, read::ccq<read::decayed>>(p);  // seed 20261220 case 285
      else std::printf("  (decayed CCQ: compiled for gated_delta only)\n");
    } else if (p.rule == 3) uniform ? by_type<linea::delta, read::ccq<read::uniform>>(p) : by_type<linea::delta, read::identity>(p);
    else if (p.rule == 4) uniform ? by_type<linea::gated_delta, read::ccq<read::uniform>>(p) : by_type<linea::gated_delta, read::identity>(p);
    else std::printf("  (rule not compiled in the probe)\n");
  }
}
