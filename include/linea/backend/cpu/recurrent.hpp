// linea/backend/cpu/recurrent.hpp — the CPU backend's token-by-token kernel (recurrent form and decode step).
//
// Same mathematics as the reference (SPEC §2), organised for the FMA units:
//
// 1. Deferred decay. The state is kept as S = Diag(c) S̃, with c the product of the decays since the last
//    renormalisation, so the decay costs K multiplies per token instead of K·V:
//        S' = Diag(c ⊙ α) S̃                       (c ← c ⊙ α: no pass over the state)
//        r  = S'ᵀ(b⊙k) = S̃ᵀ(c⊙b⊙k)               u = w⊙v − r
//        S̃ ← S̃ + (k/c) uᵀ                         o = S_tᵀ(s q̃) = S̃ᵀ(s c⊙q̃)
//    Each product still equals its true value up to rounding. When some c_i would fall below
//    renorm_threshold (1e-15), the rows are multiplied out (S̃ ← Diag(c⊙α) S̃, c ← 1) before the token,
//    so 1/c ≤ 1e15 never overflows and an exp(g) that underflows to 0 still zeroes its row exactly. With
//    decays near 0 (trained models) this happens every few dozen tokens at most.
// 2. Coefficients first. c, renormalisations, kw = k/c, e = c⊙b⊙k, qr = s·c⊙q̃, w⊙v (and CCQ's q̃) depend only on
//    the inputs, never on S, so they are computed for a block of tokens at once (prepare()).
// 3. Column tiles. Value columns are independent, so each tile of W columns (backend/cpu/tile.hpp) stays in
//    L1 for the whole block, with one fused pass per token.
// 4. Threads over (sequence, value head); nothing is shared between items.
#pragma once
#include <algorithm>
#include <cmath>
#include <vector>

#include "../../core/gates.hpp"
#include "../../core/load.hpp"
#include "../../core/validate.hpp"
#include "simd.hpp"
#include "threads.hpp"
#include "tile.hpp"

namespace linea::cpu_backend {

template <class R>
inline constexpr R renorm_threshold = R(1e-15);

// Vectors per tile row: 4 (64 floats with AVX-512: a 32 KiB tile at K = 128; 32 floats with AVX2).
template <class Arch>
inline constexpr int tile_vectors = 4;

// Tokens whose coefficients are prepared at once (their buffers, ~2 KiB per token at K = V = 128, sit in L2).
inline constexpr index_t block_tokens = 64;

template <class Rule, class Read, class T, class S, class Arch>
class head_kernel {
  using R = S;  // compute in the state type: float, or double for double inputs
  using Decay = typename Rule::decay;
  using Update = typename Rule::update;
  using tile_t = tile<R, Arch, tile_vectors<Arch>>;
  static constexpr index_t W = tile_t::width;
  static constexpr bool erases = Update::erases;

 public:
  explicit head_kernel(const problem& p)
      : p_(p),
        tiles_((p.V + W - 1) / W),
        Vp_(tiles_ * W),
        reader_(p),
        state_(static_cast<std::size_t>(p.K * Vp_)),
        c_(p.K),
        alpha_(p.K),
        q_(p.K), k_(p.K), v_(p.V), gk_(p.K), b_(p.K), w_(p.V),
        key_sum_(p.K),
        kw_(block_tokens * p.K), e_(block_tokens * p.K), qr_(block_tokens * p.K), f_(block_tokens * p.K),
        wv_(block_tokens * Vp_, R(0)),
        denom_(block_tokens), renorm_(block_tokens),
        u_(W), o_(W), r_(W) {}

  // Tokens [seq.t_begin, seq.t_end) of batch row seq.batch at value head hv, from initial_state(n_in) (or
  // zero) to final_state(n_out) (when given).
  void run(const arguments<T, S>& a, const sequence& seq, index_t hv, index_t n_in, index_t n_out) {
    const index_t K = p_.K, V = p_.V;
    // The state in tile order: tile jt holds columns [jt·W, jt·W + W) as a K×W block; padding stays zero.
    std::fill(state_.begin(), state_.end(), R(0));
    if (!a.initial_state.empty())
      for (index_t i = 0; i < K; ++i)
        for (index_t j = 0; j < V; ++j) state_[at(i, j)] = static_cast<R>(a.initial_state(n_in, hv, i, j));
    std::fill(c_.begin(), c_.end(), R(1));
    std::fill(key_sum_.begin(), key_sum_.end(), R(0));
    reader_.begin(a, p_, n_in, hv);

    for (index_t t0 = seq.t_begin; t0 < seq.t_end; t0 += block_tokens) {
      const index_t L = std::min(block_tokens, seq.t_end - t0);
      prepare(a, seq.batch, t0, L, hv);
      for (index_t jt = 0; jt < tiles_; ++jt) run_tile(a, seq.batch, t0, L, hv, jt);
    }

    if (!a.final_state.empty())  // S = Diag(c) S̃
      for (index_t i = 0; i < K; ++i)
        for (index_t j = 0; j < V; ++j) a.final_state(n_out, hv, i, j) = static_cast<S>(c_[i] * state_[at(i, j)]);
    reader_.end(a, p_, n_out, hv);
  }

 private:
  index_t at(index_t i, index_t j) const { return (j / W) * p_.K * W + i * W + j % W; }

  // Row d of a [B, T, H, D] view at (bt, t, h), converted to R.
  template <class U>
  static void gather(const view<const U, 4>& x, index_t bt, index_t t, index_t h, R* dst) {
    load_row(x.row(bt, t, h), x.stride(3), dst, x.extent(3));
  }

  void l2norm(R* x) const {
    using Lv = lanes<R, Arch>;
    const index_t K = p_.K;
    index_t i = 0;
    typename Lv::type acc = Lv::splat(R(0));
    R ss = 0;
    for (; i + Lv::size <= K; i += Lv::size) {
      const auto xi = Lv::load(x + i);
      acc = Lv::fma(xi, xi, acc);
    }
    alignas(64) R part[Lv::size];
    Lv::store(part, acc);
    for (int l = 0; l < Lv::size; ++l) ss += part[l];
    for (; i < K; ++i) ss += x[i] * x[i];
    const R inv = R(1) / std::sqrt(ss + R(1e-6));
    for (index_t j = 0; j < K; ++j) x[j] *= inv;
  }

  // Coefficients of tokens [t0, t0 + L): everything that does not depend on the state.
  void prepare(const arguments<T, S>& a, index_t bt, index_t t0, index_t L, index_t hv) {
    const index_t K = p_.K, V = p_.V, h = hv / p_.group;
    const R scale = R(p_.scale);
    const bool bound = a.gate.lower_bound.has_value();
    const R lb = bound ? R(*a.gate.lower_bound) : R(0);
    for (index_t l = 0; l < L; ++l) {
      const index_t t = t0 + l;
      gather(a.q, bt, t, h, q_.data());
      gather(a.k, bt, t, h, k_.data());
      gather(a.v, bt, t, hv, v_.data());
      if (a.qk_l2norm) {
        l2norm(q_.data());
        l2norm(k_.data());
      }
      token<R> x;
      x.q = q_.data(), x.k = k_.data(), x.v = v_.data();
      if constexpr (Decay::scalar_gate) {
        x.g = to_compute<R>(a.g(bt, t, hv));
        if (a.gate.active())
          x.g = activate_gate(x.g, R(a.gate.A_log(hv)), a.gate.dt_bias.empty() ? R(0) : R(a.gate.dt_bias(hv)), bound, lb);
      }
      if constexpr (Decay::key_gate) {
        gather(a.gk, bt, t, hv, gk_.data());
        if (a.gate.active())
          for (index_t i = 0; i < K; ++i)
            gk_[i] = activate_gate(gk_[i], R(a.gate.A_log(hv)),
                                   a.gate.dt_bias.empty() ? R(0) : R(a.gate.dt_bias(hv * K + i)), bound, lb);
        x.gk = gk_.data();
      }
      if constexpr (Update::uses_beta) {
        x.beta = activate_beta(to_compute<R>(a.beta(bt, t, hv)), a.beta_act);
      }
      if constexpr (Update::uses_channel_gates) {
        gather(a.b, bt, t, hv, b_.data());
        gather(a.w, bt, t, hv, w_.data());
        x.b = b_.data(), x.w = w_.data();
      }

      // Read policy: q̃ (CCQ updates its statistics with this token's key).
      R mean_g = 0;
      if constexpr (!Read::is_identity) mean_g = mean_log_decay<Rule>(x, K);
      const R* qt = reader_.query(a, p_, bt, t, hv, x, mean_g);

      // Decay: c ← c ⊙ α, or renormalise (multiply the rows out before this token) when c would get small.
      R* f = f_.data() + l * K;
      renorm_[l] = 0;
      if constexpr (Decay::scalar_gate || Decay::key_gate) {
        if constexpr (Decay::key_gate) {
          exp_n<R, Arch>(gk_.data(), alpha_.data(), K);
        } else {
          std::fill(alpha_.begin(), alpha_.end(), std::exp(x.g));
        }
        R cmin = R(1);
        for (index_t i = 0; i < K; ++i) {
          f[i] = c_[i] * alpha_[i];
          cmin = std::min(cmin, f[i]);
        }
        if (cmin < renorm_threshold<R> || !(cmin == cmin)) {
          renorm_[l] = 1;
          std::fill(c_.begin(), c_.end(), R(1));
        } else {
          std::copy(f, f + K, c_.begin());
        }
      }

      R* kw = kw_.data() + l * K;
      R* qr = qr_.data() + l * K;
      R* e = e_.data() + l * K;
      for (index_t i = 0; i < K; ++i) {
        kw[i] = k_[i] / c_[i];
        qr[i] = scale * c_[i] * qt[i];
      }
      if constexpr (erases) {
        if constexpr (Update::uses_channel_gates) {
          for (index_t i = 0; i < K; ++i) e[i] = c_[i] * b_[i] * k_[i];
        } else {
          for (index_t i = 0; i < K; ++i) e[i] = c_[i] * (x.beta * k_[i]);
        }
      }
      R* wv = wv_.data() + l * Vp_;
      if constexpr (Update::uses_channel_gates) {
        for (index_t j = 0; j < V; ++j) wv[j] = w_[j] * v_[j];
      } else if constexpr (Update::uses_beta) {
        for (index_t j = 0; j < V; ++j) wv[j] = x.beta * v_[j];
      } else {
        std::copy(v_.begin(), v_.end(), wv);
      }
      if (a.normalize) {  // o_t / (s q_t · z_t + 1e-10), z_t = Σ_{j≤t} k_j (additive rule only)
        R qz = 0;
        for (index_t i = 0; i < K; ++i) {
          key_sum_[i] += k_[i];
          qz += scale * q_[i] * key_sum_[i];
        }
        denom_[l] = qz + R(1e-10);
      }
    }
  }

  // Tokens [t0, t0 + L) through value-column tile jt.
  void run_tile(const arguments<T, S>& a, index_t bt, index_t t0, index_t L, index_t hv, index_t jt) {
    const index_t K = p_.K, j0 = jt * W, cols = std::min(W, p_.V - j0);
    R* St = state_.data() + jt * K * W;
    R *u = u_.data(), *o = o_.data(), *r = r_.data();
    tile_t::begin(St, K, renorm_[0] ? f_.data() : nullptr, erases ? e_.data() : nullptr, r);
    const bool residual = !a.residual.empty();
    for (index_t l = 0; l < L; ++l) {
      const R* wv = wv_.data() + l * Vp_ + j0;
      if constexpr (erases) {
        for (index_t j = 0; j < W; ++j) u[j] = wv[j] - r[j];
      } else {
        std::copy(wv, wv + W, u);
      }
      const bool next = l + 1 < L;
      const bool scale_next = next && renorm_[l + 1];
      const R* kw = kw_.data() + l * K;
      const R* qr = qr_.data() + l * K;
      const R* fn = next ? f_.data() + (l + 1) * K : nullptr;
      const R* en = next ? e_.data() + (l + 1) * K : nullptr;
      if (erases && next) {
        if (scale_next) tile_t::template token<true, true>(St, K, u, kw, qr, fn, en, o, r);
        else tile_t::template token<true, false>(St, K, u, kw, qr, fn, en, o, r);
      } else {
        if (scale_next) tile_t::template token<false, true>(St, K, u, kw, qr, fn, en, o, r);
        else tile_t::template token<false, false>(St, K, u, kw, qr, fn, en, o, r);
      }
      if (a.normalize)
        for (index_t j = 0; j < cols; ++j) o[j] /= denom_[l];
      T* orow = a.o.row(bt, t0 + l, hv) + j0 * a.o.stride(3);
      store_row(o, orow, a.o.stride(3), cols);
      if (residual) store_row(u, a.residual.row(bt, t0 + l, hv) + j0 * a.residual.stride(3), a.residual.stride(3), cols);
    }
  }

  problem p_;
  index_t tiles_, Vp_;
  typename Read::template carried<R> reader_;
  std::vector<R> state_, c_, alpha_, q_, k_, v_, gk_, b_, w_, key_sum_;
  std::vector<R> kw_, e_, qr_, f_, wv_, denom_;
  std::vector<unsigned char> renorm_;
  std::vector<R> u_, o_, r_;
};

// The recurrent form over every (sequence, value head), on a.threads threads.
template <class Rule, class Read, class Arch, class T, class S>
void recurrent(const arguments<T, S>& a, const problem& p) {
  const index_t items = p.N * p.HV;
  const int threads = thread_count(a.threads, items);
  parallel_items(
      items, threads, [&](int) { return head_kernel<Rule, Read, T, S, Arch>(p); },
      [&](auto& kernel, index_t item) {
        const index_t n = item / p.HV, hv = item % p.HV;
        kernel.run(a, sequence_of(a, p, n), hv, n, n);
      });
}

// The decode step: row b of the batch advances state state_indices[b] (or b) by its one token.
template <class Rule, class Read, class Arch, class T, class S>
void step(const arguments<T, S>& a, const problem& p) {
  const index_t items = p.B * p.HV;
  const int threads = thread_count(a.threads, items);
  parallel_items(
      items, threads, [&](int) { return head_kernel<Rule, Read, T, S, Arch>(p); },
      [&](auto& kernel, index_t item) {
        const index_t b = item / p.HV, hv = item % p.HV;
        const index_t idx = a.state_indices.empty() ? b : a.state_indices[static_cast<std::size_t>(b)];
        if (idx < 0) {  // a padded row: zero output and residual (forms/step.hpp)
          for (index_t j = 0; j < p.V; ++j) a.o(b, 0, hv, j) = store_as<T>(S(0));
          if (!a.residual.empty())
            for (index_t j = 0; j < p.V; ++j) a.residual(b, 0, hv, j) = store_as<T>(S(0));
          return;
        }
        kernel.run(a, sequence{b, 0, 1}, hv, idx, idx);
      });
}

}  // namespace linea::cpu_backend
