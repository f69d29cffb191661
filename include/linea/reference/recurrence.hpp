// linea/reference/recurrence.hpp — the float64 oracle: every rule, token by token, every formula visible.
//
// This is a user feature as much as the tests' truth: to verify your own kernel, run the same arguments
// through linea::reference::recurrent<Rule>(args) and compare. It computes in `Real` (double by default)
// whatever the input type, and writes its results into the argument's output views.
//
// For each sequence n and value head hv, token by token (SPEC §2):
//   1. decay    S' = Diag(α_t) S_{t-1}                 α_t = exp(g_t) or exp(gk_t) or 1
//   2. correct  u_t = w_t ⊙ v_t − S'ᵀ (b_t ⊙ k_t)       (b, w from the rule's update: 0/1, β/β, or given)
//   3. write    S_t = S' + k_t u_tᵀ
//   4. read     o_t = S_tᵀ (s · q̃_t)                   q̃_t from the read policy (identity: q_t)
#pragma once
#include <cmath>
#include <vector>

#include "../backend/isa.hpp"
#include "../core/epilogue.hpp"
#include "../core/load.hpp"
#include "../core/empty_call.hpp"
#include "../core/validate.hpp"
#include "../read/identity.hpp"

namespace linea::reference::inline LINEA_ISA {

// A K×V matrix, rows = key channels, columns = value channels.
template <class Real>
struct matrix {
  index_t rows, cols;
  std::vector<Real> data;
  matrix(index_t r, index_t c) : rows(r), cols(c), data(static_cast<std::size_t>(r * c), Real(0)) {}
  Real& operator()(index_t i, index_t j) { return data[static_cast<std::size_t>(i * cols + j)]; }
};

// Step 1: S' = Diag(α) S.
template <class Rule, class Real>
void decay_state(matrix<Real>& S, const token<Real>& x) {
  for (index_t i = 0; i < S.rows; ++i) {
    const Real alpha = std::exp(Rule::decay::log_alpha(x, i));  // the decay policy's hook
    for (index_t j = 0; j < S.cols; ++j) S(i, j) *= alpha;
  }
}

// Step 2: u = w ⊙ v − S'ᵀ (b ⊙ k).
template <class Rule, class Real>
std::vector<Real> correction(matrix<Real>& S, const token<Real>& x) {
  std::vector<Real> u(static_cast<std::size_t>(S.cols));
  for (index_t j = 0; j < S.cols; ++j) {
    Real recalled = 0;  // what S' returns for the erase key b ⊙ k
    // A rule that does not erase has no such term (u = w ⊙ v): a non-finite state must not reach u through 0 · S.
    if constexpr (erases<Rule>)
      for (index_t i = 0; i < S.rows; ++i) recalled += erase_key<Rule>(x, i) * S(i, j);  // b_i k_i S'_ij
    u[j] = write_target<Rule>(x, j) - recalled;                                         // w_j v_j − recalled
  }
  return u;
}

// Step 3: S = S' + k uᵀ.
template <class Real>
void write(matrix<Real>& S, const Real* k, const std::vector<Real>& u) {
  for (index_t i = 0; i < S.rows; ++i)
    for (index_t j = 0; j < S.cols; ++j) S(i, j) += k[i] * u[j];
}

// Step 4: o = Sᵀ (s · q̃).
template <class Real>
std::vector<Real> read_out(matrix<Real>& S, const Real* q_tilde, Real scale) {
  std::vector<Real> o(static_cast<std::size_t>(S.cols), Real(0));
  for (index_t i = 0; i < S.rows; ++i)
    for (index_t j = 0; j < S.cols; ++j) o[j] += S(i, j) * scale * q_tilde[i];
  return o;
}

template <class Rule, class Read = read::identity, class Real = double, class T, class S>
void recurrent(const arguments<T, S>& a) {
  const problem p = validate<Rule, Read>(a);
  if (!a.state_indices.empty()) throw error("argument 'state_indices' belongs to the decode step, not recurrent");
  if (!a.checkpoints.empty()) throw error("argument 'checkpoints' is produced by the chunkwise form only");
  if (linea::detail::forward_writes_nothing(a, p)) return;  // no tokens, no states asked for (core/empty_call.hpp)

  token_loader<Rule, Real> load(p);
  typename Read::template carried<Real> reader(p);
  const Real scale = Real(p.scale);

  for (index_t n = 0; n < p.N; ++n) {
    const sequence seq = sequence_of(a, p, n);
    for (index_t hv = 0; hv < p.HV; ++hv) {
      matrix<Real> St(p.K, p.V);  // S_0: the initial state, or zero
      if (!a.initial_state.empty())
        for (index_t i = 0; i < p.K; ++i)
          for (index_t j = 0; j < p.V; ++j) St(i, j) = Real(a.initial_state(n, hv, i, j));
      normaliser<Real> norm(p.K);  // z_t for `normalize`
      reader.begin(a, p, n, hv);

      for (index_t t = seq.t_begin; t < seq.t_end; ++t) {
        const token<Real> x = load.load(a, p, seq.batch, t, hv);
        decay_state<Rule>(St, x);
        const std::vector<Real> u = correction<Rule>(St, x);
        write(St, x.k, u);
        const Real* q_tilde = reader.query(a, p, seq.batch, t, hv, x, mean_log_decay<Rule>(x, p.K));
        std::vector<Real> o = read_out(St, q_tilde, scale);

        if (a.normalize) {  // o_t / (s q_t · z_t + 1e-10), z_t = Σ_{j≤t} k_j (fla's linear_attn normaliser)
          const Real divisor = norm.next(x.q, x.k, scale);
          for (Real& oj : o) oj /= divisor;
        }
        for (index_t j = 0; j < p.V; ++j) {
          a.o(seq.batch, t, hv, j) = store_as<T>(o[j]);
          if (!a.residual.empty()) a.residual(seq.batch, t, hv, j) = store_as<T>(u[j]);
        }
      }
      if (!a.final_state.empty())
        for (index_t i = 0; i < p.K; ++i)
          for (index_t j = 0; j < p.V; ++j) a.final_state(n, hv, i, j) = static_cast<S>(St(i, j));
      reader.end(a, p, n, hv);
    }
  }
}

}  // namespace linea::reference
