// linea/reference/rule_adjoint.hpp — the one place of the backward that knows which rule it runs.
//
// The reverse recurrence (backward.hpp) is written once for every rule in terms of the three per-token
// quantities a rule defines (rules/decay.hpp, rules/update.hpp):
//     log α_i  (decay, per key channel),   e_i = erase gate (per key channel),   w_j = write gate (per value channel).
// It produces their adjoints d log α_i, d e_i, d w_j. This function maps them onto the gradients of the
// (activated) inputs the rule reads:
//     decay none     → nothing                  update additive → nothing          (e = 0, w = 1)
//     decay scalar   → dg   = Σ_i d log α_i     update delta    → dβ = Σ_i d e_i + Σ_j d w_j   (e = w = β)
//     decay per_key  → dgk_i = d log α_i        update delta2   → db_i = d e_i, dw_j = d w_j     (given b, w)
// When the rule policies gain hooks for their own adjoints, only this function changes.
#pragma once
#include <vector>

#include "../rules/write_rule.hpp"

namespace linea::reference {

// The gradients of one token's activated rule inputs (before the activation adjoints of input_adjoints.hpp).
template <class R>
struct rule_input_gradients {
  R dg = 0;               // scalar log decay g
  std::vector<R> dgk;     // per-key log decay gk [K]
  R dbeta = 0;            // β (after its activation)
  std::vector<R> db, dw;  // GDN-2 erase gate [K], write gate [V]
  rule_input_gradients(index_t K, index_t V) : dgk(static_cast<std::size_t>(K)), db(dgk.size()), dw(static_cast<std::size_t>(V)) {}
};

template <class Rule, class R>
void rule_adjoint(const R* d_log_alpha, const R* d_erase, const R* d_write, index_t K, index_t V,
                  rule_input_gradients<R>& out) {
  using Decay = typename Rule::decay;
  using Update = typename Rule::update;
  if constexpr (Decay::scalar_gate) {
    out.dg = 0;
    for (index_t i = 0; i < K; ++i) out.dg += d_log_alpha[i];
  }
  if constexpr (Decay::key_gate)
    for (index_t i = 0; i < K; ++i) out.dgk[i] = d_log_alpha[i];
  if constexpr (Update::uses_beta) {
    out.dbeta = 0;
    for (index_t i = 0; i < K; ++i) out.dbeta += d_erase[i];
    for (index_t j = 0; j < V; ++j) out.dbeta += d_write[j];
  }
  if constexpr (Update::uses_channel_gates) {
    for (index_t i = 0; i < K; ++i) out.db[i] = d_erase[i];
    for (index_t j = 0; j < V; ++j) out.dw[j] = d_write[j];
  }
}

}  // namespace linea::reference
