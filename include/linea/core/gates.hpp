// linea/core/gates.hpp — turning stored inputs into the values the rules use (SPEC §1):
// in-kernel L2 norm of q and k, beta's activation, in-kernel gates from logits.
#pragma once
#include <cmath>
#include <limits>
#include <optional>

#include "../backend/isa.hpp"
#include "arguments.hpp"
#include "numeric.hpp"

namespace linea::inline LINEA_ISA {

// x̂ = x / sqrt(Σ x² + 1e-6), in place over n entries. Where Σ x² overflows (a finite row with an entry past
// ~1.8e19 in float32) the row is first divided by its largest magnitude m — the same x̂, as
// x / sqrt(Σx² + ε) = (x/m) / sqrt(Σ(x/m)² + ε/m²) — instead of x / inf = 0.
template <class R>
LINEA_HD void l2_normalize(R* x, index_t n) {
  using std::fabs, std::fmax, std::sqrt;
  R ss = 0, m = 1;  // m: the row's scale, 1 unless Σ x² overflows
  for (index_t i = 0; i < n; ++i) ss += x[i] * x[i];
  if (!(ss <= std::numeric_limits<R>::max())) {  // inf, or NaN from a non-finite entry (which stays NaN below)
    R largest = 0;
    for (index_t i = 0; i < n; ++i) largest = fmax(largest, fabs(x[i]));
    if (largest > R(0) && largest <= std::numeric_limits<R>::max()) {
      m = largest, ss = 0;
      for (index_t i = 0; i < n; ++i) x[i] /= m, ss += x[i] * x[i];
    }
  }
  const R inv = R(1) / sqrt(ss + R(1e-6) / m / m);
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

// The in-kernel gate of one entry: value head hv, and `bias_index` into dt_bias (hv for a scalar gate,
// hv·K + i for key channel i of a per-key gate). `Views` are the caller's A_log / dt_bias views (host or device).
template <class R, class View>
LINEA_HD R gate_from_logit(R x, const View& A_log, const View& dt_bias, bool has_lower_bound, R lower_bound,
                           index_t hv, index_t bias_index) {
  const R bias = dt_bias.empty() ? R(0) : R(dt_bias(bias_index));
  return activate_gate(x, R(A_log(hv)), bias, has_lower_bound, lower_bound);
}

}  // namespace linea
