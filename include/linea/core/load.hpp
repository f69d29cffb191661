// linea/core/load.hpp — gathers one token's inputs at one value head into contiguous buffers of type R.
//
// Used by the host forms (reference, recurrent, step); the chunkwise form loads whole chunks the same way.
#pragma once
#include <vector>

#include "../rules/token.hpp"
#include "arguments.hpp"
#include "gates.hpp"

namespace linea {

template <class Rule, class R>
class token_loader {
 public:
  explicit token_loader(const problem& p) : q_(p.K), k_(p.K), v_(p.V), gk_(p.K), b_(p.K), w_(p.V) {}

  // Token t of batch row bt at value head hv (key head hv / G).
  template <class T, class S>
  token<R> load(const arguments<T, S>& a, const problem& p, index_t bt, index_t t, index_t hv) {
    using Decay = typename Rule::decay;
    using Update = typename Rule::update;
    const index_t h = hv / p.group;
    for (index_t i = 0; i < p.K; ++i) {
      q_[i] = load_as<R>(a.q(bt, t, h, i));
      k_[i] = load_as<R>(a.k(bt, t, h, i));
    }
    if (a.qk_l2norm) {
      l2_normalize(q_.data(), p.K);
      l2_normalize(k_.data(), p.K);
    }
    for (index_t j = 0; j < p.V; ++j) v_[j] = load_as<R>(a.v(bt, t, hv, j));

    token<R> x;
    x.q = q_.data(), x.k = k_.data(), x.v = v_.data();
    const bool bound = a.gate.lower_bound.has_value();
    const R lb = bound ? R(*a.gate.lower_bound) : R(0);
    if constexpr (Decay::scalar_gate) {
      x.g = load_as<R>(a.g(bt, t, hv));
      if (a.gate.active()) {
        const R bias = a.gate.dt_bias.empty() ? R(0) : R(a.gate.dt_bias(hv));
        x.g = activate_gate(x.g, R(a.gate.A_log(hv)), bias, bound, lb);
      }
    }
    if constexpr (Decay::key_gate) {
      for (index_t i = 0; i < p.K; ++i) {
        gk_[i] = load_as<R>(a.gk(bt, t, hv, i));
        if (a.gate.active()) {
          const R bias = a.gate.dt_bias.empty() ? R(0) : R(a.gate.dt_bias(hv * p.K + i));
          gk_[i] = activate_gate(gk_[i], R(a.gate.A_log(hv)), bias, bound, lb);
        }
      }
      x.gk = gk_.data();
    }
    if constexpr (Update::uses_beta) x.beta = activate_beta(load_as<R>(a.beta(bt, t, hv)), a.beta_act);
    if constexpr (Update::uses_channel_gates) {
      for (index_t i = 0; i < p.K; ++i) b_[i] = load_as<R>(a.b(bt, t, hv, i));
      for (index_t j = 0; j < p.V; ++j) w_[j] = load_as<R>(a.w(bt, t, hv, j));
      x.b = b_.data(), x.w = w_.data();
    }
    return x;
  }

 private:
  std::vector<R> q_, k_, v_, gk_, b_, w_;
};

// The mean over key channels of a token's log decay: the default CCQ statistics decay (SPEC §3).
template <class Rule, class R>
R mean_log_decay(const token<R>& x, index_t K) {
  using Decay = typename Rule::decay;
  if constexpr (Decay::key_gate) {
    R s = 0;
    for (index_t i = 0; i < K; ++i) s += x.gk[i];
    return s / R(K);
  } else if constexpr (Decay::scalar_gate) {
    return x.g;
  } else {
    return R(0);
  }
}

}  // namespace linea
