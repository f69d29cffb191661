// linea/forms/recurrent_head.hpp — the token-by-token kernel for one (sequence, value head), shared by the
// recurrent form and the decode step.
//
// Same four steps as the reference (SPEC §2), fused into two passes over the K×V state per token:
//   pass 1 (row i):  S'_i = α_i S_i;   r += (b_i k_i) S'_i          r = S'ᵀ (b ⊙ k)
//                    u = w ⊙ v − r
//   pass 2 (row i):  S_i = S'_i + k_i u;   o += (s q̃_i) S_i
// computed in the state type S (float32, or float64 for float64 inputs).
#pragma once
#include <cmath>
#include <vector>

#include "../backend/isa.hpp"
#include "../core/epilogue.hpp"
#include "../core/load.hpp"
#include "../core/validate.hpp"

namespace linea::detail::inline LINEA_ISA {

template <class Rule, class Read, class T, class S>
class recurrent_head {
 public:
  explicit recurrent_head(const problem& p)
      : p_(p), load_(p), reader_(p), state_(static_cast<std::size_t>(p.K * p.V)), u_(p.V), o_(p.V), norm_(p.K) {}

  // Runs tokens [seq.t_begin, seq.t_end) of batch row seq.batch at value head hv, starting from
  // initial_state(n_in) (or zero) and storing the state to final_state(n_out) (when given).
  void run(const arguments<T, S>& a, const sequence& seq, index_t hv, index_t n_in, index_t n_out) {
    const index_t K = p_.K, V = p_.V;
    S* St = state_.data();
    for (index_t i = 0; i < K; ++i)
      for (index_t j = 0; j < V; ++j) St[i * V + j] = a.initial_state.empty() ? S(0) : a.initial_state(n_in, hv, i, j);
    norm_.reset();
    reader_.begin(a, p_, n_in, hv);
    const S scale = S(p_.scale);

    for (index_t t = seq.t_begin; t < seq.t_end; ++t) {
      const token<S> x = load_.load(a, p_, seq.batch, t, hv);
      // pass 1: decay, and recall what the decayed state returns for the erase key
      std::fill(u_.begin(), u_.end(), S(0));
      for (index_t i = 0; i < K; ++i) {
        S* row = St + i * V;
        const S alpha = std::exp(Rule::decay::log_alpha(x, i));
        const S e = erase_key<Rule>(x, i);
        for (index_t j = 0; j < V; ++j) {
          row[j] *= alpha;
          if constexpr (erases<Rule>) u_[j] += e * row[j];  // an additive update's erase key is zero
        }
      }
      for (index_t j = 0; j < V; ++j) u_[j] = write_target<Rule>(x, j) - u_[j];

      // pass 2: write, then read with the (possibly cleaned) query
      const S* qt = reader_.query(a, p_, seq.batch, t, hv, x, mean_log_decay<Rule>(x, K));
      std::fill(o_.begin(), o_.end(), S(0));
      for (index_t i = 0; i < K; ++i) {
        S* row = St + i * V;
        const S ki = x.k[i], sq = scale * qt[i];
        for (index_t j = 0; j < V; ++j) {
          row[j] += ki * u_[j];
          o_[j] += sq * row[j];
        }
      }
      if (a.normalize) {  // o_t / (s q_t · z_t + 1e-10), z_t = Σ_{j≤t} k_j (core/epilogue.hpp)
        const S divisor = norm_.next(x.q, x.k, scale);
        for (S& oj : o_) oj /= divisor;
      }
      for (index_t j = 0; j < V; ++j) a.o(seq.batch, t, hv, j) = store_as<T>(o_[j]);
      if (!a.residual.empty())
        for (index_t j = 0; j < V; ++j) a.residual(seq.batch, t, hv, j) = store_as<T>(u_[j]);
    }
    if (!a.final_state.empty())
      for (index_t i = 0; i < K; ++i)
        for (index_t j = 0; j < V; ++j) a.final_state(n_out, hv, i, j) = St[i * V + j];
    reader_.end(a, p_, n_out, hv);
  }

 private:
  problem p_;
  token_loader<Rule, S> load_;
  typename Read::template carried<S> reader_;
  std::vector<S> state_, u_, o_;
  normaliser<S> norm_;
};

}  // namespace linea::detail
