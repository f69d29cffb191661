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
//    the inputs, never on S, so they are computed for a block of tokens at once (prepare()). CCQ's statistics are
//    a linear attention of their own (state Cᵀ, keys and values k): they run on register tiles over the block
//    first (backend/cpu/ccq.hpp), then q̃ enters qr.
// 3. Column tiles. Value columns are independent, so each tile of W columns (backend/cpu/tile.hpp) stays in
//    L1 for the whole block: delta rules make one fused pass per token, or per two tokens (tile::pair);
//    additive rules keep 8-row blocks of the tile in registers for the whole block (register_tile).
// 4. Memory order. The value heads of a sequence advance together, block by block, so a token's rows of all
//    heads (neighbours in time-major memory) are read close in time; each block's input rows are first
//    touched with independent loads (touch()) so their cache misses overlap instead of stalling one token at
//    a time in the coefficient loop.
// 5. Threads over (sequence, group of value heads); nothing is shared between items, no per-token sync.
#pragma once
#include <algorithm>
#include <cmath>
#include <vector>

#include "../isa.hpp"
#include "../../core/epilogue.hpp"
#include "../../core/load.hpp"
#include "../../core/validate.hpp"
#include "../../read/ccq.hpp"
#include "ccq.hpp"
#include "simd.hpp"
#include "threads.hpp"
#include "tile.hpp"

LINEA_SIMD_WARNINGS_BEGIN
namespace linea::cpu_backend::inline LINEA_ISA {

template <class R>
inline constexpr R renorm_threshold = R(1e-15);

// Vectors per tile row: 2 (32 floats with AVX-512: a 16 KiB tile at K = 128; the two-token pass keeps
// u, o, r, y of both tokens in 12 registers).
template <class Arch>
inline constexpr int tile_vectors = 2;

// Register tiles of the additive rules: 8 key rows × 2 vectors (16 accumulators with AVX-512's 32 registers).
inline constexpr int register_rows = 8;
template <class Arch>
inline constexpr int register_vectors = 2;

// Tokens whose coefficients are prepared at once (their buffers, ~2 KiB per token at K = V = 128, sit in L2).
inline constexpr index_t block_tokens = 64;

// StatesOnly: the states are advanced and stored, o is neither computed nor written (the CPU backward's checkpoint
// pass: half the additive rules' FMAs, a third of the delta rules').
template <class Rule, class Read, class T, class S, class Arch, bool StatesOnly = false>
class head_kernel {
  static constexpr bool computes_o = !StatesOnly;
  using R = S;  // compute in the state type: float, or double for double inputs
  using Decay = typename Rule::decay;
  using Lv = lanes<R, Arch>;
  using vec = typename Lv::type;
  using tile_t = tile<R, Arch, tile_vectors<Arch>>;
  using reg_t = register_tile<R, Arch, register_rows, register_vectors<Arch>>;
  static constexpr index_t W = tile_t::width;
  static constexpr index_t KR = reg_t::rows, RW = reg_t::width;
  static_assert(W % RW == 0, "a column tile holds whole register tiles");
  static constexpr index_t KA = KR > Lv::size ? KR : Lv::size;  // key rows are padded to a multiple of this
  static_assert(KA % KR == 0 && KA % Lv::size == 0, "padding fits both the register tiles and the vectors");
  static constexpr bool erases = linea::erases<Rule>;
  static constexpr bool ccq = read::is_ccq<Read>;
  // The CCQ read runs its statistics on the kernel's register tiles (backend/cpu/ccq.hpp); other reads are
  // asked for q̃ token by token.
  template <class Rd, bool = read::is_ccq<Rd>>
  struct ccq_parts {
    struct none {
      explicit none(const problem&) {}
    };
    using block = none;
    using carried = typename Rd::template carried<R>;
  };
  template <class Rd>
  struct ccq_parts<Rd, true> {
    using block = ccq_block<typename Rd::weighting, R, Arch, block_tokens>;
    using carried = typename block::carried;
  };
  using ccq_block_t = typename ccq_parts<Read>::block;
  using reader_t = typename ccq_parts<Read>::carried;
  static_assert(Decay::kind == decay_kind::none || Decay::kind == decay_kind::scalar || Decay::kind == decay_kind::per_key,
                "linea: the CPU backend's recurrent kernel has no deferred decay for this decay kind");

  // What one value head carries from block to block: S̃ (tile order), c, the normaliser's key sum, the read
  // policy's statistics.
  struct head_state {
    std::vector<R> state, c;
    normaliser<R> norm;
    reader_t reader;
    head_state(const problem& p, index_t Kp, index_t Vp)
        : state(static_cast<std::size_t>(Kp * Vp)), c(Kp, R(1)), norm(p.K), reader(make_reader(p)) {}
    static reader_t make_reader(const problem& p) {
      if constexpr (ccq) return reader_t(p.K, ccq_block_t::padded(p.K));
      else return reader_t(p);
    }
  };

 public:
  explicit head_kernel(const problem& p)
      : p_(p),
        tiles_((p.V + W - 1) / W),
        Vp_(tiles_ * W),
        Kp_((p.K + KA - 1) / KA * KA),
        alpha_(Kp_, R(1)),
        load_(p, Kp_, Vp_),
        kw_(block_tokens * Kp_, R(0)), e_(block_tokens * Kp_, R(0)), qr_(block_tokens * Kp_, R(0)),
        f_(block_tokens * Kp_, R(1)),
        wv_(block_tokens * Vp_, R(0)), ob_(block_tokens * Vp_, R(0)),
        denom_(block_tokens), renorm_(block_tokens),
        d_(block_tokens), u_(W), u1_(W), r_(W), y_(W), part_(block_tokens * RW), ccq_(p) {}

  // Tokens [seq.t_begin, seq.t_end) of batch row seq.batch at value heads [hv0, hv1), from initial_state(n_in)
  // (or zero) to final_state(n_out) (when given). The heads advance together block by block (point 4 above).
  void run(const arguments<T, S>& a, const sequence& seq, index_t hv0, index_t hv1, index_t n_in, index_t n_out) {
    const index_t G = hv1 - hv0;
    while (static_cast<index_t>(heads_.size()) < G) heads_.emplace_back(p_, Kp_, Vp_);
    for (index_t g = 0; g < G; ++g) {
      const index_t hv = hv0 + g;
      cur_ = &heads_[g];
      std::fill(cur_->state.begin(), cur_->state.end(), R(0));
      if (!a.initial_state.empty()) load_state(a.initial_state, n_in, hv);
      std::fill(cur_->c.begin(), cur_->c.end(), R(1));
      cur_->norm.reset();
      if constexpr (ccq) cur_->reader.load(a, n_in, hv);
      else cur_->reader.begin(a, p_, n_in, hv);
    }

    for (index_t t0 = seq.t_begin; t0 < seq.t_end; t0 += block_tokens) {
      const index_t L = std::min(block_tokens, seq.t_end - t0);
      for (index_t g = 0; g < G; ++g) {
        const index_t hv = hv0 + g;
        cur_ = &heads_[g];
        prepare(a, seq.batch, t0, L, hv);
        for (index_t jt = 0; jt < tiles_; ++jt) {
          if constexpr (erases) run_tile(L, jt);
          else
            for (index_t sub = 0; sub < W / RW; ++sub) run_register_tiles(L, jt, sub);
        }
        if constexpr (computes_o) write_outputs(a, seq.batch, t0, L, hv);
      }
    }

    for (index_t g = 0; g < G; ++g) {
      const index_t hv = hv0 + g;
      cur_ = &heads_[g];
      if (!a.final_state.empty()) store_state(a.final_state, n_out, hv);  // S = Diag(c) S̃
      if constexpr (ccq) cur_->reader.store(a, n_out, hv);
      else cur_->reader.end(a, p_, n_out, hv);
    }
  }

 private:
  // The state is kept in tile order: tile jt holds columns [jt·W, jt·W + W) as a Kp×W block (state_of(jt));
  // padding stays zero.

  // S̃ ← S_0 (c = 1), row by row into the tiles.
  void load_state(const view<const S, 4>& s0, index_t n, index_t hv) {
    const index_t sj = s0.stride(3);
    for (index_t i = 0; i < p_.K; ++i) {
      const S* src = s0.row(n, hv, i);
      for (index_t jt = 0; jt < tiles_; ++jt) {
        R* dst = state_of(jt) + i * W;
        const index_t j0 = jt * W, cols = std::min(W, p_.V - j0);
        for (index_t j = 0; j < cols; ++j) dst[j] = static_cast<R>(src[(j0 + j) * sj]);
      }
    }
  }
  // S = Diag(c) S̃, row by row out of the tiles.
  void store_state(const view<S, 4>& st, index_t n, index_t hv) const {
    const index_t sj = st.stride(3);
    for (index_t i = 0; i < p_.K; ++i) {
      S* dst = st.row(n, hv, i);
      const R ci = cur_->c[i];
      for (index_t jt = 0; jt < tiles_; ++jt) {
        const R* src = state_of(jt) + i * W;
        const index_t j0 = jt * W, cols = std::min(W, p_.V - j0);
        for (index_t j = 0; j < cols; ++j) dst[(j0 + j) * sj] = static_cast<S>(ci * src[j]);
      }
    }
  }

  // One load per cache line of the block's input rows, all independent: the misses overlap (as many as the
  // core tracks) instead of arriving one token at a time in the coefficient loop.
  void touch(const arguments<T, S>& a, index_t bt, index_t t0, index_t L, index_t hv) {
    const index_t h = hv / p_.group;
    unsigned sink = 0;
    auto rows = [&](const auto& x, index_t head) {
      using U = std::remove_cv_t<std::remove_reference_t<decltype(*x.ptr)>>;
      // The row's span: its last element ends at (extent − 1)·stride + 1 (not extent·stride: with a stride > 1
      // that read past the end of the buffer, found by ASan on the fuzz harness's layouts).
      const index_t bytes = ((x.extent(3) - 1) * x.stride(3) + 1) * index_t(sizeof(U));
      for (index_t t = t0; t < t0 + L; ++t) {
        const unsigned char* p = reinterpret_cast<const unsigned char*>(x.row(bt, t, head));
        for (index_t off = 0; off < bytes; off += 64) sink += p[off];
      }
    };
    if constexpr (computes_o) rows(a.q, h);  // (the states alone do not read q)
    rows(a.k, h), rows(a.v, hv);
    if constexpr (reads(Rule::inputs, input::gk)) rows(a.gk, hv);
    if constexpr (reads(Rule::inputs, input::b)) rows(a.b, hv);
    if constexpr (reads(Rule::inputs, input::w)) rows(a.w, hv);
    touched_ += sink;
  }

  R* state_of(index_t jt) const { return cur_->state.data() + jt * Kp_ * W; }

  // Coefficients of tokens [t0, t0 + L): everything that does not depend on the state.
  void prepare(const arguments<T, S>& a, index_t bt, index_t t0, index_t L, index_t hv) {
    const index_t K = p_.K;
    const R scale = R(p_.scale);
    touch(a, bt, t0, L, hv);
    for (index_t l = 0; l < L; ++l) {
      const index_t t = t0 + l;
      // rows padded to Kp / Vp with zeros; q only where something reads it (not the identity read's states alone)
      const token<R> x = load_.template load<computes_o || !Read::is_identity>(a, p_, bt, t, hv);
      const R* const qp = x.q;
      const R* const kp = x.k;

      // Read policy: q̃ (CCQ updates its statistics with this token's key).
      R mean_g = 0;
      if constexpr (!Read::is_identity) mean_g = mean_log_decay<Rule>(x, K);
      const R* qt = x.q;  // identity: x.q itself (padded)
      if constexpr (ccq) ccq_.add(cur_->reader, a, l, bt, t, hv, x, mean_g);  // q̃ after the block's tiles
      else qt = cur_->reader.query(a, p_, bt, t, hv, x, mean_g);

      // Decay: c ← c ⊙ α, or renormalise (multiply the rows out before this token) when c would get small.
      R* f = f_.data() + l * Kp_;
      renorm_[l] = 0;
      if constexpr (Decay::kind != decay_kind::none) {
        if constexpr (Decay::kind == decay_kind::per_key) {
          for (index_t i = 0; i < Kp_; i += Lv::size)  // padding lanes: log α of zero gates
            Lv::store(alpha_.data() + i, Lv::exp(Decay::template log_alpha<Lv>(x, i)));
        } else {
          std::fill(alpha_.begin(), alpha_.end(), std::exp(Decay::log_alpha(x, 0)));
        }
        vec vmin = Lv::splat(R(1));
        for (index_t i = 0; i < Kp_; i += Lv::size) {
          const vec fi = Lv::load(cur_->c.data() + i) * Lv::load(alpha_.data() + i);
          Lv::store(f + i, fi);
          vmin = xsimd_min(vmin, fi);
        }
        const R cmin = Lv::min(vmin);
        if (cmin < renorm_threshold<R> || !(cmin == cmin)) {
          renorm_[l] = 1;
          std::fill(cur_->c.begin(), cur_->c.end(), R(1));
        } else {
          std::copy(f, f + Kp_, cur_->c.begin());
        }
      }

      R* kw = kw_.data() + l * Kp_;
      R* qr = qr_.data() + l * Kp_;
      R* e = e_.data() + l * Kp_;
      const vec vscale = Lv::splat(scale);
      for (index_t i = 0; i < Kp_; i += Lv::size) {
        const vec ci = Lv::load(cur_->c.data() + i), ki = Lv::load(kp + i);
        Lv::store(kw + i, ki / ci);
        if constexpr (Read::is_identity && computes_o) Lv::store(qr + i, vscale * ci * Lv::load(qp + i));
        if constexpr (ccq) Lv::store(qr + i, vscale * ci);  // × q̃ after the block's statistics (below)
      }
      if constexpr (!Read::is_identity && !ccq)  // q̃ has K entries (no padding)
        for (index_t i = 0; i < K; ++i) qr[i] = scale * cur_->c[i] * qt[i];
      if constexpr (erases) {
        for (index_t i = 0; i < Kp_; i += Lv::size)  // e = c ⊙ (b ⊙ k)
          Lv::store(e + i, Lv::load(cur_->c.data() + i) * erase_key<Rule, Lv>(x, i));
        if (l > 0) {  // d_l = e_l · kw_{l-1}: what the write of token l-1 adds to token l's recall, per unit u
          vec acc = Lv::splat(R(0));
          for (index_t i = 0; i < Kp_; i += Lv::size) acc = Lv::fma(Lv::load(e + i), Lv::load(kw - Kp_ + i), acc);
          alignas(64) R part[Lv::size];
          Lv::store(part, acc);
          R dsum = 0;
          for (int q = 0; q < Lv::size; ++q) dsum += part[q];
          d_[l] = dsum;
        }
      }
      R* wv = wv_.data() + l * Vp_;
      for (index_t j = 0; j < Vp_; j += Lv::size) Lv::store(wv + j, write_target<Rule, Lv>(x, j));  // w ⊙ v
      if (computes_o && a.normalize) denom_[l] = cur_->norm.next(qp, kp, scale);  // core/epilogue.hpp
    }
    if constexpr (ccq) {  // the statistics' tiles over the block, then qr = s·c⊙q̃
      ccq_.finish(cur_->reader, a, L, bt, t0, hv);
      for (index_t l = 0; l < L; ++l) {
        R* qr = qr_.data() + l * Kp_;
        const R* qt = ccq_.query(l);
        for (index_t i = 0; i < Kp_; i += Lv::size) Lv::store(qr + i, Lv::load(qr + i) * Lv::load(qt + i));
      }
    }
  }

  static vec xsimd_min(const vec& x, const vec& y) {
    if constexpr (Lv::size == 1) return x < y ? x : y;
    else return xsimd::min(x, y);
  }

  // Tokens [0, L) of the block through value-column tile jt (delta rules): the L1 tile, one fused pass per
  // token, or per two tokens (tile::pair) where no renormalisation intervenes. The pair needs u_{t+1} before
  // the pass: r_{t+1} = S̃_{t-1}ᵀ e_{t+1} + (e_{t+1}·kw_t) u_t, the first term (y) recalled by the pass before.
  void run_tile(index_t L, index_t jt) {
    const index_t K = Kp_, j0 = jt * W;
    R* St = state_of(jt);
    R *u0 = u_.data(), *u1 = u1_.data(), *r = r_.data(), *y = y_.data();
    auto row = [&](std::vector<R>& x, index_t l) { return x.data() + l * K; };
    auto calm = [&](index_t l) { return l >= L || !renorm_[l]; };  // no renormalisation before token l
    bool have_y = L > 1 && calm(1);
    tile_t::begin(St, K, renorm_[0] ? f_.data() : nullptr, e_.data(), r, have_y ? row(e_, 1) : nullptr, y);
    auto make_u = [&](index_t l, R* u, const R* recall) {
      R* wv = wv_.data() + l * Vp_ + j0;
      for (index_t j = 0; j < W; ++j) u[j] = wv[j] - recall[j];
      std::copy(u, u + W, wv);  // keep u_t: the residual output
    };
    for (index_t l = 0; l < L;) {
      R* o = ob_.data() + l * Vp_ + j0;
      if (have_y && l + 1 < L && calm(l + 1) && calm(l + 2)) {
        make_u(l, u0, r);
        for (index_t j = 0; j < W; ++j) y[j] += d_[l + 1] * u0[j];
        make_u(l + 1, u1, y);
        const bool rec = l + 2 < L, rec2 = l + 3 < L;
        const R* e2 = rec ? row(e_, l + 2) : nullptr;
        const R* e3 = rec2 ? row(e_, l + 3) : nullptr;
        R* o1 = o + Vp_;
        if (rec2) tile_t::template pair<true, true, computes_o>(St, K, u0, u1, row(kw_, l), row(qr_, l), row(kw_, l + 1), row(qr_, l + 1), e2, e3, o, o1, r, y);
        else if (rec) tile_t::template pair<true, false, computes_o>(St, K, u0, u1, row(kw_, l), row(qr_, l), row(kw_, l + 1), row(qr_, l + 1), e2, e3, o, o1, r, y);
        else tile_t::template pair<false, false, computes_o>(St, K, u0, u1, row(kw_, l), row(qr_, l), row(kw_, l + 1), row(qr_, l + 1), e2, e3, o, o1, r, y);
        have_y = rec2;
        l += 2;
        continue;
      }
      make_u(l, u0, r);
      const bool next = l + 1 < L, after = l + 2 < L, scale = next && renorm_[l + 1];
      const R* fn = next ? row(f_, l + 1) : nullptr;
      const R* en = next ? row(e_, l + 1) : nullptr;
      const R* ea = after ? row(e_, l + 2) : nullptr;
      const R *kw = row(kw_, l), *qr = row(qr_, l);
      if (!next) tile_t::template token<false, false, false, computes_o>(St, K, u0, kw, qr, fn, en, ea, o, r, y);
      else if (after && scale) tile_t::template token<true, true, true, computes_o>(St, K, u0, kw, qr, fn, en, ea, o, r, y);
      else if (after) tile_t::template token<true, true, false, computes_o>(St, K, u0, kw, qr, fn, en, ea, o, r, y);
      else if (scale) tile_t::template token<true, false, true, computes_o>(St, K, u0, kw, qr, fn, en, ea, o, r, y);
      else tile_t::template token<true, false, false, computes_o>(St, K, u0, kw, qr, fn, en, ea, o, r, y);
      have_y = after;
      l += 1;
    }
  }

  // Tokens [0, L) through register sub-tile `sub` of column tile jt (additive rules), all row tiles.
  void run_register_tiles(index_t L, index_t jt, index_t sub) {
    const index_t j0 = jt * W + sub * RW;
    if (j0 >= p_.V) return;
    R* part = part_.data();
    for (index_t it = 0; it < Kp_ / KR; ++it) {
      R* St = cur_->state.data() + jt * Kp_ * W + it * KR * W + sub * RW;
      reg_t::template run<computes_o>(St, W, L, kw_.data() + it * KR, qr_.data() + it * KR, Kp_, wv_.data() + j0, Vp_,
                                 renorm_.data(), f_.data() + it * KR, Kp_, part, it == 0);
    }
    if constexpr (computes_o)
      for (index_t l = 0; l < L; ++l) std::copy(part + l * RW, part + l * RW + RW, ob_.data() + l * Vp_ + j0);
  }

  // o (and the residual u) of the block's tokens, one full row per token.
  void write_outputs(const arguments<T, S>& a, index_t bt, index_t t0, index_t L, index_t hv) {
    const index_t V = p_.V;
    const bool residual = !a.residual.empty();
    for (index_t l = 0; l < L; ++l) {
      R* o = ob_.data() + l * Vp_;
      if (a.normalize)
        for (index_t j = 0; j < V; ++j) o[j] /= denom_[l];
      store_row(o, a.o.row(bt, t0 + l, hv), a.o.stride(3), V);
      if (residual) store_row(wv_.data() + l * Vp_, a.residual.row(bt, t0 + l, hv), a.residual.stride(3), V);
    }
  }

  problem p_;
  index_t tiles_, Vp_, Kp_;
  head_state* cur_ = nullptr;  // the head being advanced
  std::vector<head_state> heads_;
  std::vector<R> alpha_;
  token_loader<Rule, R> load_;
  std::vector<R> kw_, e_, qr_, f_, wv_, ob_, denom_;
  std::vector<unsigned char> renorm_;
  std::vector<R> d_, u_, u1_, r_, y_, part_;
  ccq_block_t ccq_;  // the CCQ read's block work (an empty stand-in for other reads)
  unsigned touched_ = 0;  // keeps touch()'s loads
};

// The recurrent form over every (sequence, value head), on a.threads threads.
template <class Rule, class Read, class Arch, class T, class S>
void recurrent(const arguments<T, S>& a, const problem& p) {
  using kernel_t = head_kernel<Rule, Read, T, S, Arch>;
  // Items: (sequence, group of value heads). Heads of one sequence go together (memory locality) unless
  // there are fewer sequences than threads; then the heads are split so every thread has work.
  const int threads = thread_count(a.threads, p.N * p.HV);
  const index_t groups = std::min<index_t>(p.HV, (threads + p.N - 1) / p.N);
  const index_t per_group = (p.HV + groups - 1) / groups;
  const index_t items = p.N * groups;
  parallel_items_reusing<kernel_t>(
      items, threads, problem_key(p), [&] { return kernel_t(p); },
      [&](auto& kernel, index_t item) {
        const index_t n = item / groups, g = item % groups;
        const index_t hv0 = g * per_group, hv1 = std::min(p.HV, hv0 + per_group);
        if (hv0 < hv1) kernel.run(a, sequence_of(a, p, n), hv0, hv1, n, n);
      });
}

// The decode step: row b of the batch advances state state_indices[b] (or b) by its one token.
template <class Rule, class Read, class Arch, class T, class S>
void step(const arguments<T, S>& a, const problem& p) {
  using kernel_t = head_kernel<Rule, Read, T, S, Arch>;
  const index_t items = p.B * p.HV;
  const int threads = thread_count(a.threads, items);
  parallel_items_reusing<kernel_t>(
      items, threads, problem_key(p), [&] { return kernel_t(p); },
      [&](auto& kernel, index_t item) {
        const index_t b = item / p.HV, hv = item % p.HV;
        const index_t idx = a.state_indices.empty() ? b : a.state_indices[static_cast<std::size_t>(b)];
        if (idx < 0) {  // a padded row: nothing is read or written (core/epilogue.hpp)
          zero_skipped_row(a, p, b, hv);
          return;
        }
        kernel.run(a, sequence{b, 0, 1}, hv, hv + 1, idx, idx);
      });
}

}  // namespace linea::cpu_backend
LINEA_SIMD_WARNINGS_END
