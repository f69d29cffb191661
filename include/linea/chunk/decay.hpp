// linea/chunk/decay.hpp — in-chunk cumulative log decays G_r = Σ_{i≤r} log α_i (SPEC §4), one class per decay kind
// (decay_kind, rules/policy.hpp), fed by the decay policy's log_alpha hook,
// and the decay factors the chunk needs, computed once per chunk after the last push: by finish(), or on first use.
//
// Only exponents ≤ 0 are ever formed (log decays are ≤ 0, so G decreases along the chunk):
//   exp(G_r)          Γ_r, the decay from the chunk start to token r          times_gamma
//   exp(G_L − G_r)    the decay from token r to the chunk end                   times_to_end
//   exp(G_r − G_s)    s ≤ r, the decay between two tokens (chunk/products.hpp)
// never exp(−G) alone, which overflows once a chunk has decayed by more than ~88 (float32).
// G is summed in double (chunk::log_real, see chunk/matrix.hpp); every exponent is formed as a difference in double
// and only then rounded to R, so exp sees an exponent as accurate as the gate itself. The exponents are written to
// a buffer of R first and exponentiated in place, so that exp runs vectorised over R.
//
// A gate of exactly 0 (log decay −inf, which models produce) would make every difference after it −inf − (−inf) =
// NaN. Each log decay is therefore clamped to log_zero before it is summed: an exponent that crosses a clamped
// gate is ≤ −1000, whose exp is exactly 0 in float64 and float32 (the decay across a zero gate is 0, as in the
// recurrence), and differences that do not cross one lose at most an ulp of |G| (~1e-13 per clamped gate).
// NaN passes through unchanged, so a NaN gate still poisons what the recurrence says it poisons.
#pragma once
#include <algorithm>
#include <cmath>

#include "../backend/isa.hpp"
#include "../config.hpp"
#include "../rules/policy.hpp"
#include "../rules/token.hpp"
#include "matrix.hpp"

LINEA_SIMD_WARNINGS_BEGIN
namespace linea::chunk::inline LINEA_ISA {

inline constexpr index_t sub_block = 16;  // secondary chunk length (per-key decays); every chunk size is a multiple

// dst ← exp(dst) elementwise (vectorised by Eigen for float and double).
template <class M>
void exp_in_place(M&& dst) {
  dst = dst.array().exp().matrix();
}

inline constexpr log_real log_zero = -1000;  // exp(−1000) = 0 in float64 and float32 (below both denormal ranges)

// max(log α, log_zero), keeping NaN (a comparison with NaN is false).
inline log_real clamped_log_decay(log_real x) { return x < log_zero ? log_zero : x; }

template <class Decay, class R, decay_kind Kind = Decay::kind>
class cumulative_decay {
  static_assert(Kind != Kind, "linea: the chunkwise form has no cumulative decay for this decay kind");
};

// No decay: G = 0, every factor is 1.
template <class Decay, class R>
class cumulative_decay<Decay, R, decay_kind::none> {
 public:
  cumulative_decay(index_t /*C*/, index_t /*K*/) {}
  void reset(index_t L) { L_ = L; }
  void push(index_t, const token<R>&) {}
  void finish() const {}
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
template <class Decay, class R>
class cumulative_decay<Decay, R, decay_kind::scalar> {
 public:
  cumulative_decay(index_t C, index_t /*K*/) : G_(C) {}
  void reset(index_t L) { L_ = L, ready_ = false; }
  void push(index_t r, const token<R>& x) {
    G_(r) = (r ? G_(r - 1) : log_real(0)) + clamped_log_decay(log_real(Decay::log_alpha(x, 0)));
    ready_ = false;
  }

  // Γ, exp(G_L − G) and the L×L lower triangle D_rs = exp(G_r − G_s) (s ≤ r; zero above).
  void finish() const {
    if (ready_) return;
    ready_ = true;
    const index_t L = L_;
    gamma_.resize(L), to_end_.resize(L), D_.setZero(L, L);
    for (index_t r = 0; r < L; ++r) {
      gamma_(r) = R(G_(r));
      to_end_(r) = R(G_(L - 1) - G_(r));
      for (index_t s = 0; s <= r; ++s) D_(r, s) = R(G_(r) - G_(s));
    }
    exp_in_place(gamma_), exp_in_place(to_end_);
    for (index_t r = 0; r < L; ++r) exp_in_place(D_.row(r).head(r + 1));
  }
  index_t length() const { return L_; }
  log_real G(index_t r) const { return G_(r); }
  // D_rs = exp(G_r − G_s), s ≤ r
  const mat<R>& between() const {
    finish();
    return D_;
  }

  // X ← X ⊙ Γ: row r times exp(G_r).
  template <class M>
  void times_gamma(M& X) const {
    finish();
    X.topRows(L_).array().colwise() *= gamma_.array();
  }
  // X ← X ⊙ exp(G_L − G): row r times exp(G_L − G_r).
  template <class M>
  void times_to_end(M& X) const {
    finish();
    X.topRows(L_).array().colwise() *= to_end_.array();
  }
  // S ← Diag(Γ_L) S.
  template <class M>
  void decay_state(M& S) const {
    finish();
    if (L_) S *= gamma_(L_ - 1);
  }

 private:
  vec<log_real> G_;
  mutable vec<R> gamma_, to_end_;  // the factors, computed once per chunk by finish()
  mutable mat<R> D_;
  mutable bool ready_ = false;
  index_t L_ = 0;
};

// Per-key decay (one gate per key channel): G is L×K. Besides Γ and exp(G_L − G), finish() prepares the factors of
// secondary chunking (chunk/products.hpp), for sub-blocks of 16 rows starting at i0 and ending at i_end:
//   from_start(r) = exp(G_r − G_{i0})      r in the sub-block          (≤ 1)
//   to_block_end(s) = exp(G_{i_end} − G_s) s in the sub-block          (≤ 1)
//   across(I, J) = exp(G_{i0(I)} − G_{i_end(J)})  for sub-blocks J < I  (≤ 1)
// so that exp(G_r − G_s) = from_start(r) · across(I, J) · to_block_end(s) for r in I, s in J, J < I.
template <class Decay, class R>
class cumulative_decay<Decay, R, decay_kind::per_key> {
 public:
  cumulative_decay(index_t C, index_t K) : G_(C, K), K_(K) {}
  void reset(index_t L) { L_ = L, ready_ = false; }
  void push(index_t r, const token<R>& x) {
    for (index_t i = 0; i < K_; ++i)
      G_(r, i) = (r ? G_(r - 1, i) : log_real(0)) + clamped_log_decay(log_real(Decay::log_alpha(x, i)));
    ready_ = false;
  }

  void finish() const {
    if (ready_) return;
    ready_ = true;
    const index_t L = L_, blocks = (L + sub_block - 1) / sub_block;
    gamma_.resize(L, K_), to_end_.resize(L, K_), from_start_.resize(L, K_), to_block_end_.resize(L, K_);
    for (index_t r = 0; r < L; ++r) {
      const index_t i0 = r / sub_block * sub_block, i_end = std::min(i0 + sub_block, L) - 1;
      gamma_.row(r) = G_.row(r).template cast<R>();
      to_end_.row(r) = (G_.row(L - 1) - G_.row(r)).template cast<R>();
      from_start_.row(r) = (G_.row(r) - G_.row(i0)).template cast<R>();
      to_block_end_.row(r) = (G_.row(i_end) - G_.row(r)).template cast<R>();
    }
    across_.resize(blocks * blocks, K_);
    for (index_t I = 1; I < blocks; ++I)
      for (index_t J = 0; J < I; ++J)
        across_.row(I * blocks + J) = (G_.row(I * sub_block) - G_.row((J + 1) * sub_block - 1)).template cast<R>();
    exp_in_place(gamma_), exp_in_place(to_end_), exp_in_place(from_start_), exp_in_place(to_block_end_);
    exp_in_place(across_);
    blocks_ = blocks;
  }

  index_t length() const { return L_; }
  const mat<log_real>& G() const { return G_; }
  const mat<R>& from_start() const {
    finish();
    return from_start_;
  }
  const mat<R>& to_block_end() const {
    finish();
    return to_block_end_;
  }
  auto across(index_t I, index_t J) const {
    finish();
    return across_.row(I * blocks_ + J);
  }

  // X ← X ⊙ Γ: element (r, d) times exp(G_rd).
  template <class M>
  void times_gamma(M& X) const {
    finish();
    X.topRows(L_).array() *= gamma_.array();
  }
  // X ← X ⊙ exp(G_L − G): element (r, d) times exp(G_Ld − G_rd).
  template <class M>
  void times_to_end(M& X) const {
    finish();
    X.topRows(L_).array() *= to_end_.array();
  }
  // S ← Diag(Γ_L) S: key row d times exp(G_Ld).
  template <class M>
  void decay_state(M& S) const {
    finish();
    if (L_) S.array().colwise() *= gamma_.row(L_ - 1).transpose().array();
  }

 private:
  mat<log_real> G_;
  mutable mat<R> gamma_, to_end_, from_start_, to_block_end_, across_;  // computed once per chunk by finish()
  mutable index_t blocks_ = 0;
  mutable bool ready_ = false;
  index_t K_;
  index_t L_ = 0;
};

}  // namespace linea::chunk
LINEA_SIMD_WARNINGS_END
