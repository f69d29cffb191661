// linea/chunk/products.hpp — the masked decayed products of a chunk (SPEC §4):
//
//   M(X)_rs = Σ_d X_rd K_sd exp(G_rd − G_sd)   for s ≤ r (the read matrix P, X = Q̃)
//                                              or s < r (the WY matrix A of the delta family, X = b ⊙ K), else 0
//
// Both share the right factor K and every decay factor, so they are computed in one pass.
// No decay and scalar decays factor out of the sum: M = (X Kᵀ) ⊙ exp(G_r − G_s). Per-key decays do not, and
// (X ⊙ Γ)(K ⊙ Γ⁻¹)ᵀ would overflow, so they use secondary chunking (as GLA does): rows are cut into sub-blocks of
// 16; a sub-block I (rows from i0) against all earlier rows s < i0 is one matrix product relative to the reference
// row i0,
//   M_rs = Σ_d [X_rd exp(G_rd − G_i0,d)] [K_sd exp(G_i0,d − G_sd)]       (both exponents ≤ 0: s < i0 ≤ r)
// where exp(G_i0 − G_s) = across(I, J) · to_block_end(s) for s in sub-block J (chunk/decay.hpp), and the diagonal
// sub-block (s, r both in I) is summed element by element in log space: exp(G_rd − G_sd) for each (r, s, d).
// Only the lower triangle is computed, sub-block row by sub-block row.
#pragma once
#include <algorithm>
#include <type_traits>

#include "../backend/isa.hpp"
#include "../rules/decay.hpp"
#include "decay.hpp"
#include "matrix.hpp"

namespace linea::chunk::inline LINEA_ISA {

// Work space reused from chunk to chunk.
template <class R>
struct product_scratch {
  mat<R> K_end, K_ref, X_ref, E;
};

// P = M(Xp) with the diagonal; when Xa is given, also A = M(Xa) without it.
template <class Decay, class R>
void decayed_products(const mat<R>& Kc, const cumulative_decay<Decay, R>& dec, const mat<R>& Xp, mat<R>& P,
                      const mat<R>* Xa, mat<R>* A, product_scratch<R>& work) {
  const index_t L = dec.length();
  P.setZero(L, L);
  if (Xa) A->setZero(L, L);

  if constexpr (std::is_same_v<Decay, decay::per_key>) {
    const auto& G = dec.G();
    const index_t K = Kc.cols();
    work.K_end = Kc.topRows(L).array() * dec.to_block_end().array();  // k_s ⊙ exp(G_end(J) − G_s)
    for (index_t i0 = 0; i0 < L; i0 += sub_block) {
      const index_t n = std::min(sub_block, L - i0), I = i0 / sub_block;
      if (i0 > 0) {  // earlier sub-blocks, relative to the reference row i0
        work.K_ref.resize(i0, K);
        for (index_t J = 0; J < I; ++J)
          work.K_ref.middleRows(J * sub_block, sub_block).array() =
              work.K_end.middleRows(J * sub_block, sub_block).array().rowwise() * dec.across(I, J).array();
        work.X_ref = Xp.middleRows(i0, n).array() * dec.from_start().middleRows(i0, n).array();
        P.block(i0, 0, n, i0).noalias() = work.X_ref * work.K_ref.transpose();
        if (Xa) {
          work.X_ref = Xa->middleRows(i0, n).array() * dec.from_start().middleRows(i0, n).array();
          A->block(i0, 0, n, i0).noalias() = work.X_ref * work.K_ref.transpose();
        }
      }
      // The diagonal sub-block, element by element in log space: E_s = k_s ⊙ exp(G_r − G_s) for i0 ≤ s < r.
      for (index_t r = i0; r < i0 + n; ++r) {
        const index_t m = r - i0;
        P(r, r) = Xp.row(r).dot(Kc.row(r));
        if (m == 0) continue;
        work.E.resize(m, K);
        for (index_t s = 0; s < m; ++s) work.E.row(s) = (G.row(r) - G.row(i0 + s)).template cast<R>();
        exp_in_place(work.E);
        work.E.array() *= Kc.middleRows(i0, m).array();
        P.row(r).segment(i0, m).noalias() = (work.E * Xp.row(r).transpose()).transpose();
        if (Xa) A->row(r).segment(i0, m).noalias() = (work.E * Xa->row(r).transpose()).transpose();
      }
    }
  } else {
    // Rows i0..i1 against columns 0..i1, then the causal mask and (scalar decay) exp(G_r − G_s).
    auto masked = [&](const mat<R>& X, mat<R>& M, bool diagonal) {
      for (index_t i0 = 0; i0 < L; i0 += sub_block) {
        const index_t n = std::min(sub_block, L - i0), i1 = i0 + n;
        M.block(i0, 0, n, i1).noalias() = X.middleRows(i0, n) * Kc.topRows(i1).transpose();
        for (index_t r = i0; r < i1; ++r)
          for (index_t s = diagonal ? r + 1 : r; s < i1; ++s) M(r, s) = R(0);
      }
      if constexpr (std::is_same_v<Decay, decay::scalar>) M.array() *= dec.between().array();
    };
    masked(Xp, P, true);
    if (Xa) masked(*Xa, *A, false);
  }
}

// out ← out + tril(P) U over the first L rows, reading only rows s ≤ r of U for output row r. A dense P U would
// multiply the zeros above P's diagonal by the later rows of U, and 0 · NaN = NaN: a NaN or Inf input at token s
// would reach the rows before it, which the recurrence never lets it do. Earlier sub-blocks are one matrix
// product each; the diagonal sub-block is a short product per row.
template <class R, class U, class O>
void add_lower_product(const mat<R>& P, const U& u, O& out, index_t L) {
  for (index_t i0 = 0; i0 < L; i0 += sub_block) {
    const index_t n = std::min(sub_block, L - i0);
    if (i0 > 0) out.middleRows(i0, n).noalias() += P.block(i0, 0, n, i0) * u.topRows(i0);
    for (index_t r = i0; r < i0 + n; ++r)
      out.row(r).noalias() += P.row(r).segment(i0, r - i0 + 1) * u.middleRows(i0, r - i0 + 1);
  }
}

// One product: M(X) with (diagonal::include) or without (diagonal::exclude) its diagonal.
enum class diagonal { include, exclude };

template <class Decay, class R>
void decayed_product(const mat<R>& X, const mat<R>& Kc, const cumulative_decay<Decay, R>& dec, diagonal diag,
                     mat<R>& M, product_scratch<R>& work) {
  decayed_products<Decay, R>(Kc, dec, X, M, nullptr, nullptr, work);
  if (diag == diagonal::exclude) M.diagonal().setZero();
}

}  // namespace linea::chunk
