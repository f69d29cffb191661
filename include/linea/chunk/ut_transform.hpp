// linea/chunk/ut_transform.hpp — the UT transform of the delta family (SPEC §4): T = (I + A)⁻¹ applied by
// forward substitution.
//
// Within a chunk the corrections satisfy u_r + Σ_{s<r} A_rs u_s = w_r ⊙ v_r − (b_r ⊙ k_r ⊙ Γ_r)ᵀ S, i.e.
//   (I + A) U_new = w ⊙ V − (b ⊙ K ⊙ Γ) S,     so  U_new = T (w ⊙ V) − T (b ⊙ K ⊙ Γ) S = U − W S.
// T is unit lower triangular and never formed: one forward substitution on the right-hand side gives U_new
// directly (the same numbers as forming W and U, with one matrix product fewer). Row r of the substitution is
// exactly token r of the recurrence, so it is as stable as the recurrence itself (β up to 2 included).
#pragma once
#include "../backend/cpu/third_party.hpp"  // Eigen

#include "../backend/isa.hpp"
#include "matrix.hpp"

namespace linea::chunk::inline LINEA_ISA {

// RHS ← (I + A)⁻¹ RHS, reading only the strictly lower triangle of A (its diagonal is taken as 1).
template <class R>
void forward_substitute(const mat<R>& A, mat<R>& rhs) {
  A.template triangularView<Eigen::UnitLower>().solveInPlace(rhs);
}

}  // namespace linea::chunk
