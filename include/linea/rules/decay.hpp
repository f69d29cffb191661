// linea/rules/decay.hpp — step 1 of every rule: S' = Diag(α_t) S_{t-1}, α_t = exp(log_alpha).
//
// A decay policy is
//   kind                          how it enters the chunk algebra (decay_kind, rules/policy.hpp)
//   inputs                        the per-token inputs it reads (input::g, input::gk, ...)
//   log_alpha<Lanes>(x, i)        log α of key lanes [i, i + Lanes::size) of token x   (the hook every path calls)
//   log_alpha_adjoint(dla, K, dx) its adjoint: given dL/d log α_i (i < K), adds the gradients of the inputs it
//                                 reads to dx (a token_gradient: dx.g, dx.gk[i])
// A decay of kind `scalar` must return the same value for every i; of kind `none`, zero.
#pragma once
#include "policy.hpp"
#include "token.hpp"

namespace linea::decay {

// S' = S_{t-1}: no gate.
struct none {
  static constexpr decay_kind kind = decay_kind::none;
  static constexpr unsigned inputs = input::none;
  template <class Lanes = void, class X>
  LINEA_HD static auto log_alpha(const X&, index_t) {
    using L = lanes_or_scalar<Lanes, typename X::value_type>;
    return L::splat(typename X::value_type(0));
  }
  template <class R, class DX>
  LINEA_HD static void log_alpha_adjoint(const R*, index_t, DX&) {}
};

// S' = exp(g_t) S_{t-1}: one gate per token and value head (simple_gla, Mamba2, Gated DeltaNet).
struct scalar {
  static constexpr decay_kind kind = decay_kind::scalar;
  static constexpr unsigned inputs = input::g;
  template <class Lanes = void, class X>
  LINEA_HD static auto log_alpha(const X& x, index_t) {
    return lanes_or_scalar<Lanes, typename X::value_type>::splat(x.g);
  }
  template <class R, class DX>  // every lane's log α is g: dg = Σ_i dL/d log α_i
  LINEA_HD static void log_alpha_adjoint(const R* d_log_alpha, index_t K, DX& dx) {
    for (index_t i = 0; i < K; ++i) dx.g += d_log_alpha[i];
  }
};

// S' = Diag(exp(gk_t)) S_{t-1}: one gate per key channel (GLA, KDA, GDN-2).
struct per_key {
  static constexpr decay_kind kind = decay_kind::per_key;
  static constexpr unsigned inputs = input::gk;
  template <class Lanes = void, class X>
  LINEA_HD static auto log_alpha(const X& x, index_t i) {
    return lanes_or_scalar<Lanes, typename X::value_type>::at(x.gk, i);
  }
  template <class R, class DX>  // dgk_i = dL/d log α_i
  LINEA_HD static void log_alpha_adjoint(const R* d_log_alpha, index_t K, DX& dx) {
    for (index_t i = 0; i < K; ++i) dx.gk[i] += d_log_alpha[i];
  }
};

}  // namespace linea::decay
