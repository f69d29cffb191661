// linea/chunk/products.hpp — the masked decayed products of a chunk (SPEC §4):
//
//   P_rs = Σ_d X_rd Y_sd exp(G_rd − G_sd)   for s ≤ r (diagonal::include) or s < r (diagonal::exclude), else 0
//
// X = Q̃, Y = K gives the read matrix P; X = b ⊙ K, Y = K gives the WY matrix A of the delta family.
// No decay and scalar decays factor out of the sum: P = (X Yᵀ) ⊙ exp(G_r − G_s). Per-key decays do not, and
// (X ⊙ Γ)(Y ⊙ Γ⁻¹)ᵀ would overflow, so they use secondary chunking (as GLA does): rows are cut into sub-blocks
// of 16; a sub-block I (rows i0..i1) against all earlier rows s < i0 is one matrix product relative to the
// reference row i0,
//   P_rs = Σ_d [X_rd exp(G_rd − G_i0,d)] [Y_sd exp(G_i0,d − G_sd)]       (both exponents ≤ 0: s < i0 ≤ r)
// and the diagonal sub-block (s, r both in I) is summed element by element in log space.
// Only the lower triangle is computed, sub-block row by sub-block row.
#pragma once
#include <algorithm>
#include <type_traits>

#include "../rules/decay.hpp"
#include "decay.hpp"
#include "matrix.hpp"

namespace linea::chunk {

enum class diagonal { include, exclude };

inline constexpr index_t sub_block = 16;  // secondary chunk length; every chunk size is a multiple of it

// Work space reused from chunk to chunk.
template <class R>
struct product_scratch {
  mat<R> X_ref, Y_ref;  // the factors relative to a reference row (per-key decays only)
};

template <class Decay, class R>
void decayed_product(const mat<R>& X, const mat<R>& Y, const cumulative_decay<Decay, R>& dec, diagonal diag,
                     mat<R>& P, product_scratch<R>& work) {
  const index_t L = dec.length();
  P.setZero(L, L);
  for (index_t i0 = 0; i0 < L; i0 += sub_block) {
    const index_t n = std::min(sub_block, L - i0), i1 = i0 + n;
    if constexpr (std::is_same_v<Decay, decay::per_key>) {
      const auto& G = dec.G();
      if (i0 > 0) {  // earlier rows, relative to the reference row i0
        work.X_ref = X.middleRows(i0, n);
        for (index_t r = 0; r < n; ++r)
          work.X_ref.row(r).array() *= (G.row(i0 + r) - G.row(i0)).template cast<R>().array().exp();
        work.Y_ref = Y.topRows(i0);
        for (index_t s = 0; s < i0; ++s)
          work.Y_ref.row(s).array() *= (G.row(i0) - G.row(s)).template cast<R>().array().exp();
        P.block(i0, 0, n, i0).noalias() = work.X_ref * work.Y_ref.transpose();
      }
      for (index_t r = i0; r < i1; ++r) {  // the diagonal sub-block, element by element in log space
        const index_t s_end = diag == diagonal::include ? r + 1 : r;
        for (index_t s = i0; s < s_end; ++s)
          P(r, s) = (X.row(r).array() * Y.row(s).array() *
                     (G.row(r) - G.row(s)).template cast<R>().array().exp())
                        .sum();
      }
    } else {
      // Rows i0..i1 against columns 0..i1, then the causal mask and (scalar decay) exp(G_r − G_s).
      P.block(i0, 0, n, i1).noalias() = X.middleRows(i0, n) * Y.topRows(i1).transpose();
      for (index_t r = i0; r < i1; ++r) {
        for (index_t s = diag == diagonal::include ? r + 1 : r; s < i1; ++s) P(r, s) = R(0);
        if constexpr (std::is_same_v<Decay, decay::scalar>)
          for (index_t s = 0; s <= r; ++s) P(r, s) *= dec.between(r, s);
      }
    }
  }
}

}  // namespace linea::chunk
