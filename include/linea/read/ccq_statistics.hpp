// linea/read/ccq_statistics.hpp — the CCQ statistics of one (sequence, value head): C [K×K], m [K], z, and Σ.
//
//   C ← a C + k kᵀ,   m ← a m + k,   z ← a z + 1,     Σ = C / z − μ μᵀ  with  μ = m / z.
//
// Kept in the compute type R (float64 in the reference, the state type in the fast forms). C is stored full
// (row-major), because the carried C is also what the chunkwise form multiplies the chunk's queries with.
#pragma once
#include <algorithm>
#include <cmath>
#include <type_traits>
#include <vector>

#include "../core/numeric.hpp"
#include "../core/view.hpp"

namespace linea::read {

// Weightings of the statistics: how fast old keys leave the covariance.
struct uniform {  // a_t = 1: z_t = t, Σ_t = Cov_{j≤t}[k_j] (the default)
  static constexpr bool decays = false;
  static constexpr const char* name = "uniform";
};
struct decayed {  // a_t = exp(c_t): the covariance forgets at the backbone's pace (or at the caller's c_t)
  static constexpr bool decays = true;
  static constexpr const char* name = "decayed";
};

// c_t, the log decay of the statistics at token t: 0 for the uniform weighting; for the decayed one the caller's
// ccq.log_decay when given, else the rule's own (g, the mean of gk over K, or 0).
template <class Weighting, class R, class A>
R ccq_log_decay(const A& a, index_t bt, index_t t, index_t hv, R rule_log_decay) {
  if constexpr (!Weighting::decays) return R(0);
  else return a.ccq.log_decay.empty() ? rule_log_decay : load_as<R>(a.ccq.log_decay(bt, t, hv));
}

template <class R>
struct ccq_statistics {
  index_t K;
  std::vector<R> C, m;
  R z = 0;

  explicit ccq_statistics(index_t K_) : K(K_), C(static_cast<std::size_t>(K_ * K_)), m(static_cast<std::size_t>(K_)) {}

  R& c(index_t i, index_t j) { return C[static_cast<std::size_t>(i * K + j)]; }
  R c(index_t i, index_t j) const { return C[static_cast<std::size_t>(i * K + j)]; }

  // The initial statistics of row n (sequence, or state-pool row) at value head hv, or zero.
  template <class CcqArgs>
  void load(const CcqArgs& a, index_t n, index_t hv) {
    if (a.C0.empty()) {
      std::fill(C.begin(), C.end(), R(0));
      std::fill(m.begin(), m.end(), R(0));
      z = 0;
      return;
    }
    for (index_t i = 0; i < K; ++i) {
      m[i] = R(a.m0(n, hv, i));
      for (index_t j = 0; j < K; ++j) c(i, j) = R(a.C0(n, hv, i, j));
    }
    z = R(a.z0(n, hv));
  }

  // The final statistics into whichever of C, m, z the caller asked for.
  template <class CcqArgs>
  void store(const CcqArgs& a, index_t n, index_t hv) const {
    using S = typename std::remove_cv_t<typename decltype(a.C)::element_type>;
    if (!a.C.empty())
      for (index_t i = 0; i < K; ++i)
        for (index_t j = 0; j < K; ++j) a.C(n, hv, i, j) = static_cast<S>(c(i, j));
    if (!a.m.empty())
      for (index_t i = 0; i < K; ++i) a.m(n, hv, i) = static_cast<S>(m[i]);
    if (!a.z.empty()) a.z(n, hv) = static_cast<S>(z);
  }

  // One token: C ← a C + k kᵀ, m ← a m + k, z ← a z + 1.
  void accumulate(const R* k, R a) {
    z = a * z + R(1);
    for (index_t i = 0; i < K; ++i) {
      m[i] = a * m[i] + k[i];
      R* row = C.data() + i * K;
      for (index_t j = 0; j < K; ++j) row[j] = a * row[j] + k[i] * k[j];
    }
  }

  // Σ_ij = C_ij / z − μ_i μ_j: the key covariance (z > 0 once a key has been seen).
  R sigma(index_t i, index_t j) const {
    const R inv_z = R(1) / z;
    return c(i, j) * inv_z - (m[i] * inv_z) * (m[j] * inv_z);
  }

  // y = Σ q, forming every entry Σ_ij explicitly (readable; the chunkwise form uses the factored
  // Y / z − μ (μᵀ q) instead, docs/math/ccq.md).
  // z = 0 reads Σ = 0 (q̃ = q), in every form and in the backward (which treats that Σ as a constant): the count of
  // no key. After a token z = a z_prev + 1 ≥ 1 for any z0 ≥ 0, so only a caller's negative z0 (−1/a_1: z_1 = 0)
  // makes it vanish inside a sequence; C / 0 would turn q̃ and everything after it into NaN.
  void covariance_times(const R* q, R* y) const {
    if (z == R(0)) {  // Σ = 0: see above
      std::fill(y, y + K, R(0));
      return;
    }
    const R inv_z = R(1) / z;
    for (index_t i = 0; i < K; ++i) {
      const R* row = C.data() + i * K;
      const R mu_i = m[i] * inv_z;
      R acc = 0;
      for (index_t j = 0; j < K; ++j) {
        const R sigma_ij = row[j] * inv_z - mu_i * (m[j] * inv_z);
        acc += sigma_ij * q[j];
      }
      y[i] = acc;
    }
  }
};

}  // namespace linea::read
