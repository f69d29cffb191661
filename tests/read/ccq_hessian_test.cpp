// The claim behind CCQ, checked numerically in float64: Σ_t is the Hessian at q = 0 of the softmax
// log-partition over the keys written so far,
//     A_t(q) = log Σ_{j≤t} exp(k_jᵀ q + log w_tj),     w_tj = Π_{j<i≤t} a_i   (uniform: w = 1),
// so a central finite-difference Hessian of A_t must equal the Σ_t built from the final statistics C, m, z
// that the float64 reference returns (docs/math/ccq.md §1–2).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "read/ccq_inputs.hpp"
#include "support/compare.hpp"
#include "support/inputs.hpp"
#include "support/tolerance.hpp"

using namespace linea;
using namespace linea::testing;

namespace {

// A(q) = log Σ_j exp(k_jᵀ q + bias_j), computed stably.
double log_partition(const std::vector<std::vector<double>>& keys, const std::vector<double>& bias,
                     const std::vector<double>& q) {
  std::vector<double> e(keys.size());
  double top = -INFINITY;
  for (std::size_t j = 0; j < keys.size(); ++j) {
    e[j] = bias[j];
    for (std::size_t i = 0; i < q.size(); ++i) e[j] += keys[j][i] * q[i];
    top = std::max(top, e[j]);
  }
  double s = 0;
  for (double x : e) s += std::exp(x - top);
  return top + std::log(s);
}

// Central differences at q = 0, H_ab ≈ [A(h(e_a+e_b)) − A(h(e_a−e_b)) − A(h(e_b−e_a)) + A(−h(e_a+e_b))] / 4h²,
// with one Richardson step (h and 2h) to cancel the O(h²) term.
std::vector<double> hessian_at_zero(const std::vector<std::vector<double>>& keys, const std::vector<double>& bias,
                                    index_t K) {
  auto fd = [&](double h) {
    std::vector<double> H(static_cast<std::size_t>(K * K));
    std::vector<double> q(static_cast<std::size_t>(K));
    auto A = [&](index_t a, double sa, index_t b, double sb) {
      std::fill(q.begin(), q.end(), 0.0);
      q[a] += sa * h, q[b] += sb * h;
      return log_partition(keys, bias, q);
    };
    for (index_t a = 0; a < K; ++a)
      for (index_t b = 0; b < K; ++b)
        H[a * K + b] = (A(a, 1, b, 1) - A(a, 1, b, -1) - A(a, -1, b, 1) + A(a, -1, b, -1)) / (4 * h * h);
    return H;
  };
  const double h = 1e-3;
  const auto H1 = fd(h), H2 = fd(2 * h);
  std::vector<double> H(H1.size());
  for (std::size_t i = 0; i < H.size(); ++i) H[i] = (4 * H1[i] - H2[i]) / 3;
  return H;
}

// The first t tokens of a [B, T, ...] view.
template <class V>
V prefix(V v, index_t t) {
  v.ext[1] = t;
  return v;
}

template <class Rule, class Weighting>
void hessian_equals_sigma() {
  const index_t K = 6, T = 24;
  auto c = random_case<Rule, double>::make({.B = 1, .T = T, .H = 1, .HV = 1, .K = K, .V = 3});
  auto s = ccq_tensors<double>::make(c.shape, c.N, {});
  for (index_t t : {1, 2, 7, 24}) {
    CAPTURE(t);
    // Σ_t from the reference's final statistics on the first t tokens.
    auto a = c.args();
    a.q = prefix(a.q, t), a.k = prefix(a.k, t), a.v = prefix(a.v, t), a.o = prefix(a.o, t);
    a.residual = prefix(a.residual, t);
    if (!a.g.empty()) a.g = prefix(a.g, t);
    s.attach(a);
    a.ccq.lambda = prefix(a.ccq.lambda, t), a.ccq.q_tilde = prefix(a.ccq.q_tilde, t);
    reference::recurrent<Rule, read::ccq<Weighting>>(a);
    std::vector<double> sigma(static_cast<std::size_t>(K * K));
    const double z = s.z(0, 0);
    for (index_t i = 0; i < K; ++i)
      for (index_t j = 0; j < K; ++j) sigma[i * K + j] = s.C(0, 0, i, j) / z - (s.m(0, 0, i) / z) * (s.m(0, 0, j) / z);

    // The log-partition over the same keys, each biased by its log weight log w_tj = Σ_{j<i≤t} c_i.
    std::vector<std::vector<double>> keys;
    std::vector<double> bias(static_cast<std::size_t>(t), 0.0);
    for (index_t j = 0; j < t; ++j) {
      keys.emplace_back(&c.k(0, j, 0, 0), &c.k(0, j, 0, 0) + K);
      if constexpr (Weighting::decays)
        for (index_t i = j + 1; i < t; ++i) bias[j] += c.g(0, i, 0);
    }
    const std::vector<double> H = hessian_at_zero(keys, bias, K);

    // Finite differences are not exact: with h = 1e-3 and one Richardson step the truncation error is O(h⁴)
    // and the rounding error ~1e-16/h² ≈ 1e-10, so the check uses SPEC §5's float32 bound as a loose ceiling.
    if (t == 1) {  // Σ_1 = 0 (zero up to one rounding when the compiler fuses C/z − μμᵀ into an FMA)
      auto max_abs = [](const std::vector<double>& x) {
        double m = 0;
        for (double e : x) m = std::max(m, std::abs(e));
        return m;
      };
      CHECK(max_abs(sigma) <= tolerance_for<double>());
      CHECK(max_abs(H) <= tolerance_for<float>());
      continue;
    }
    const double err = relative_error(H.data(), sigma.data(), H.size());
    INFO("finite-difference Hessian vs Σ_t, relative error ", err);
    CHECK(err <= tolerance_for<float>());
  }
}

}  // namespace

TEST_CASE("ccq: the Hessian of log sum exp(k_j^T q) at q = 0 is the uniform Sigma_t") {
  hessian_equals_sigma<additive, read::uniform>();
}

TEST_CASE("ccq: with log-decay biases the Hessian is the decayed Sigma_t") {
  hessian_equals_sigma<simple_gla, read::decayed>();
}
