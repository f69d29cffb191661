// linea/reference/input_adjoints.hpp — the adjoints of core/gates.hpp: from the gradient of a value the rules
// use (x̂, β, g) to the gradient of the raw stored input (docs/math/backward.md §3).
//
//   L2 norm   x̂ = x / n, n = sqrt(Σx² + 1e-6):           dx = (dx̂ − x̂ (x̂·dx̂)) / n
//   beta      β = σ(x) or 2σ(x):                          dx = dβ · β (1 − σ(x))
//   gate      g = −e^A softplus(x + b):                   ∂g/∂x = ∂g/∂b = −e^A σ(x + b) (−e^A above 20), ∂g/∂A = g
//             g = lb σ(e^A (x + b)):                      ∂g/∂x = ∂g/∂b = lb σ'(y) e^A,  ∂g/∂A = lb σ'(y) y
#pragma once
#include <cmath>

#include "../backend/isa.hpp"
#include "../core/gates.hpp"

namespace linea::reference::inline LINEA_ISA {

// dx += adjoint of the in-kernel L2 norm at raw x, for the gradient dx̂ of the normalised vector (n entries).
template <class R>
void l2_normalize_adjoint(const R* x, const R* dx_hat, index_t n, R* dx) {
  R ss = 0;
  for (index_t i = 0; i < n; ++i) ss += x[i] * x[i];
  const R norm = std::sqrt(ss + R(1e-6));
  R dot = 0;  // x̂ · dx̂
  for (index_t i = 0; i < n; ++i) dot += (x[i] / norm) * dx_hat[i];
  for (index_t i = 0; i < n; ++i) dx[i] += (dx_hat[i] - (x[i] / norm) * dot) / norm;
}

// (LINEA_HD: the CUDA backward calls these two on the device.)
// dβ/dx of beta's activation at the raw value x.
template <class R>
LINEA_HD R beta_activation_derivative(R x, beta_activation act) {
  const R s = sigmoid(x);
  switch (act) {
    case beta_activation::sigmoid: return s * (R(1) - s);
    case beta_activation::two_sigmoid: return R(2) * s * (R(1) - s);
    default: return R(1);
  }
}

// The partial derivatives of an in-kernel gate g(x; A_log, dt_bias) (core/gates.hpp's activate_gate).
template <class R>
struct gate_partials {
  R dx, dA_log, ddt_bias;
};

template <class R>
LINEA_HD gate_partials<R> activate_gate_partials(R x, R A_log, R dt_bias, bool has_lower_bound, R lower_bound) {
  using std::exp;
  const R e = exp(A_log);
  if (has_lower_bound) {
    const R y = e * (x + dt_bias);
    const R s = sigmoid(y);
    const R ds = lower_bound * s * (R(1) - s);  // d g / d y
    return {ds * e, ds * y, ds * e};
  }
  const R z = x + dt_bias;
  const R dsoftplus = z > R(20) ? R(1) : sigmoid(z);  // the forward's softplus is z itself above 20
  const R g = -e * softplus(z);
  return {-e * dsoftplus, g, -e * dsoftplus};
}

}  // namespace linea::reference
