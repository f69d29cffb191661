// linea/read/ccq_chunk.hpp — the CCQ read of one chunk (chunkwise form; SPEC §3, docs/math/ccq.md §4).
//
// For chunk rows r = 1..L with carried statistics C, m, z at the chunk start and cumulative log decays
// G_r = Σ_{i≤r} c_i of the statistics (0 for the uniform weighting):
//
//   Y_r   = Γ_r C q_r + Σ_{s≤r} exp(G_r − G_s) k_s (k_sᵀ q_r)    = [(Q C) ⊙ Γ + P K]_r,  P = (Q Kᵀ) ⊙ D ⊙ M
//   m_r   = a_r m_{r−1} + k_r,   z_r = a_r z_{r−1} + 1             (prefix sums along the chunk)
//   Σ_r q_r = Y_r / z_r − (m_r / z_r)(m_rᵀ q_r / z_r)
//   q̃_r  = q_r − λ_r Σ_r q_r
//   C ← Γ_L C + (K ⊙ exp(G_L − G))ᵀ K                              (the statistics after the chunk)
//
// Y is the chunkwise linear-attention read of a state C with values := keys, so CCQ costs one extra
// "values = keys" read per chunk; the write path (state, WY factors) never sees it.
#pragma once
#include <Eigen/Core>
#include <cmath>

#include "../chunk/matrix.hpp"
#include "../core/arguments.hpp"
#include "ccq_statistics.hpp"

namespace linea::read {

template <class Weighting, class R>
class ccq_chunk_reader {
 public:
  explicit ccq_chunk_reader(const problem& p) : K_(p.K), stats_(p.K) {}

  template <class A>
  void begin(const A& a, const problem&, index_t n, index_t hv) {
    stats_.load(a.ccq, n, hv);
  }

  template <class A, class Mat, class Vec>
  const chunk::mat<R>& queries(const A& a, const problem& p, index_t bt, index_t t0, index_t L, index_t hv, const Mat& Q,
                     const Mat& Kc, const Vec& default_log_decay) {
    using log_real = chunk::log_real;
    Eigen::Map<chunk::mat<R>> C(stats_.C.data(), K_, K_);
    Eigen::Map<chunk::vec<R>> m(stats_.m.data(), K_);
    const auto Qc = Q.topRows(L);
    const auto Kr = Kc.topRows(L);

    // 1. the statistics' log decays c_r and their in-chunk cumulative sums G_r (in double, like the backbone's)
    c_.resize(L), G_.resize(L);
    for (index_t r = 0; r < L; ++r) {
      c_(r) = ccq_log_decay<Weighting, R>(a, bt, t0 + r, hv, R(default_log_decay(r)));
      G_(r) = (r ? G_(r - 1) : log_real(0)) + log_real(c_(r));
    }

    // 2. P = (Q Kᵀ) ⊙ exp(G_r − G_s), causal with the diagonal (the current key is included)
    P_.noalias() = Qc * Kr.transpose();
    for (index_t r = 0; r < L; ++r) {
      for (index_t s = r + 1; s < L; ++s) P_(r, s) = R(0);
      if constexpr (Weighting::decays)
        for (index_t s = 0; s < r; ++s) P_(r, s) *= std::exp(R(G_(r) - G_(s)));
    }

    // 3. Y = (Q C) ⊙ Γ + P K: the carried keys, decayed to each row, plus the chunk's own keys
    Y_.noalias() = Qc * C;  // C is symmetric
    if constexpr (Weighting::decays)
      for (index_t r = 0; r < L; ++r) Y_.row(r) *= std::exp(R(G_(r)));
    Y_.noalias() += P_ * Kr;

    // 4. prefix sums for m and z, row by row, then q̃_r = q_r − λ_r (Y_r / z_r − μ_r (μ_rᵀ q_r))
    qt_ = Q;  // rows past L (if the caller's matrices are taller) stay the plain queries
    for (index_t r = 0; r < L; ++r) {
      const R a_r = Weighting::decays ? std::exp(c_(r)) : R(1);
      m = a_r * m + Kr.row(r).transpose();
      stats_.z = a_r * stats_.z + R(1);
      const R inv_z = R(1) / stats_.z;
      const R mu_q = inv_z * m.dot(Qc.row(r).transpose());
      const R lambda = load_as<R>(a.ccq.lambda(bt, t0 + r, hv));
      qt_.row(r) -= lambda * (inv_z * Y_.row(r) - (inv_z * mu_q) * m.transpose());
    }

    // 5. C ← Γ_L C + (K ⊙ exp(G_L − G))ᵀ K
    if constexpr (Weighting::decays) {
      Kd_ = Kr;
      for (index_t r = 0; r < L; ++r) Kd_.row(r) *= std::exp(R(G_(L - 1) - G_(r)));
      C *= std::exp(R(G_(L - 1)));
      C.noalias() += Kd_.transpose() * Kr;
    } else {
      C.noalias() += Kr.transpose() * Kr;
    }

    if (!a.ccq.q_tilde.empty())
      for (index_t r = 0; r < L; ++r)
        for (index_t i = 0; i < K_; ++i)
          a.ccq.q_tilde(bt, t0 + r, hv, i) = store_as<typename A::input_type>(qt_(r, i));
    return qt_;
  }

  template <class A>
  void end(const A& a, const problem&, index_t n, index_t hv) {
    stats_.store(a.ccq, n, hv);
  }

 private:
  index_t K_;
  ccq_statistics<R> stats_;
  chunk::vec<R> c_;
  chunk::vec<chunk::log_real> G_;
  chunk::mat<R> P_, Y_, Kd_, qt_;
};

}  // namespace linea::read
