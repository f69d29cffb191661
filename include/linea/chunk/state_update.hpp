// linea/chunk/state_update.hpp — the state carried from one chunk to the next (SPEC §4):
//
//   S_next = Diag(Γ_L) S + (K ⊙ exp(G_L − G))ᵀ U_new
//
// U_new = V for the additive family, the corrections u_t for the delta family. Both decay factors have
// exponents ≤ 0. `scratch` holds K ⊙ exp(G_L − G) (L×K) and is reused from chunk to chunk.
#pragma once
#include "../backend/isa.hpp"
#include "decay.hpp"
#include "matrix.hpp"

namespace linea::chunk::inline LINEA_ISA {

template <class Decay, class R>
void advance_state(mat<R>& S, const mat<R>& Kc, const mat<R>& U_new, const cumulative_decay<Decay, R>& dec,
                   mat<R>& scratch) {
  const index_t L = dec.length();
  dec.decay_state(S);
  scratch = Kc.topRows(L);
  dec.times_to_end(scratch);
  S.noalias() += scratch.transpose() * U_new.topRows(L);
}

}  // namespace linea::chunk
