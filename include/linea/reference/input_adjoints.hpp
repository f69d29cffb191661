// linea/reference/input_adjoints.hpp — the adjoints of core/gates.hpp: from the gradient of a value the rules
// use (x̂, β, g) to the gradient of the raw stored input (docs/math/backward.md §3).
//
//   L2 norm   x̂ = x / n, n = sqrt(Σx² + 1e-6):           dx = (dx̂ − x̂ (x̂·dx̂)) / n  (in a form that does not cancel: below)
//   beta      β = σ(x) or 2σ(x):                          dx = dβ · β (1 − σ(x))
//   gate      g = −e^A softplus(x + b):                   ∂g/∂x = ∂g/∂b = −e^A σ(x + b) (−e^A above 20), ∂g/∂A = g
//             g = lb σ(e^A (x + b)):                      ∂g/∂x = ∂g/∂b = lb σ'(y) e^A,  ∂g/∂A = lb σ'(y) y
#pragma once
#include <cmath>
#include <type_traits>

#include "../backend/isa.hpp"
#include "../core/gates.hpp"

namespace linea::reference::inline LINEA_ISA {

// dx += adjoint of the in-kernel L2 norm at raw x, for the gradient dx̂ of the normalised vector (n entries).
//
// dx = (dx̂ − x̂ (x̂·dx̂)) / ν, ν = sqrt(P + ε), P = Σ x², D = Σ x dx̂, is computed as
//   dx_i = (ε dx̂_i + (P − x_i²) dx̂_i − x_i (D − x_i dx̂_i)) / ν³
// (the same value: ν² dx̂_i − x_i D, with x_i's own terms taken out of P and D). In the first form dx̂ − x̂ (x̂·dx̂)
// cancels to a relative ε / ν² where x is one channel or nearly (K = 1: the exact dx is 1e-6 · dx̂ / ν), and every
// rounding of dx̂, x̂ or the dot product is magnified by ν² / ε: float32 lost 5–6 % there (fuzz, backward category);
// in the second P − x_i² and D − x_i dx̂_i are the other channels' sums, exactly 0 at K = 1. P and D are summed in
// double for float inputs, where x_i² and x_i dx̂_i are exact.
template <class R>
void l2_normalize_adjoint(const R* x, const R* dx_hat, index_t n, R* dx) {
  using W = std::conditional_t<(sizeof(R) < sizeof(double)), double, R>;
  W P = 0, D = 0;
  for (index_t i = 0; i < n; ++i) P += W(x[i]) * W(x[i]), D += W(x[i]) * W(dx_hat[i]);
  const W eps = W(1e-6), nu2 = P + eps, nu3 = nu2 * std::sqrt(nu2);
  for (index_t i = 0; i < n; ++i) {
    const W xi = x[i], di = dx_hat[i];
    dx[i] += R((eps * di + (P - xi * xi) * di - xi * (D - xi * di)) / nu3);
  }
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
