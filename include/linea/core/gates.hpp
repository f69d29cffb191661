// linea/core/gates.hpp — turning stored inputs into the values the rules use (SPEC §1):
// in-kernel L2 norm of q and k, beta's activation, in-kernel gates from logits.
#pragma once
#include <cmath>
#include <optional>

#include "arguments.hpp"
#include "numeric.hpp"

namespace linea {

// x̂ = x / sqrt(Σ x² + 1e-6), in place over n entries.
template <class R>
LINEA_HD void l2_normalize(R* x, index_t n) {
  using std::sqrt;
  R ss = 0;
  for (index_t i = 0; i < n; ++i) ss += x[i] * x[i];
  const R inv = R(1) / sqrt(ss + R(1e-6));
  for (index_t i = 0; i < n; ++i) x[i] *= inv;
}

template <class R>
LINEA_HD R activate_beta(R x, beta_activation act) {
  switch (act) {
    case beta_activation::sigmoid: return sigmoid(x);
    case beta_activation::two_sigmoid: return R(2) * sigmoid(x);
    default: return x;
  }
}

// g = −exp(A_log)·softplus(x + dt_bias), or lower_bound·σ(exp(A_log)·(x + dt_bias)) with a lower bound.
template <class R>
LINEA_HD R activate_gate(R x, R A_log, R dt_bias, bool has_lower_bound, R lower_bound) {
  using std::exp;
  if (has_lower_bound) return lower_bound * sigmoid(exp(A_log) * (x + dt_bias));
  return -exp(A_log) * softplus(x + dt_bias);
}

}  // namespace linea
