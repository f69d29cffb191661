// linea/core/epilogue.hpp — the one output epilogue: what every form does to o_t after the read, and to the rows
// a decode step skips.
//
//   normalize (fla's linear_attn):   o_t ← o_t / (s q_t · z_t + ε),  z_t = Σ_{j≤t} k_j,  ε = 1e-10
//   skipped decode row (index −1):   o and the residual row are zero; no state is read or written
#pragma once
#include <algorithm>
#include <vector>

#include "../backend/isa.hpp"
#include "arguments.hpp"

namespace linea::inline LINEA_ISA {

// ε of the normaliser, for host and device code.
template <class R>
inline constexpr R normaliser_epsilon = R(1e-10);

// The divisor s q_t · z_t + ε, given s q_t · z_t (each path sums the dot product its own way).
template <class R>
LINEA_HD R normaliser_divisor(R scaled_q_dot_z) {
  return scaled_q_dot_z + normaliser_epsilon<R>;
}

// z_t of one (sequence, value head), token by token, on the host.
template <class R>
class normaliser {
 public:
  explicit normaliser(index_t K) : z_(static_cast<std::size_t>(K), R(0)) {}
  void reset() { std::fill(z_.begin(), z_.end(), R(0)); }
  // z_t = z_{t−1} + k_t; returns the divisor s q_t · z_t + ε.
  template <class Q, class Kx>
  R next(const Q& q, const Kx& k, R scale) {
    R qz = 0;
    for (std::size_t i = 0; i < z_.size(); ++i) {
      z_[i] += R(k[i]);
      qz += scale * R(q[i]) * z_[i];
    }
    return normaliser_divisor(qz);
  }

 private:
  std::vector<R> z_;
};

// A decode row that names no state (state_indices[b] = −1): zero output, residual and the CCQ read's q̃ at value
// head hv — every output row the call was given, so none keeps a stale value.
template <class T, class S>
void zero_skipped_row(const arguments<T, S>& a, const problem& p, index_t b, index_t hv) {
  for (index_t j = 0; j < p.V; ++j) a.o(b, 0, hv, j) = store_as<T>(S(0));
  if (!a.residual.empty())
    for (index_t j = 0; j < p.V; ++j) a.residual(b, 0, hv, j) = store_as<T>(S(0));
  if (!a.ccq.q_tilde.empty())
    for (index_t i = 0; i < p.K; ++i) a.ccq.q_tilde(b, 0, hv, i) = store_as<T>(S(0));
}

}  // namespace linea
