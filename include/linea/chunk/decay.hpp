// linea/chunk/decay.hpp — in-chunk cumulative log decays G_r = Σ_{i≤r} log α_i (SPEC §4), one class per decay kind.
//
// Only exponents ≤ 0 are ever formed (log decays are ≤ 0, so G decreases along the chunk):
//   exp(G_r)          Γ_r, the decay from the chunk start to token r          times_gamma
//   exp(G_L − G_r)    the decay from token r to the chunk end                   times_to_end
//   exp(G_r − G_s)    s ≤ r, the decay between two tokens (chunk/products.hpp)
// never exp(−G) alone, which overflows once a chunk has decayed by more than ~88 (float32).
// G is summed in double (chunk::log_real): see chunk/matrix.hpp; each exponent is formed as a difference in
// double and only then rounded to R, so exp sees an exponent as accurate as the gate itself.
#pragma once
#include <cmath>

#include "../config.hpp"
#include "../rules/decay.hpp"
#include "../rules/token.hpp"
#include "matrix.hpp"

namespace linea::chunk {

template <class Decay, class R>
class cumulative_decay;

// No decay: G = 0, every factor is 1.
template <class R>
class cumulative_decay<decay::none, R> {
 public:
  explicit cumulative_decay(index_t /*C*/, index_t /*K*/) {}
  void reset(index_t L) { L_ = L; }
  void push(index_t, const token<R>&) {}
  index_t length() const { return L_; }
  template <class M>
  void times_gamma(M&) const {}
  template <class M>
  void times_to_end(M&) const {}
  template <class M>
  void decay_state(M&) const {}

 private:
  index_t L_ = 0;
};

// Scalar decay (one gate per token): G is a vector of length L.
template <class R>
class cumulative_decay<decay::scalar, R> {
 public:
  explicit cumulative_decay(index_t C, index_t /*K*/) : G_(C) {}
  void reset(index_t L) { L_ = L; }
  void push(index_t r, const token<R>& x) { G_(r) = (r ? G_(r - 1) : log_real(0)) + log_real(x.g); }
  index_t length() const { return L_; }
  log_real G(index_t r) const { return G_(r); }
  // exp(G_r − G_s), s ≤ r
  R between(index_t r, index_t s) const { return std::exp(R(G_(r) - G_(s))); }

  // X ← X ⊙ Γ: row r times exp(G_r).
  template <class M>
  void times_gamma(M& X) const {
    for (index_t r = 0; r < L_; ++r) X.row(r) *= std::exp(R(G_(r)));
  }
  // X ← X ⊙ exp(G_L − G): row r times exp(G_L − G_r).
  template <class M>
  void times_to_end(M& X) const {
    for (index_t r = 0; r < L_; ++r) X.row(r) *= std::exp(R(G_(L_ - 1) - G_(r)));
  }
  // S ← Diag(Γ_L) S.
  template <class M>
  void decay_state(M& S) const {
    if (L_) S *= std::exp(R(G_(L_ - 1)));
  }

 private:
  vec<log_real> G_;
  index_t L_ = 0;
};

// Per-key decay (one gate per key channel): G is L×K.
template <class R>
class cumulative_decay<decay::per_key, R> {
 public:
  explicit cumulative_decay(index_t C, index_t K) : G_(C, K), K_(K) {}
  void reset(index_t L) { L_ = L; }
  void push(index_t r, const token<R>& x) {
    for (index_t i = 0; i < K_; ++i)
      G_(r, i) = (r ? G_(r - 1, i) : log_real(0)) + log_real(decay::per_key::log_alpha(x, i));
  }
  index_t length() const { return L_; }
  const mat<log_real>& G() const { return G_; }

  // X ← X ⊙ Γ: element (r, d) times exp(G_rd).
  template <class M>
  void times_gamma(M& X) const {
    X.topRows(L_).array() *= G_.topRows(L_).template cast<R>().array().exp();
  }
  // X ← X ⊙ exp(G_L − G): element (r, d) times exp(G_Ld − G_rd).
  template <class M>
  void times_to_end(M& X) const {
    for (index_t r = 0; r < L_; ++r)
      X.row(r).array() *= (G_.row(L_ - 1) - G_.row(r)).template cast<R>().array().exp();
  }
  // S ← Diag(Γ_L) S: key row d times exp(G_Ld).
  template <class M>
  void decay_state(M& S) const {
    if (!L_) return;
    for (index_t d = 0; d < K_; ++d) S.row(d) *= std::exp(R(G_(L_ - 1, d)));
  }

 private:
  mat<log_real> G_;
  index_t K_;
  index_t L_ = 0;
};

}  // namespace linea::chunk
