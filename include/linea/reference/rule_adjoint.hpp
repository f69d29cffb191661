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
// The mapping is the policies' own adjoint hooks (log_alpha_adjoint, gates_adjoint), next to their forward hooks.
#pragma once
#include <algorithm>
#include <vector>

#include "../backend/isa.hpp"
#include "../rules/write_rule.hpp"

namespace linea::reference::inline LINEA_ISA {

// The gradients of one token's activated rule inputs (before the activation adjoints of input_adjoints.hpp).
template <class R>
struct rule_input_gradients {
  R dg = 0;               // scalar log decay g
  std::vector<R> dgk;     // per-key log decay gk [K]
  R dbeta = 0;            // β (after its activation)
  std::vector<R> db, dw;  // GDN-2 erase gate [K], write gate [V]
  rule_input_gradients(index_t K, index_t V) : dgk(static_cast<std::size_t>(K)), db(dgk.size()), dw(static_cast<std::size_t>(V)) {}
};

// The names the adjoint hooks write (dx.g, dx.gk[i], dx.beta, dx.b[i], dx.w[j]) over rule_input_gradients.
template <class R>
struct token_gradient {
  R& g;
  std::vector<R>& gk;
  R& beta;
  std::vector<R>& b;
  std::vector<R>& w;
  explicit token_gradient(rule_input_gradients<R>& o) : g(o.dg), gk(o.dgk), beta(o.dbeta), b(o.db), w(o.dw) {}
};

template <class Rule, class R>
void rule_adjoint(const R* d_log_alpha, const R* d_erase, const R* d_write, index_t K, index_t V,
                  rule_input_gradients<R>& out) {
  out.dg = 0, out.dbeta = 0;
  std::fill(out.dgk.begin(), out.dgk.end(), R(0));
  std::fill(out.db.begin(), out.db.end(), R(0));
  std::fill(out.dw.begin(), out.dw.end(), R(0));
  token_gradient<R> dx{out};
  Rule::decay::log_alpha_adjoint(d_log_alpha, K, dx);        // each policy's adjoint, next to its hook
  Rule::update::gates_adjoint(d_erase, K, d_write, V, dx);
}

}  // namespace linea::reference
