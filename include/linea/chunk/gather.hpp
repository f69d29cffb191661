// linea/chunk/gather.hpp — loads one chunk (L ≤ C tokens of one value head) into small row-major matrices.
//
// Each token goes through the same token_loader as the recurrent form (in-kernel L2 norm, beta activation,
// in-kernel gates), so both forms see identical inputs. Only the chunk is copied, never a whole tensor.
#pragma once
#include "../backend/isa.hpp"
#include "../core/arguments.hpp"
#include "../core/load.hpp"
#include "decay.hpp"
#include "matrix.hpp"

namespace linea::chunk::inline LINEA_ISA {

template <class Rule, class R>
class chunk_loader {
 public:
  using Decay = typename Rule::decay;

  chunk_loader(const problem& p, index_t C) : decay(C, p.K), tokens_(p), K_(p.K), V_(p.V) {}

  // Tokens t0 .. t0+L−1 of batch row bt at value head hv.
  template <class T, class S>
  void load(const arguments<T, S>& a, const problem& p, index_t bt, index_t t0, index_t L, index_t hv) {
    Q.resize(L, K_), Kc.resize(L, K_), WV.resize(L, V_), default_log_decay.resize(L);
    if constexpr (erases<Rule>) BK.resize(L, K_);
    decay.reset(L);
    for (index_t r = 0; r < L; ++r) {
      const token<R> x = tokens_.load(a, p, bt, t0 + r, hv);
      for (index_t i = 0; i < K_; ++i) {
        Q(r, i) = x.q[i];
        Kc(r, i) = x.k[i];
        if constexpr (erases<Rule>) BK(r, i) = erase_key<Rule>(x, i);
      }
      for (index_t j = 0; j < V_; ++j) WV(r, j) = write_target<Rule>(x, j);
      decay.push(r, x);
      default_log_decay(r) = mean_log_decay<Rule>(x, K_);
    }
    decay.finish();
  }

  mat<R> Q;                          // queries q_t (after L2 norm, before scale)           L×K
  mat<R> Kc;                         // keys k_t                                            L×K
  mat<R> WV;                         // write targets w_t ⊙ v_t (v_t, β_t v_t, w_t ⊙ v_t)     L×V
  mat<R> BK;                         // erase keys b_t ⊙ k_t (β_t k_t, b_t ⊙ k_t); delta family only
  vec<R> default_log_decay;          // per token: the read policy's default statistics decay
  cumulative_decay<Decay, R> decay;  // G of this chunk

 private:
  token_loader<Rule, R> tokens_;
  index_t K_, V_;
};

}  // namespace linea::chunk
