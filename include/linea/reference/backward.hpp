// linea/reference/backward.hpp — the float64 reference backward: an explicit reverse-time recurrence.
//
//   linea::reference::backward<Rule, Read>(args, grads);
//
// Given the forward's arguments and dL/do, dL/dS_T (core/gradients.hpp), it writes the gradient of
// L = ⟨o, dL/do⟩ + ⟨S_T, dL/dS_T⟩ with respect to every input the forward reads (SPEC §6). It computes in
// `Real` (double by default) whatever the input type. Derivation: docs/math/backward.md.
//
// Per (sequence, value head): first the forward recurrence of reference/recurrence.hpp again, keeping every state
// S_0 … S_T (memory T·K·V: fine for a reference, not for a fast backward). Then t = T … 1, carrying dS = dL/dS_t:
//   4. read     o = S_tᵀ(s q̃)                 dq̃ = s S_t do,              dS += s q̃ doᵀ
//      (the read policy turns dq̃ into dq, dk and its own gradients: reference/read_adjoint.hpp)
//   3. write    S_t = S' + k uᵀ               dk += dS u,                 du = dSᵀ k,      dS' = dS
//   2. correct  u = w⊙v − S'ᵀ(e⊙k)            dv = w⊙du,  dw_j = v_j du_j, r = S' du,
//                                             de_i = −k_i r_i,  dk −= e⊙r, dS' −= (e⊙k) duᵀ
//   1. decay    S' = Diag(α) S_{t−1}          d log α_i = Σ_j dS'_ij S'_ij, dS_{t−1} = Diag(α) dS'
// and at the end dL/dS_0 = dS. The adjoints (d log α, de, dw) become gradients of the rule's inputs in one
// place, rule_adjoint.hpp; the in-kernel options' adjoints (L2 norm, gates, β) are input_adjoints.hpp.
#pragma once
#include <cmath>
#include <vector>

#include "../backend/isa.hpp"
#include "../core/gradients.hpp"
#include "../core/load.hpp"
#include "../core/empty_call.hpp"
#include "../core/validate.hpp"
#include "../read/ccq.hpp"
#include "../read/identity.hpp"
#include "gradient_sums.hpp"
#include "input_adjoints.hpp"
#include "read_adjoint.hpp"
#include "recurrence.hpp"
#include "rule_adjoint.hpp"

namespace linea::reference::inline LINEA_ISA {

// Every check of a backward call, before anything is written: the forward's (validate<Rule, Read>), then the
// gradients'. The backward reads no forward output, so `o` may be left out.
template <class Rule, class Read, class T, class S>
problem validate_backward(const arguments<T, S>& a, const gradients<T, S>& g) {
  linea::detail::expect_given(g.d_o, "d_o", "the backward needs dL/do [B, T, HV, V]");
  // The forward's checks want an o: without one, a stand-in of the shape q and v imply ([B, T] of q, [HV, V] of v),
  // never written, so that a d_o of another shape is reported as 'd_o' by validate_gradients (not as 'o').
  arguments<T, S> shapes = a;
  T unused{};
  if (shapes.o.empty())
    shapes.o = strided<4>(&unused, {a.q.extent(0), a.q.extent(1), a.v.extent(2), a.v.extent(3)}, {0, 0, 0, 0});
  const problem p = validate_shapes<Rule, Read>(shapes);
  linea::detail::expect_no_aliasing(a);  // on the caller's views: the stand-in o above is never written
  if (!a.state_indices.empty()) throw error("argument 'state_indices' belongs to the decode step, not the backward");
  if (!a.checkpoints.empty()) throw error("argument 'checkpoints' is produced by the chunkwise form only");
  validate_gradients<!Read::is_identity>(a, g, p);
  return p;
}

namespace detail {

// Adds one token's gradients (of the values the rule used) to the sums, as gradients of the raw stored inputs.
template <class Real, class T, class S>
void add_token_gradients(const arguments<T, S>& a, const problem& p, gradient_sums<Real>& sums, index_t bt, index_t t,
                         index_t hv, const std::vector<Real>& dq_hat, const std::vector<Real>& dk_hat,
                         const std::vector<Real>& dv, const rule_input_gradients<Real>& r) {
  const index_t K = p.K, V = p.V, h = hv / p.group;
  // q, k: through the in-kernel L2 norm when it is on; value heads of a group add into their key head.
  std::vector<Real> raw(static_cast<std::size_t>(K)), dx(static_cast<std::size_t>(K));
  const auto add_qk = [&](const view<const T, 4>& x, const std::vector<Real>& dx_hat,
                          linea::detail::sum_tensor<Real, 4>& sum) {
    if (a.qk_l2norm) {
      for (index_t i = 0; i < K; ++i) raw[i] = load_as<Real>(x(bt, t, h, i)), dx[i] = 0;
      l2_normalize_adjoint(raw.data(), dx_hat.data(), K, dx.data());
    } else {
      dx = dx_hat;
    }
    for (index_t i = 0; i < K; ++i) sum(bt, t, h, i) += dx[i];
  };
  add_qk(a.q, dq_hat, sums.dq);
  add_qk(a.k, dk_hat, sums.dk);
  for (index_t j = 0; j < V; ++j) sums.dv(bt, t, hv, j) += dv[j];

  // Gates: to the raw logits, A_log and dt_bias when the gate is computed in the kernel.
  const bool bound = a.gate.lower_bound.has_value();
  const Real lb = bound ? Real(*a.gate.lower_bound) : Real(0);
  const auto add_gate = [&](Real d, Real x, index_t bias_at, Real& d_logit) {
    if (!a.gate.active()) {
      d_logit += d;
      return;
    }
    const Real bias = a.gate.dt_bias.empty() ? Real(0) : Real(a.gate.dt_bias(bias_at));
    const gate_partials<Real> pd = activate_gate_partials(x, Real(a.gate.A_log(hv)), bias, bound, lb);
    d_logit += d * pd.dx;
    sums.dA_log(hv) += d * pd.dA_log;
    if (!a.gate.dt_bias.empty()) sums.ddt_bias(bias_at) += d * pd.ddt_bias;
  };
  if (!a.g.empty()) add_gate(r.dg, load_as<Real>(a.g(bt, t, hv)), hv, sums.dg(bt, t, hv));
  if (!a.gk.empty())
    for (index_t i = 0; i < K; ++i) add_gate(r.dgk[i], load_as<Real>(a.gk(bt, t, hv, i)), hv * K + i, sums.dgk(bt, t, hv, i));
  if (!a.beta.empty())
    sums.dbeta(bt, t, hv) += r.dbeta * beta_activation_derivative(load_as<Real>(a.beta(bt, t, hv)), a.beta_act);
  if (!a.b.empty()) {
    for (index_t i = 0; i < K; ++i) sums.db(bt, t, hv, i) += r.db[i];
    for (index_t j = 0; j < V; ++j) sums.dw(bt, t, hv, j) += r.dw[j];
  }
}

}  // namespace detail

template <class Rule, class Read = read::identity, class Real = double, class T, class S>
void backward(const arguments<T, S>& a, const gradients<T, S>& g) {
  static_assert(differentiable_rule<Rule>, "linea::reference::backward: the rule's policies have no adjoint hooks");
  using Update = typename Rule::update;
  const problem p = validate_backward<Rule, Read>(a, g);
  if (linea::detail::backward_writes_no_state_gradient(g, p)) {  // no tokens (core/empty_call.hpp)
    for (index_t i = 0; i < g.dA_log.extent(0); ++i) g.dA_log(i) = S(0);
    for (index_t i = 0; i < g.ddt_bias.extent(0); ++i) g.ddt_bias(i) = S(0);
    return;
  }
  const index_t K = p.K, V = p.V;
  const Real scale = Real(p.scale);

  token_loader<Rule, Real> load(p);
  read_tape<Read, Real> reader(p);
  gradient_sums<Real> sums(p, a.gate.dt_bias.empty() ? 0 : a.gate.dt_bias.extent(0));
  rule_input_gradients<Real> rule_grads(K, V);
  std::vector<Real> dq(K), dk(K), dv(V), dqt(K), dr(V), du(V), dlog_alpha(K), d_erase(K), d_write(V), dz(K);

  for (index_t n = 0; n < p.N; ++n) {
    const sequence seq = sequence_of(a, p, n);
    const index_t L = seq.length(), bt = seq.batch;
    for (index_t hv = 0; hv < p.HV; ++hv) {
      // ---- forward: S_0 … S_L, the read's record, and the normaliser's key sums z_t ----
      std::vector<matrix<Real>> state(static_cast<std::size_t>(L + 1), matrix<Real>(K, V));
      if (!a.initial_state.empty())
        for (index_t i = 0; i < K; ++i)
          for (index_t j = 0; j < V; ++j) state[0](i, j) = Real(a.initial_state(n, hv, i, j));
      std::vector<Real> key_sum(static_cast<std::size_t>((L + 1) * K), Real(0));  // row s: z after s tokens
      reader.begin(a, p, n, hv);
      for (index_t s = 0; s < L; ++s) {
        const index_t t = seq.t_begin + s;
        const token<Real> x = load.load(a, p, bt, t, hv);
        state[s + 1] = state[s];
        decay_state<Rule>(state[s + 1], x);
        const std::vector<Real> u = correction<Rule>(state[s + 1], x);
        write(state[s + 1], x.k, u);
        reader.forward(a, bt, t, hv, x, mean_log_decay<Rule>(x, K));
        for (index_t i = 0; i < K; ++i) key_sum[(s + 1) * K + i] = key_sum[s * K + i] + x.k[i];
      }

      // ---- backward: t = T … 1, carrying dS = dL/dS_t (and dz = dL/dz_t for `normalize`) ----
      matrix<Real> dS(K, V);
      if (!g.d_final_state.empty())
        for (index_t i = 0; i < K; ++i)
          for (index_t j = 0; j < V; ++j) dS(i, j) = Real(g.d_final_state(n, hv, i, j));
      std::fill(dz.begin(), dz.end(), Real(0));

      for (index_t s = L - 1; s >= 0; --s) {
        const index_t t = seq.t_begin + s;
        const token<Real> x = load.load(a, p, bt, t, hv);
        std::fill(dq.begin(), dq.end(), Real(0));
        std::fill(dk.begin(), dk.end(), Real(0));
        std::fill(dlog_alpha.begin(), dlog_alpha.end(), Real(0));
        matrix<Real>& St = state[s + 1];
        const Real* qt = reader.q_tilde(s, x);

        // 4. read: o = S_tᵀ(s q̃), or with `normalize` o = r / den, r = S_tᵀ(s q̃), den = s q·z_t + 1e-10.
        for (index_t j = 0; j < V; ++j) dr[j] = load_as<Real>(g.d_o(bt, t, hv, j));
        if (a.normalize) {
          const Real* z = key_sum.data() + (s + 1) * K;
          Real den = 0;
          for (index_t i = 0; i < K; ++i) den += scale * x.q[i] * z[i];
          den += Real(1e-10);
          Real do_r = 0;  // Σ_j do_j r_j
          for (index_t j = 0; j < V; ++j) {
            Real r = 0;
            for (index_t i = 0; i < K; ++i) r += St(i, j) * scale * qt[i];
            do_r += dr[j] * r;
          }
          const Real dden = -do_r / (den * den);  // d(r/den)/d den = −r/den²
          for (index_t i = 0; i < K; ++i) {
            dq[i] += scale * z[i] * dden;  // den = s q·z: dq += s z dden, dz_t += s q dden
            dz[i] += scale * x.q[i] * dden;
          }
          for (index_t j = 0; j < V; ++j) dr[j] /= den;  // dr = do / den
        }
        for (index_t i = 0; i < K; ++i) {
          Real acc = 0;
          for (index_t j = 0; j < V; ++j) {
            acc += St(i, j) * dr[j];
            dS(i, j) += scale * qt[i] * dr[j];  // dS_t += s q̃ drᵀ
          }
          dqt[i] = scale * acc;  // dq̃ = s S_t dr
        }
        // The read policy: dq̃ → dq, dk (CCQ: through Σ_t) and its own gradients; the adjoint of its default log
        // decay c_t = (1/K) Σ_i log α_i (g, mean of gk, or 0: mean_log_decay) goes to every log α_i.
        const Real dc = reader.backward(a, sums, bt, t, hv, s, x, mean_log_decay<Rule>(x, K), dqt.data(), dq.data(),
                                        dk.data());
        for (index_t i = 0; i < K; ++i) dlog_alpha[i] += dc / Real(K);
        // `normalize`'s key sum z_t = z_{t−1} + k_t: dk_t gets dz_t, and dz_{t−1} = dz_t.
        if (a.normalize)
          for (index_t i = 0; i < K; ++i) dk[i] += dz[i];

        // 3. write: S_t = S' + k uᵀ (S' and u recomputed from S_{t−1}).
        matrix<Real> Sp = state[s];
        decay_state<Rule>(Sp, x);
        const std::vector<Real> u = correction<Rule>(Sp, x);
        for (index_t j = 0; j < V; ++j) {
          du[j] = 0;
          for (index_t i = 0; i < K; ++i) du[j] += x.k[i] * dS(i, j);  // du = dSᵀ k
        }
        for (index_t i = 0; i < K; ++i)
          for (index_t j = 0; j < V; ++j) dk[i] += dS(i, j) * u[j];  // dk += dS u
        // dS' = dS (the write adds k uᵀ to S'), continued below.

        // 2. correct: u = w ⊙ v − S'ᵀ(e ⊙ k), with e_i = erase gate, w_j = write gate of the rule. An additive
        //    update has no erase term at all (e ≡ 0): it is skipped, not multiplied by 0, so that a NaN or Inf in
        //    S' or du (from a non-finite input or upstream gradient) does not reach dk, dS through 0 · NaN.
        for (index_t j = 0; j < V; ++j) {
          d_write[j] = du[j] * x.v[j];
          dv[j] = Update::write_gate(x, j) * du[j];
        }
        for (index_t i = 0; i < K; ++i) {
          d_erase[i] = 0;
          if constexpr (Update::kind == update_kind::erase) {
            const Real e = Update::erase_gate(x, i);
            Real r = 0;  // (S' du)_i
            for (index_t j = 0; j < V; ++j) r += Sp(i, j) * du[j];
            d_erase[i] = -x.k[i] * r;
            dk[i] -= e * r;
            for (index_t j = 0; j < V; ++j) dS(i, j) -= e * x.k[i] * du[j];
          }
        }

        // 1. decay: S' = Diag(α) S_{t−1}, α_i = exp(log α_i).
        for (index_t i = 0; i < K; ++i) {
          const Real alpha = std::exp(Rule::decay::log_alpha(x, i));
          for (index_t j = 0; j < V; ++j) {
            dlog_alpha[i] += dS(i, j) * Sp(i, j);
            dS(i, j) *= alpha;  // now dL/dS_{t−1}
          }
        }

        rule_adjoint<Rule>(dlog_alpha.data(), d_erase.data(), d_write.data(), K, V, rule_grads);
        detail::add_token_gradients(a, p, sums, bt, t, hv, dq, dk, dv, rule_grads);
      }

      for (index_t i = 0; i < K; ++i)
        for (index_t j = 0; j < V; ++j) sums.dh0(n, hv, i, j) += dS(i, j);
      reader.end(sums, n, hv);
    }
  }
  sums.store(g);
}

}  // namespace linea::reference
