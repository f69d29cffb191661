// linea/rules/update.hpp — steps 2–3 of every rule: the correction and the write.
//
//   u_t = w_t ⊙ v_t − S'ᵀ (b_t ⊙ k_t),   S_t = S' + k_t u_tᵀ
//
// Every update is this one formula with its own erase gate b (per key channel) and write gate w (per value
// channel): additive b = 0, w = 1; delta b = w = β; delta2 (GDN-2) b and w given. An update policy is
//   kind                          update_kind::additive (b = 0: no triangular solve) or update_kind::erase
//   inputs                        the per-token inputs it reads
//   erase_gate<Lanes>(x, i)       b of key lanes [i, i + Lanes::size)       (hooks every path calls)
//   write_gate<Lanes>(x, j)       w of value lanes [j, j + Lanes::size)
//   gates_adjoint(de, K, dw, V, dx)  their adjoint: given dL/db_i (i < K) and dL/dw_j (j < V), adds the gradients
//                                 of the inputs the update reads to dx (a token_gradient: dx.beta, dx.b[i], dx.w[j])
// The erase key b ⊙ k and the write target w ⊙ v are formed from them (rules/write_rule.hpp).
#pragma once
#include "policy.hpp"
#include "token.hpp"

namespace linea::update {

// u_t = v_t
struct additive {
  static constexpr update_kind kind = update_kind::additive;
  static constexpr unsigned inputs = input::none;
  template <class Lanes = void, class X>
  LINEA_HD static auto erase_gate(const X&, index_t) {
    return lanes_or_scalar<Lanes, typename X::value_type>::splat(typename X::value_type(0));
  }
  template <class Lanes = void, class X>
  LINEA_HD static auto write_gate(const X&, index_t) {
    return lanes_or_scalar<Lanes, typename X::value_type>::splat(typename X::value_type(1));
  }
  template <class R, class DX>
  LINEA_HD static void gates_adjoint(const R*, index_t, const R*, index_t, DX&) {}
};

// u_t = β_t (v_t − S'ᵀ k_t)
struct delta {
  static constexpr update_kind kind = update_kind::erase;
  static constexpr unsigned inputs = input::beta;
  template <class Lanes = void, class X>
  LINEA_HD static auto erase_gate(const X& x, index_t) {
    return lanes_or_scalar<Lanes, typename X::value_type>::splat(x.beta);
  }
  template <class Lanes = void, class X>
  LINEA_HD static auto write_gate(const X& x, index_t) {
    return lanes_or_scalar<Lanes, typename X::value_type>::splat(x.beta);
  }
  template <class R, class DX>  // b = w = β in every lane: dβ = Σ_i dL/db_i + Σ_j dL/dw_j
  LINEA_HD static void gates_adjoint(const R* d_erase, index_t K, const R* d_write, index_t V, DX& dx) {
    for (index_t i = 0; i < K; ++i) dx.beta += d_erase[i];
    for (index_t j = 0; j < V; ++j) dx.beta += d_write[j];
  }
};

// u_t = w_t ⊙ v_t − S'ᵀ (b_t ⊙ k_t)   (Gated DeltaNet-2: separate erase and write gates)
struct delta2 {
  static constexpr update_kind kind = update_kind::erase;
  static constexpr unsigned inputs = input::b | input::w;
  template <class Lanes = void, class X>
  LINEA_HD static auto erase_gate(const X& x, index_t i) {
    return lanes_or_scalar<Lanes, typename X::value_type>::at(x.b, i);
  }
  template <class Lanes = void, class X>
  LINEA_HD static auto write_gate(const X& x, index_t j) {
    return lanes_or_scalar<Lanes, typename X::value_type>::at(x.w, j);
  }
  template <class R, class DX>
  LINEA_HD static void gates_adjoint(const R* d_erase, index_t K, const R* d_write, index_t V, DX& dx) {
    for (index_t i = 0; i < K; ++i) dx.b[i] += d_erase[i];
    for (index_t j = 0; j < V; ++j) dx.w[j] += d_write[j];
  }
};

}  // namespace linea::update
