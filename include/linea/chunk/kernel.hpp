// linea/chunk/kernel.hpp — the chunkwise kernel for one (sequence, value head): chunk after chunk, carrying S.
//
// Per chunk of L ≤ C tokens with S the state at the chunk start (SPEC §4; docs/math/chunkwise.md):
//   delta family:  A = tril₋₁[(b⊙K) Kᵀ ⊙ decay],   U_new = (I + A)⁻¹ (w⊙V − (b⊙K⊙Γ) S)
//   additive:      U_new = V
//   read:          P = tril[Q̃ Kᵀ ⊙ decay],          O = s [(Q̃⊙Γ) S + P U_new]
//   carry:         S ← Diag(Γ_L) S + (K ⊙ exp(G_L − G))ᵀ U_new
// computed in the state type S (float32, or float64 for float64 inputs).
#pragma once
#include <algorithm>

#include "../backend/isa.hpp"
#include "../core/arguments.hpp"
#include "../core/epilogue.hpp"
#include "../read/ccq_chunk.hpp"  // read::ccq's chunk_carried (declared only in read/ccq.hpp)
#include "flush_denormals.hpp"
#include "gather.hpp"
#include "matrix.hpp"
#include "products.hpp"
#include "state_update.hpp"
#include "ut_transform.hpp"

namespace linea::chunk::inline LINEA_ISA {

// Chunks of sequence `seq` at chunk size C: ⌈length / C⌉.
inline index_t chunk_count(const sequence& seq, index_t C) { return (seq.length() + C - 1) / C; }

template <class Rule, class Read, class T, class S>
class kernel {
 public:
  static constexpr bool erases = linea::erases<Rule>;

  kernel(const problem& p, index_t C) : p_(p), C_(C), in_(p, C), reader_(p), state_(p.K, p.V), norm_(p.K) {}

  // Sequence `seq` (sequence index n) at value head hv: from initial_state(n) (or zero) to final_state(n),
  // writing o, the residual and the checkpoints when they are given.
  void run(const arguments<T, S>& a, const sequence& seq, index_t hv, index_t n) {
    const flush_denormals ftz;  // decay factors below 1e-38 would take the slow path (chunk/flush_denormals.hpp)
    for (index_t i = 0; i < p_.K; ++i)
      for (index_t j = 0; j < p_.V; ++j) state_(i, j) = a.initial_state.empty() ? S(0) : a.initial_state(n, hv, i, j);
    norm_.reset();
    reader_.begin(a, p_, n, hv);
    index_t c = 0;
    for (index_t t0 = seq.t_begin; t0 < seq.t_end; t0 += C_, ++c) {
      if (!a.checkpoints.empty())
        for (index_t i = 0; i < p_.K; ++i)
          for (index_t j = 0; j < p_.V; ++j) a.checkpoints(n, c, hv, i, j) = state_(i, j);
      one_chunk(a, seq.batch, t0, std::min(C_, seq.t_end - t0), hv);
    }
    if (!a.final_state.empty())
      for (index_t i = 0; i < p_.K; ++i)
        for (index_t j = 0; j < p_.V; ++j) a.final_state(n, hv, i, j) = state_(i, j);
    reader_.end(a, p_, n, hv);
  }

 private:
  void one_chunk(const arguments<T, S>& a, index_t bt, index_t t0, index_t L, index_t hv) {
    in_.load(a, p_, bt, t0, L, hv);
    const auto& dec = in_.decay;
    const mat<S>& Qt = reader_.queries(a, p_, bt, t0, L, hv, in_.Q, in_.Kc, in_.default_log_decay);

    // The decayed products: P (read, diagonal included) and, for the delta family, A (strictly lower).
    decayed_products(in_.Kc, dec, Qt, P_, erases ? &in_.BK : nullptr, &A_, work_);

    // The corrections U_new (rows are the write residuals u_t): (I + A) U_new = w ⊙ V − (b ⊙ K ⊙ Γ) S.
    if constexpr (erases) {
      X_ = in_.BK;
      dec.times_gamma(X_);
      U_ = in_.WV;
      U_.noalias() -= X_ * state_;
      forward_substitute(A_, U_);
    }
    const mat<S>& U = erases ? U_ : in_.WV;

    // The read: O = s [(Q̃ ⊙ Γ) S + P U_new].
    X_ = Qt;
    dec.times_gamma(X_);
    O_.noalias() = X_ * state_;
    add_lower_product(P_, U, O_, L);
    O_ *= S(p_.scale);
    if (a.normalize)  // o_t / (s q_t · z_t + 1e-10), z_t = Σ_{j≤t} k_j (core/epilogue.hpp)
      for (index_t r = 0; r < L; ++r) O_.row(r) /= norm_.next(in_.Q.row(r), in_.Kc.row(r), S(p_.scale));
    for (index_t r = 0; r < L; ++r)
      for (index_t j = 0; j < p_.V; ++j) {
        a.o(bt, t0 + r, hv, j) = store_as<T>(O_(r, j));
        if (!a.residual.empty()) a.residual(bt, t0 + r, hv, j) = store_as<T>(U(r, j));
      }

    advance_state(state_, in_.Kc, U, dec, X_);
  }

  problem p_;
  index_t C_;
  chunk_loader<Rule, S> in_;
  typename Read::template chunk_carried<S> reader_;
  mat<S> state_;                 // S (K×V) at the current chunk start
  mat<S> A_, P_, U_, O_, X_;     // per-chunk work matrices, reused
  product_scratch<S> work_;
  normaliser<S> norm_;           // z_t for `normalize`
};

}  // namespace linea::chunk
