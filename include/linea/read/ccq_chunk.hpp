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
// "values = keys" read per chunk: Q Cᵀ (L·K² multiply-adds), the lower triangle of Q Kᵀ and P K (≈ L²·K/2 each)
// and a symmetric rank-L update of C (≈ L·K²/2). The write path (state, WY factors) never sees it.
#pragma once
#include "../backend/cpu/third_party.hpp"  // Eigen
#include <cmath>

#include <type_traits>

#include "../backend/isa.hpp"
#include "../chunk/decay.hpp"
#include "../chunk/matrix.hpp"
#include "../chunk/products.hpp"
#include "../core/arguments.hpp"
#include "ccq_statistics.hpp"

namespace linea::read::inline LINEA_ISA {

template <class Weighting, class R>
class ccq_chunk_reader {
 public:
  static constexpr index_t max_chunk = 128;  // the chunkwise form's largest chunk size

  explicit ccq_chunk_reader(const problem& p)
      : K_(p.K), stats_(p.K), decay_(max_chunk, p.K), c_(max_chunk) {}

  template <class A>
  void begin(const A& a, const problem&, index_t n, index_t hv) {
    stats_.load(a.ccq, n, hv);
  }

  template <class A, class Mat, class Vec>
  const chunk::mat<R>& queries(const A& a, const problem&, index_t bt, index_t t0, index_t L, index_t hv, const Mat& Q,
                               const Mat& Kc, const Vec& default_log_decay) {
    Eigen::Map<chunk::mat<R>> C(stats_.C.data(), K_, K_);
    Eigen::Map<chunk::vec<R>> m(stats_.m.data(), K_);
    const auto Qc = Q.topRows(L);
    const auto Kr = Kc.topRows(L);

    // 1. the statistics' log decays c_r and their in-chunk cumulative sums G_r (chunk/decay.hpp: in double,
    //    only exponents ≤ 0 are formed)
    decay_.reset(L);
    for (index_t r = 0; r < L; ++r) {
      token<R> x;
      x.g = ccq_log_decay<Weighting, R>(a, bt, t0 + r, hv, R(default_log_decay(r)));
      c_(r) = x.g;
      decay_.push(r, x);
    }

    // 2. P = (Q Kᵀ) ⊙ exp(G_r − G_s), causal with the diagonal (the current key is included); lower triangle only
    chunk::decayed_product(Q, Kc, decay_, chunk::diagonal::include, P_, work_);

    // 3. Y = (Q Cᵀ) ⊙ Γ + P K: the carried keys, decayed to each row, plus the chunk's own keys
    //    (Cᵀ: row i of Y is Σ_j C_ij q_j, as in the token-by-token read, even for a non-symmetric C0)
    Y_.noalias() = Qc * C.transpose();
    decay_.times_gamma(Y_);
    chunk::add_lower_product(P_, Kr, Y_, L);

    // 4. prefix sums for m and z, row by row, then q̃_r = q_r − λ_r (Y_r / z_r − μ_r (μ_rᵀ q_r))
    qt_ = Qc;
    for (index_t r = 0; r < L; ++r) {
      const R a_r = Weighting::decays ? std::exp(c_(r)) : R(1);
      m = a_r * m + Kr.row(r).transpose();
      stats_.z = a_r * stats_.z + R(1);
      const R inv_z = inverse_key_weight(stats_.z);  // Σ = 0 where z = 0 (core/numeric.hpp)
      const R mu_q = inv_z * m.dot(Qc.row(r).transpose());
      const R lambda = load_as<R>(a.ccq.lambda(bt, t0 + r, hv));
      qt_.row(r) -= lambda * (inv_z * Y_.row(r) - (inv_z * mu_q) * m.transpose());
    }

    // 5. C ← Γ_L C + (K ⊙ exp(G_L − G))ᵀ K. The chunk's part is symmetric: one rank-L update of its lower
    //    triangle, with both factors scaled by exp((G_L − G_r)/2), mirrored, then added to the decayed C.
    Kd_ = Kr;
    if constexpr (Weighting::decays)
      for (index_t r = 0; r < L; ++r) Kd_.row(r) *= std::exp(R(0.5 * (decay_.G(L - 1) - decay_.G(r))));
    D_.setZero(K_, K_);
    D_.template selfadjointView<Eigen::Lower>().rankUpdate(Kd_.transpose());
    D_.template triangularView<Eigen::StrictlyUpper>() = D_.transpose();
    if constexpr (Weighting::decays) C *= std::exp(R(decay_.G(L - 1)));
    C += D_;

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
  // The statistics decay like a scalar gate (none for the uniform weighting): chunk/decay.hpp's G and products.
  using stats_decay = std::conditional_t<Weighting::decays, decay::scalar, decay::none>;

  index_t K_;
  ccq_statistics<R> stats_;
  chunk::cumulative_decay<stats_decay, R> decay_;
  chunk::product_scratch<R> work_;
  chunk::vec<R> c_;
  chunk::mat<R> P_, Y_, Kd_, D_, qt_;
};

}  // namespace linea::read
