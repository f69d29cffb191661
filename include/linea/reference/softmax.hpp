// linea/reference/softmax.hpp — float64 softmax attention: the point of comparison for linear attention.
//
//   o_t = Σ_{j≤t} p_tj v_j,    p_tj = exp(s · q_tᵀ k_j) / Σ_{i≤t} exp(s · q_tᵀ k_i)
//
// Not a kernel (it is O(T²)): a readable truth for examples and tests, like reference/recurrence.hpp.
// softmax_read answers one query against a set of stored keys and values; softmax_attention runs the causal
// form over an arguments struct (q, k, v, o, scale, cu_seqlens, qk_l2norm; value head hv reads key head hv / G).
#pragma once
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "../backend/isa.hpp"
#include "../core/arguments.hpp"
#include "../core/gates.hpp"
#include "../core/validate.hpp"
#include "../rules/additive.hpp"

namespace linea::reference::inline LINEA_ISA {

// o = Σ_j softmax_j(s · qᵀ k_j) v_j over keys [n, K] and values [n, V] (n ≥ 1), computed stably in Real.
template <class Real = double, class Q, class TK, class TV>
std::vector<Real> softmax_read(const Q* q, const view<TK, 2>& keys, const view<TV, 2>& values, Real scale) {
  const index_t n = keys.extent(0), K = keys.extent(1), V = values.extent(1);
  std::vector<Real> logit(static_cast<std::size_t>(n));
  Real top = -std::numeric_limits<Real>::infinity();
  for (index_t j = 0; j < n; ++j) {
    Real dot = 0;
    for (index_t i = 0; i < K; ++i) dot += Real(q[i]) * Real(keys(j, i));
    logit[j] = scale * dot;
    top = std::max(top, logit[j]);
  }
  Real total = 0;
  std::vector<Real> o(static_cast<std::size_t>(V), Real(0));
  for (index_t j = 0; j < n; ++j) {
    const Real p = std::exp(logit[j] - top);  // unnormalised weight, ≤ 1
    total += p;
    for (index_t c = 0; c < V; ++c) o[c] += p * Real(values(j, c));
  }
  for (Real& x : o) x /= total;
  return o;
}

// Causal softmax attention over every sequence and value head of `a` (gates, β and states must not be given:
// softmax attention has none).
template <class Real = double, class T, class S>
void softmax_attention(const arguments<T, S>& a) {
  const problem p = validate_write<additive>(a);  // q, k, v, o, cu_seqlens, scale; no gates or β
  linea::detail::expect_no_aliasing(a);
  if (!a.initial_state.empty() || !a.final_state.empty() || !a.residual.empty() || a.normalize)
    throw error("softmax attention keeps no state: initial_state, final_state, residual and normalize are not used");
  const Real scale = Real(p.scale);
  std::vector<Real> keys, values, q(static_cast<std::size_t>(p.K));
  for (index_t n = 0; n < p.N; ++n) {
    const sequence seq = sequence_of(a, p, n);
    for (index_t hv = 0; hv < p.HV; ++hv) {
      const index_t h = hv / p.group, L = seq.length();
      keys.assign(static_cast<std::size_t>(L * p.K), Real(0));
      values.assign(static_cast<std::size_t>(L * p.V), Real(0));
      for (index_t j = 0; j < L; ++j) {
        for (index_t i = 0; i < p.K; ++i) keys[j * p.K + i] = Real(a.k(seq.batch, seq.t_begin + j, h, i));
        if (a.qk_l2norm) l2_normalize(&keys[j * p.K], p.K);
        for (index_t c = 0; c < p.V; ++c) values[j * p.V + c] = Real(a.v(seq.batch, seq.t_begin + j, hv, c));
      }
      for (index_t t = 0; t < L; ++t) {  // token t reads keys 0..t
        for (index_t i = 0; i < p.K; ++i) q[i] = Real(a.q(seq.batch, seq.t_begin + t, h, i));
        if (a.qk_l2norm) l2_normalize(q.data(), p.K);
        const auto o = softmax_read(q.data(), contiguous<2>(static_cast<const Real*>(keys.data()), {t + 1, p.K}),
                                    contiguous<2>(static_cast<const Real*>(values.data()), {t + 1, p.V}), scale);
        for (index_t c = 0; c < p.V; ++c) a.o(seq.batch, seq.t_begin + t, hv, c) = store_as<T>(o[c]);
      }
    }
  }
}

}  // namespace linea::reference
