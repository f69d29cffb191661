// tests/backend/cuda/fuzz/cuda_fuzz_conditioning.hpp — how far a fuzz case's exact result cancels, computed in
// float64 from the case's own inputs (no CUDA; the CPU probe uses it too).
//
// A result r = Σ_i c_i computed from terms that each carry a relative error δ is off by up to δ · Σ_i |c_i|, i.e.
// by δ · κ relative to |r|, κ = Σ|c_i| / |Σ c_i| (the sum's condition number, Higham, "Accuracy and Stability of
// Numerical Algorithms", §4.2); normwise over a tensor, κ = ‖Σ_i |c_i|‖ / ‖Σ_i c_i‖. SPEC §5 / §6's bounds are stated
// for inputs whose results do not cancel like that; the fuzz driver prints κ with a failing tensor, and judges it
// by what the arithmetic can deliver (cuda_fuzz_case.hpp, beyond_arithmetic).
//
// Two results are sums of this kind with terms computable in O(T):
//   - dA_log and ddt_bias (in-kernel gates): Σ over tokens (and batch rows) of each token's gradient of the gate.
//   - the final state S_T: S_T = P_{1..T} S_0 + Σ_t P_{t+1..T} k_t (w ⊙ v_t)ᵀ, the transition
//     A_t = (I − k_t (b_t ⊙ k_t)ᵀ) Diag(α_t) (SPEC §2; b = β·1, w = β·1 for the delta rules), P_{t+1..T} = A_T ⋯ A_{t+1}:
//     the initial state and every written value, carried to the end. Its κ is computed exactly: the products' rows
//     R_t = P_{t+1..T} run backwards (R_{t−1} = R_t A_t, O(K²) a token: A_t is diagonal plus rank one).
#pragma once
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include <linea/linea.hpp>

namespace linea::cuda_fuzz {

// κ of the token sums dA_log (per_channel = false) or ddt_bias (true), normwise over their entries. `a`: the float64
// arguments (raw gate logits in g / gk, with a.gate active); `grads`: the float64 reference's gradients, whose dg /
// dgk are those of the raw logits x. Each token's term of ddt_bias is that gradient (∂g/∂dt_bias = ∂g/∂x); its term
// of dA_log is the same times ∂g/∂A_log ÷ ∂g/∂x (lower bound: x + dt_bias; without: softplus(z) / σ(z), z = x + dt_bias).
template <class T, class S, class Grads>
double token_sum_conditioning(const arguments<T, S>& a, const Grads& grads, bool per_channel) {
  if (!a.gate.active()) return 1;
  const bool per_key = grads.dgk.size() > 0, bound = a.gate.lower_bound.has_value();
  const index_t B = per_key ? grads.dgk.extent(0) : grads.dg.extent(0), T_ = per_key ? grads.dgk.extent(1) : grads.dg.extent(1);
  const index_t HV = grads.dA_log.extent(0), KG = per_key ? grads.dgk.extent(3) : 1;
  const index_t E = per_channel ? a.gate.dt_bias.extent(0) : HV;
  std::vector<double> sum(static_cast<std::size_t>(E)), abs_sum(sum);
  for (index_t b = 0; b < B; ++b)
    for (index_t t = 0; t < T_; ++t)
      for (index_t hv = 0; hv < HV; ++hv)
        for (index_t i = 0; i < KG; ++i) {
          const index_t bias = a.gate.dt_bias.extent(0) > HV ? hv * KG + i : hv;  // per key channel, or per head
          const double x = per_key ? double(a.gk(b, t, hv, i)) : double(a.g(b, t, hv));
          const double dx = per_key ? grads.dgk(b, t, hv, i) : grads.dg(b, t, hv);
          double term = dx;
          if (!per_channel) {
            const double z = x + double(a.gate.dt_bias(bias));
            term *= bound ? z : z > 20 ? z : std::log1p(std::exp(z)) * (1 + std::exp(-z));  // softplus(z) / σ(z)
          }
          const index_t e = per_channel ? bias : hv;
          sum[e] += term, abs_sum[e] += std::abs(term);
        }
  double num = 0, den = 0;
  for (index_t e = 0; e < E; ++e) num += abs_sum[e] * abs_sum[e], den += sum[e] * sum[e];
  return den > 0 ? std::sqrt(num / den) : std::numeric_limits<double>::infinity();
}

// κ of the final state as the sum of the initial state's and the written values' contributions (header), normwise
// over every sequence and value head. `a`: float64 arguments with their options (l2 norm, gates, beta_act).
template <class Rule, class T, class S>
double final_state_conditioning(const arguments<T, S>& a) {
  const problem p = validate<Rule, read::identity>(a);
  token_loader<Rule, double> load(p);
  const index_t K = p.K, V = p.V;
  double num = 0, den = 0;
  for (index_t n = 0; n < p.N; ++n) {
    const sequence seq = sequence_of(a, p, n);
    for (index_t hv = 0; hv < p.HV; ++hv) {
      const index_t L = seq.t_end - seq.t_begin;
      // each token's key k, erase key b ⊙ k, log decays and written value w ⊙ v
      std::vector<double> k(static_cast<std::size_t>(L * K)), ek(k.size()), la(k.size()), wv(static_cast<std::size_t>(L * V));
      for (index_t t = 0; t < L; ++t) {
        const auto x = load.load(a, p, seq.batch, seq.t_begin + t, hv);
        for (index_t i = 0; i < K; ++i) {
          k[t * K + i] = x.k[i];
          la[t * K + i] = Rule::decay::log_alpha(x, i);
          if constexpr (erases<Rule>) ek[t * K + i] = erase_key<Rule>(x, i);
        }
        for (index_t j = 0; j < V; ++j) wv[t * V + j] = write_target<Rule>(x, j);
      }
      std::vector<double> R(static_cast<std::size_t>(K * K), 0.0), y(static_cast<std::size_t>(K));
      for (index_t i = 0; i < K; ++i) R[i * K + i] = 1;
      std::vector<double> ST(static_cast<std::size_t>(K * V), 0.0), mag(ST.size(), 0.0);
      for (index_t t = L - 1; t >= 0; --t) {
        for (index_t i = 0; i < K; ++i) {  // y = R_t k_t: where the token's write ends up
          double s = 0;
          for (index_t l = 0; l < K; ++l) s += R[i * K + l] * k[t * K + l];
          y[i] = s;
        }
        for (index_t i = 0; i < K; ++i)
          for (index_t j = 0; j < V; ++j) {
            const double c = y[i] * wv[t * V + j];
            ST[i * V + j] += c, mag[i * V + j] += std::abs(c);
          }
        // R_{t−1} = R_t A_t = (R_t − y ekᵀ) Diag(α_t)
        for (index_t i = 0; i < K; ++i)
          for (index_t l = 0; l < K; ++l) R[i * K + l] = (R[i * K + l] - y[i] * ek[t * K + l]) * std::exp(la[t * K + l]);
      }
      if (!a.initial_state.empty())
        for (index_t i = 0; i < K; ++i)
          for (index_t j = 0; j < V; ++j) {
            double c = 0;
            for (index_t l = 0; l < K; ++l) c += R[i * K + l] * double(a.initial_state(n, hv, l, j));
            ST[i * V + j] += c, mag[i * V + j] += std::abs(c);
          }
      for (std::size_t e = 0; e < ST.size(); ++e) num += mag[e] * mag[e], den += ST[e] * ST[e];
    }
  }
  return den > 0 ? std::sqrt(num / den) : 1.0;
}

}  // namespace linea::cuda_fuzz

namespace linea::cuda_fuzz {

// What the chunkwise forms' 16-bit write residuals cost, estimated from the case's inputs in float64.
//
// For 16-bit inputs the CUDA chunkwise forward and the backward round the corrections U = (u_t) of a chunk to the
// input type, the tensor-core operand of the state update S ← Γ S + K_dᵀ U and of the in-chunk reads (docs/usage.md,
// "The CUDA backend"; fla does the same). A rounding error δu_r of token r reaches the state S_t of a later token t
// of the same chunk unerased (Γ_{r+1..t} k_r δu_rᵀ: inside a chunk U is solved from the chunk's starting state, not
// token by token), and the chunk's end state carries it on through the exact transitions of the later chunks. With
// round-to-nearest errors independent and uniform (variance ε²/3 relative, ε = 2⁻⁸ for bf16, 2⁻¹¹ for fp16), the
// expected squared error of the state is, for each sequence and value head,
//   e²(t) = ρ²(t) e²(c) + ε²/3 · Σ_{r ≤ t in the chunk} ‖Γ_{r+1..t} ⊙ k_r‖² ‖u_r‖²,
// with e²(c) that of the chunk's starting state and ρ²(t) = ‖P_{c+1..t}‖²_F / K the mean energy the exact
// transitions A = (I − k (b ⊙ k)ᵀ) Diag(α) keep of an isotropic error. The estimates are these errors relative to the
// exact results: the final state (e²(T) against ‖S_T‖²), o_t = s S_tᵀ q_t (e²(t) ‖s q_t‖² / K) and the backward's
// dq_t = s S_t d_o_t (e²(t) s² ‖d_o_t‖² / V). Nothing else of the kernels' arithmetic is in them: they are the size
// of one documented rounding, not a bound on the kernels' error. Large where the corrections are large against the
// state they build: one key channel (K = 1: the written energy is not spread over K rows) and β near 2 (|1 − β k²|
// near 1: nothing forgets) — fuzz cases 168 (seed 20261214) and 261 (seed 20261215).
struct write_rounding_estimate {
  double final_state = 0;      // relative
  double o_error2 = 0, dq_error2 = 0;  // expected squared errors: relative_to() divides by the reference's norm
  double dq2 = 0;                      // ‖dq‖² of the identity read without an L2 norm (dq_t = s S_t d_o_t)
  template <class X, int R>
  static double relative_to(double error2, const tensor<X, R>& ref) {
    double r2 = 0;
    for (std::size_t i = 0; i < ref.size(); ++i) r2 += double(ref.data()[i]) * double(ref.data()[i]);
    return r2 > 0 ? std::sqrt(error2 / r2) : 0;
  }
};

// The CCQ read's o as the 16-bit chunk kernels compute it: their main pass reads the cleaned queries q̃ and (with the
// L2 norm) the normalised keys k̂ as 16-bit operands (ccq_kernel.hpp / ccq_chunked.hpp, the chunk kernels' operand
// type), a rounding the float64 reference does not have and which cancels like any other where o does. This runs
// that main pass in float64 — the identity read on q̃ and k̂ each rounded to Op — and returns its o's relative
// distance to `want_o` (the CCQ reference's o): what that rounding alone costs this case. `a`: the float64
// arguments of the case with its options; `q_tilde`: the reference's q̃ [B, T, HV, K] (before the scale).
// (Seed 20261220 case 285: gated_delta, CCQ decayed, bf16, K = 65, T = 2, L2 norm — o 1.07e-2 on the H200 against
// 9.8e-3 from this rounding, q̃'s 3.9e-3 and k̂'s 7.2e-3 alone; the CPU backend, which keeps both in float32, 1.6e-3.)
// round_q / round_k: which of the two is rounded (the CPU probe prints each alone; the fuzz driver rounds both).
template <class Rule, class Op, class T, class S>
double operand_rounding_o(const arguments<T, S>& a, const tensor<double, 4>& q_tilde, const tensor<double, 4>& want_o,
                          bool round_q = true, bool round_k = true) {
  const problem p = validate<Rule, read::identity>([&] {
    auto b = a;
    b.ccq = {};
    return b;
  }());
  const index_t B = p.B, T_ = p.T, HV = p.HV, K = p.K, G = p.group;
  const auto round = [](bool on, double x) { return on ? double(Op(x)) : x; };
  tensor<double, 4> qt({B, T_, HV, K}), kh({B, T_, HV, K}), o(want_o.extents());
  for (index_t b = 0; b < B; ++b)
    for (index_t t = 0; t < T_; ++t)
      for (index_t hv = 0; hv < HV; ++hv) {
        double ss = 0;
        for (index_t i = 0; i < K; ++i) ss += double(a.k(b, t, hv / G, i)) * double(a.k(b, t, hv / G, i));
        const double n = a.qk_l2norm ? 1 / std::sqrt(ss + 1e-6) : 1;
        for (index_t i = 0; i < K; ++i) {
          qt(b, t, hv, i) = round(round_q, q_tilde(b, t, hv, i));
          kh(b, t, hv, i) = round(round_k && a.qk_l2norm, double(a.k(b, t, hv / G, i)) * n);
        }
      }
  arguments<double, double> m;
  m.v = a.v, m.g = a.g, m.gk = a.gk, m.beta = a.beta, m.b = a.b, m.w = a.w, m.initial_state = a.initial_state;
  m.cu_seqlens = a.cu_seqlens, m.scale = a.scale, m.beta_act = a.beta_act, m.gate = a.gate;
  m.q = contiguous<4>(static_cast<const double*>(qt.data()), qt.extents());
  m.k = contiguous<4>(static_cast<const double*>(kh.data()), kh.extents());
  m.o = contiguous<4>(o.data(), o.extents());
  reference::recurrent<Rule, read::identity>(m);  // (no scale given: the same K^(-1/2) default, K unchanged)
  return linea::relative_error(o.view_of(), want_o.view_of());
}

template <class Rule, class T, class S, class DO>
write_rounding_estimate estimate_write_rounding(const arguments<T, S>& a, double eps, index_t chunk, const DO* d_o) {
  write_rounding_estimate est;
  if constexpr (erases<Rule>) {
    const problem p = validate<Rule, read::identity>(a);
    token_loader<Rule, double> load(p);
    const index_t K = p.K, V = p.V;
    const double var = eps * eps / 3, s = p.scale;
    double st_err = 0, st_ref = 0, o_err = 0, dq_err = 0, dq2 = 0;
    std::vector<double> St(static_cast<std::size_t>(K * V)), P(static_cast<std::size_t>(K * K)), W2(static_cast<std::size_t>(K));
    std::vector<double> u(static_cast<std::size_t>(V)), ek(static_cast<std::size_t>(K)), y(ek);
    for (index_t n = 0; n < p.N; ++n) {
      const sequence seq = sequence_of(a, p, n);
      for (index_t hv = 0; hv < p.HV; ++hv) {
        std::fill(St.begin(), St.end(), 0.0);
        if (!a.initial_state.empty())
          for (index_t i = 0; i < K; ++i)
            for (index_t j = 0; j < V; ++j) St[i * V + j] = double(a.initial_state(n, hv, i, j));
        double e2c = 0, e2 = 0;  // the error energy of the chunk's starting state, of the current state
        for (index_t t = seq.t_begin; t < seq.t_end; ++t) {
          if ((t - seq.t_begin) % chunk == 0) {  // a chunk starts: P = I, no in-chunk writes yet
            e2c = e2;
            std::fill(P.begin(), P.end(), 0.0), std::fill(W2.begin(), W2.end(), 0.0);
            for (index_t i = 0; i < K; ++i) P[i * K + i] = 1;
          }
          const auto x = load.load(a, p, seq.batch, t, hv);
          // the exact token: S' = Diag(α) S, u = w ⊙ v − S'ᵀ (b ⊙ k), S = S' + k uᵀ
          for (index_t i = 0; i < K; ++i) {
            const double al = std::exp(double(Rule::decay::log_alpha(x, i)));
            ek[i] = erase_key<Rule>(x, i);
            for (index_t j = 0; j < V; ++j) St[i * V + j] *= al;
            for (index_t l = 0; l < K; ++l) P[i * K + l] *= al;
            W2[i] *= al * al;
          }
          double uu = 0;
          for (index_t j = 0; j < V; ++j) {
            double r = 0;
            for (index_t i = 0; i < K; ++i) r += ek[i] * St[i * V + j];
            u[j] = write_target<Rule>(x, j) - r, uu += u[j] * u[j];
          }
          for (index_t i = 0; i < K; ++i)
            for (index_t j = 0; j < V; ++j) St[i * V + j] += x.k[i] * u[j];
          // P ← (I − k ekᵀ) P (its Diag(α) applied above); the in-chunk written energy
          for (index_t l = 0; l < K; ++l) {
            double c = 0;
            for (index_t i = 0; i < K; ++i) c += ek[i] * P[i * K + l];
            y[l] = c;
          }
          double p2 = 0, w2 = 0;
          for (index_t i = 0; i < K; ++i) {
            for (index_t l = 0; l < K; ++l) P[i * K + l] -= x.k[i] * y[l], p2 += P[i * K + l] * P[i * K + l];
            W2[i] += x.k[i] * x.k[i] * uu, w2 += W2[i];
          }
          e2 = p2 / double(K) * e2c + var * w2;
          double qq = 0;
          for (index_t i = 0; i < K; ++i) qq += x.q[i] * x.q[i];
          o_err += s * s * e2 * qq / double(K);
          if (d_o) {
            double dd = 0;
            for (index_t j = 0; j < V; ++j) dd += double((*d_o)(seq.batch, t, hv, j)) * double((*d_o)(seq.batch, t, hv, j));
            dq_err += s * s * e2 * dd / double(V);
            for (index_t i = 0; i < K; ++i) {
              double c = 0;
              for (index_t j = 0; j < V; ++j) c += St[i * V + j] * double((*d_o)(seq.batch, t, hv, j));
              dq2 += s * s * c * c;  // (value heads of one key head add into one dq: a norm of the parts, for the sweep)
            }
          }
        }
        st_err += e2;
        for (double v : St) st_ref += v * v;
      }
    }
    est.final_state = st_ref > 0 ? std::sqrt(st_err / st_ref) : 0;
    est.o_error2 = o_err, est.dq_error2 = dq_err, est.dq2 = dq2;
  }
  return est;
}

}  // namespace linea::cuda_fuzz
