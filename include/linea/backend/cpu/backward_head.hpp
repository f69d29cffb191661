// linea/backend/cpu/backward_head.hpp — the CPU backward of one (sequence, key head): every value head of its
// group, chunk by chunk in reverse, from states stored at chunk boundaries only (docs/math/backward.md §7).
//
// Per value head hv, with C = arguments::chunk_size:
//   1. checkpoints  the forward recurrence over the sequence (the recurrent form's kernel, chunk to chunk),
//                   keeping S (and the read's statistics, and the normaliser's key sum) at the start of every
//                   chunk: ⌈L/C⌉·K·V values;
//   2. per chunk, last first:
//      prepare      the chunk's tokens once: per-token coefficients of the passes below, and the read's q̃_t (its
//                   tape, restarted from the chunk's statistics: ccq_tape.hpp for CCQ, the reference's otherwise);
//      tiles        one column tile of the state at a time (backward_tile.hpp): recompute the tile of
//                   S_{t0} … S_{t0+L} from the boundary state ((C+1)·K·16 scratch; K·16, in place, for a rule
//                   with neither erase nor decay), then t = last … first the reference backward's four steps
//                   (read, write, correct, decay) on the tile of dS = dL/dS_t (carried across chunks), adding the
//                   tile's part of every row dot product to per-token sums;
//      gradients    t = last … first: the policies' adjoint hooks turn (dq̃, d log α, de, dw) into the rule's
//                   and the read's input gradients.
// The value heads of a group add their dq̂, dk̂ (of the L2-normalised q, k) in the item's buffers; dq, dk are
// stored once at the end (through the L2 norm's adjoint), so no other item writes them. Everything is computed in
// the state type (float32, or float64 for float64 inputs); sums over tokens of several items (dA_log, ddt_bias,
// g_gamma's dg) go to backward_sums in float64.
#pragma once
#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include "../isa.hpp"
#include "../../chunk/flush_denormals.hpp"
#include "../../core/epilogue.hpp"
#include "../../core/gradients.hpp"
#include "../../core/load.hpp"
#include "../../reference/input_adjoints.hpp"
#include "../../reference/read_adjoint.hpp"
#include "../../reference/rule_adjoint.hpp"
#include "backward_sums.hpp"
#include "backward_tile.hpp"
#include "page_allocator.hpp"
#include "ccq_tape.hpp"
#include "recurrent.hpp"

namespace linea::cpu_backend::inline LINEA_ISA {

template <class Rule, class Read, class T, class S, class Arch>
class backward_head {
  using R = S;  // compute type: the state type
  using Decay = typename Rule::decay;
  using Update = typename Rule::update;
  using tile = backward_tile<R, Arch>;
  using Lv = lanes<R, Arch>;
  // The read's tape runs in float64 whatever R is: CCQ's Σ = C/z − μμᵀ cancels to O(a_t) under strong decays
  // (a_t = e^−10: float32 keeps ~3 digits of Σ, and dλ = −dq̃·Σq inherits that), and it costs O(K²) per token
  // next to the rule's O(K·V). CCQ's tape is the vectorised one of ccq_tape.hpp, every other read the reference's.
  using tape_t = typename read_tape_of<Read, Arch>::type;
  using forward_t = head_kernel<Rule, read::identity, T, S, Arch, true>;  // the checkpoint pass: states only
  static constexpr bool erases = linea::erases<Rule>;
  static constexpr bool decays = Decay::kind != decay_kind::none;
  // Whether the tile passes keep the chunk's states (an erase or a decay pass reads them; backward_tile.hpp).
  static constexpr bool keeps_states = tile::template keeps_states<erases, decays>;

 public:
  backward_head(const problem& p, index_t C)
      : p_(p), C_(C), Vp_(round_up(p.V, tile::width)), KV_(p.K * Vp_), Kp_(round_up(p.K, tile::width)),
        Vt_(round_up(p.V, tile::columns)), load_(p, Kp_, Vt_), tape_(p),
        store_(page_aligned((keeps_states ? C + 1 : 1) * tile::columns * Kp_)), dS_(page_aligned(Vt_ * Kp_)),
        al_c_(sized(C * Kp_)), k_c_(al_c_), eki_c_(al_c_), cu_c_(al_c_), cq_c_(al_c_),
        st_dr_(al_c_), ds_u_(al_c_), sp_du_(al_c_), ds_sp_(al_c_), w_c_(sized(C * Vt_)), dr_c_(w_c_), u_c_(w_c_),
        du_c_(w_c_), den_(sized(C)), dla_(p.K), de_(p.K), dw_(p.V), dv_(p.V), dz_(p.K), raw_(p.K),
        dx_(p.K), qd_(p.K), kd_(p.K), dqt_(p.K), dq_(p.K), dk_(p.K), grads_(p.K, p.V) {
    // The tape's per-step record, for the longest chunk at once (backward.hpp has capped C at the longest sequence).
    if constexpr (requires { tape_.reserve_steps(C); }) tape_.reserve_steps(C);
  }

  // Sequence `seq` (index n) at key head h: every value head of the group, then dq, dk of the group.
  void run(const arguments<T, S>& a, const gradients<T, S>& g, const sequence& seq, index_t n, index_t h,
           backward_sums& sums) {
    const chunk::flush_denormals ftz;  // values below 1e-38 (strong decays) would take x86's slow path
    const index_t L = seq.length(), K = p_.K;
    dqh_.assign(static_cast<std::size_t>(L * K), R(0));
    dkh_.assign(static_cast<std::size_t>(L * K), R(0));
    for (index_t hv = h * p_.group; hv < (h + 1) * p_.group; ++hv) value_head(a, g, seq, n, hv, sums);
    store_qk(a, g, seq, h);
  }

 private:
  // Entry (i, j) of dS_: tile j / columns, in the tile's layout (backward_tile.hpp).
  index_t dS_at(index_t i, index_t j) const {
    return j / tile::columns * tile::columns * Kp_ + tile::at(i, j % tile::columns);
  }
  static index_t round_up(index_t n, index_t m) { return (n + m - 1) / m * m; }
  static std::vector<R> sized(index_t n) { return std::vector<R>(static_cast<std::size_t>(n), R(0)); }
  // The tile passes load S and load and store dS column by column. Where a store's address matches a later load's
  // in its low 12 bits (4 KiB aliasing), the core holds the load back: with the two buffers wherever the heap put
  // them, some placements did that on every column (the same binary ran ±10 % apart). Both start on a page, so
  // where a tile is a whole number of pages (columns · Kp · sizeof(R) a multiple of 4 KiB: float32 with K = 64 or
  // 128) dS's entry (i, j) shares its page offset with S's (i, j), a column already loaded.
  using page_vector = std::vector<R, page_allocator<R>>;
  static page_vector page_aligned(index_t n) { return page_vector(static_cast<std::size_t>(n), R(0)); }

  void value_head(const arguments<T, S>& a, const gradients<T, S>& g, const sequence& seq, index_t n, index_t hv,
                  backward_sums& sums) {
    const index_t K = p_.K, V = p_.V, chunks = (seq.length() + C_ - 1) / C_;
    checkpoints(a, seq, n, hv, chunks);
    std::fill(dS_.begin(), dS_.end(), R(0));
    if (!g.d_final_state.empty())
      for (index_t i = 0; i < K; ++i)
        for (index_t j = 0; j < V; ++j) dS_[dS_at(i, j)] = R(g.d_final_state(n, hv, i, j));
    std::fill(dz_.begin(), dz_.end(), R(0));
    for (index_t c = chunks - 1; c >= 0; --c) {
      const index_t t0 = seq.t_begin + c * C_, len = std::min(C_, seq.t_end - t0);
      prepare(a, g, seq.batch, t0, len, hv, c);
      tiles(len, c);
      for (index_t r = len - 1; r >= 0; --r) token_gradients(a, g, seq, n, hv, t0, r, sums);
    }
    if (!g.d_initial_state.empty())
      for (index_t i = 0; i < K; ++i)
        for (index_t j = 0; j < V; ++j) g.d_initial_state(n, hv, i, j) = S(dS_[dS_at(i, j)]);
    tape_.end(sums, n, hv);
  }

  // 1. The forward over the whole sequence, keeping the chunk-boundary states, statistics and key sums. The
  //    states come from the recurrent form's kernel (backend/cpu/recurrent.hpp: deferred decay, register or L1
  //    tiles), run chunk by chunk from one boundary state to the next with its outputs thrown away; it is ~3×
  //    faster than row passes over the whole state per token, and the state does not depend on the read. The read's statistics
  //    and the normaliser's key sums need the tokens themselves: only then is each token loaded here.
  void checkpoints(const arguments<T, S>& a, const sequence& seq, index_t n, index_t hv, index_t chunks) {
    const index_t K = p_.K, V = p_.V;
    boundary_.assign(static_cast<std::size_t>(std::max<index_t>(chunks, 1) * KV_), R(0));
    stats_.clear();
    zb_.assign(static_cast<std::size_t>(std::max<index_t>(chunks, 1) * K), R(0));
    if (!a.initial_state.empty())
      for (index_t i = 0; i < K; ++i)
        for (index_t j = 0; j < V; ++j) boundary_[i * Vp_ + j] = R(a.initial_state(n, hv, i, j));
    if (!forward_) forward_ = std::make_unique<forward_t>(p_);
    arguments<T, S> fa = a;  // the same inputs; the state from and to boundary slots, the outputs discarded
    fa.residual = {};
    fa.o = discard_view();
    tape_.begin(a, p_, n, hv);
    std::vector<R> z(static_cast<std::size_t>(K), R(0));
    const bool tokens = !Read::is_identity || a.normalize;
    for (index_t c = 0; c < chunks; ++c) {
      stats_.push_back(tape_.save());
      tape_.restart(stats_.back());  // drops the previous chunk's per-token record
      std::copy(z.begin(), z.end(), zb_.begin() + c * K);
      const index_t t0 = seq.t_begin + c * C_, len = std::min(C_, seq.t_end - t0);
      if (c + 1 < chunks) {  // S at the start of chunk c + 1
        fa.initial_state = boundary_view(c);
        fa.final_state = boundary_view(c + 1);
        forward_->run(fa, sequence{seq.batch, t0, t0 + len}, hv, hv + 1, n, n);
      }
      if (!tokens) continue;
      for (index_t t = t0; t < t0 + len; ++t) {
        const token<R> x = load_.load(a, p_, seq.batch, t, hv);
        const double c_rule = double(mean_log_decay<Rule>(x, K));
        if constexpr (requires { tape_.advance(a, seq.batch, t, hv, wide(x), c_rule); })
          tape_.advance(a, seq.batch, t, hv, wide(x), c_rule);  // the statistics only: no y, no per-step record
        else
          tape_.forward(a, seq.batch, t, hv, wide(x), c_rule);
        if (a.normalize)
          for (index_t i = 0; i < K; ++i) z[i] += x.k[i];
      }
    }
  }

  // The two views below fill extents and strides in place rather than calling core/view.hpp's strided<4>, a
  // template outside the ISA inline namespace. (tests/backend/isa's isa_shared_symbols check allows strided< now,
  // as argument plumbing like contiguous<, because reference::validate_backward calls it.)
  // Boundary slot c as a state view: every (n, hv) maps to it (stride 0), rows of Vp entries.
  view<R, 4> boundary_view(index_t c) {
    view<R, 4> v;
    v.ptr = boundary_.data() + c * KV_;
    const index_t ext[4] = {p_.N, p_.HV, p_.K, p_.V}, str[4] = {0, 0, Vp_, 1};
    for (int r = 0; r < 4; ++r) v.ext[r] = ext[r], v.str[r] = str[r];
    return v;
  }
  // An output view whose every row is one scratch row: the checkpoint pass's outputs are not needed.
  view<T, 4> discard_view() {
    discard_.assign(static_cast<std::size_t>(p_.V), T{});
    view<T, 4> v;
    v.ptr = discard_.data();
    const index_t ext[4] = {p_.B, p_.T, p_.HV, p_.V}, str[4] = {0, 0, 0, 1};
    for (int r = 0; r < 4; ++r) v.ext[r] = ext[r], v.str[r] = str[r];
    return v;
  }

  // The token's q and k in float64, for the read's tape (which reads nothing else of it).
  token<double> wide(const token<R>& x) {
    for (index_t i = 0; i < p_.K; ++i) qd_[i] = double(x.q[i]), kd_[i] = double(x.k[i]);
    token<double> xd;
    xd.q = qd_.data(), xd.k = kd_.data();
    return xd;
  }

  // Per-token arrays of the chunk: rows (Kp entries, zero past K) and columns (Vt entries, zero past V).
  R* rows_of(std::vector<R>& v, index_t r) { return v.data() + r * Kp_; }
  R* columns_of(std::vector<R>& v, index_t r) { return v.data() + r * Vt_; }

  // 2a. The chunk's tokens, once: the coefficients of the recompute and of the adjoint passes (α, k, e ⊙ k,
  //     α ⊙ erase key, s q̃ per row; the write target and dr = d_o (/ den) per column), the read's q̃ (its tape
  //     restarted from the chunk's statistics), and the normaliser's key sums and divisors. Zeroes the chunk's
  //     sums of the row dot products.
  void prepare(const arguments<T, S>& a, const gradients<T, S>& g, index_t bt, index_t t0, index_t len, index_t hv,
               index_t c) {
    const index_t K = p_.K, V = p_.V;
    const R scale = R(p_.scale);
    tape_.restart(stats_[static_cast<std::size_t>(c)]);
    zs_.assign(static_cast<std::size_t>((len + 1) * K), R(0));
    std::copy(zb_.begin() + c * K, zb_.begin() + (c + 1) * K, zs_.begin());
    for (auto* v : {&st_dr_, &ds_u_, &sp_du_, &ds_sp_}) std::fill(v->begin(), v->begin() + len * Kp_, R(0));
    const auto vscale = Lv::splat(scale);
    for (index_t r = 0; r < len; ++r) {
      const index_t t = t0 + r;
      const token<R> x = load_.load(a, p_, bt, t, hv);  // rows padded with zeros to Kp, Vt
      typename Lv::type scalar_alpha = Lv::splat(R(1));  // a scalar decay's α, once per token
      if constexpr (Decay::kind == decay_kind::scalar) scalar_alpha = Lv::splat(std::exp(Decay::log_alpha(x, 0)));
      // Rows over the padded length Kp (padding lanes: α = 1 for a per-key decay, of gk's zero padding, e^g for a
      // scalar one; k = e ⊙ k = erase key = q = 0, so the tiles' zero rows stay zero); columns over Vt.
      R *al = rows_of(al_c_, r), *k = rows_of(k_c_, r), *eki = rows_of(eki_c_, r), *cu = rows_of(cu_c_, r);
      for (index_t i = 0; i < Kp_; i += Lv::size) {
        typename Lv::type alpha = scalar_alpha;
        if constexpr (Decay::kind == decay_kind::per_key) alpha = Lv::exp(Decay::template log_alpha<Lv>(x, i));
        Lv::store(al + i, alpha);
        Lv::store(k + i, Lv::load(x.k + i));
        if constexpr (erases) {
          Lv::store(eki + i, Update::template erase_gate<Lv>(x, i) * Lv::load(x.k + i));
          Lv::store(cu + i, alpha * erase_key<Rule, Lv>(x, i));
        }
      }
      R* w = columns_of(w_c_, r);
      for (index_t j = 0; j < Vt_; j += Lv::size) Lv::store(w + j, write_target<Rule, Lv>(x, j));
      R* cq = rows_of(cq_c_, r);
      if constexpr (Read::is_identity) {  // q̃ = q: no tape, no float64 copy
        for (index_t i = 0; i < Kp_; i += Lv::size) Lv::store(cq + i, vscale * Lv::load(x.q + i));
      } else {
        const token<double> xd = wide(x);
        tape_.forward(a, bt, t, hv, xd, double(mean_log_decay<Rule>(x, K)));
        const double* qt = tape_.q_tilde(r, xd);
        for (index_t i = 0; i < K; ++i) cq[i] = scale * R(qt[i]);
      }
      R* dr = columns_of(dr_c_, r);
      load_row(g.d_o.row(bt, t, hv), g.d_o.stride(3), dr, V);
      if (a.normalize) {  // o = r / den, den = s q·z_t + 1e-10: the passes see dr / den
        R den = 0;
        for (index_t i = 0; i < K; ++i) {
          zs_[(r + 1) * K + i] = zs_[r * K + i] + x.k[i];
          den += scale * x.q[i] * zs_[(r + 1) * K + i];
        }
        den_[r] = normaliser_divisor(den);
        for (index_t j = 0; j < V; ++j) dr[j] /= den_[r];
      }
    }
  }

  // 2b. Every column tile of the chunk: the tile of S_{t0} from the boundary, the recompute of the tile's
  //     S_{t0} … S_{t0+len} (and of the reads' S_t dr), then the adjoint from t0+len−1 down to t0 with dS's tile in
  //     place (dS_ holds dL/dS_{t0+len} on entry and dL/dS_{t0−1} on exit, transposed); the rows' dot products add
  //     up over tiles.
  void tiles(index_t len, index_t c) {
    constexpr bool B = keeps_states;  // else correct/decay leaves dS as it is, and reads no state
    const index_t K = p_.K, V = p_.V, TK = tile::columns * Kp_;
    // The tile's S_{t0+r} at state(r); without kept states only the recompute reads them (and sums the reads'
    // S_t dr): one slot, updated in place.
    const auto state = [&](index_t r) { return store_.data() + (keeps_states ? r : 0) * TK; };
    const R* boundary = boundary_.data() + c * KV_;
    for (index_t j0 = 0; j0 < Vt_; j0 += tile::columns) {
      for (index_t i = 0; i < Kp_; ++i)  // a boundary row is contiguous: read it in order
        for (index_t j = 0; j < tile::columns; ++j)
          store_[tile::at(i, j)] = i < K && j0 + j < V ? boundary[i * Vp_ + j0 + j] : R(0);
      for (index_t r = 0; r < len; ++r)
        tile::template recompute<erases, decays>(state(r), state(r + 1), rows_of(al_c_, r), rows_of(k_c_, r),
                                         rows_of(cu_c_, r), columns_of(w_c_, r) + j0, columns_of(u_c_, r) + j0,
                                         columns_of(dr_c_, r) + j0, rows_of(st_dr_, r), Kp_);
      R* dS = dS_.data() + j0 * Kp_;
      const auto read_write = [&](index_t r) {
        return typename tile::read_write{rows_of(cq_c_, r),      rows_of(k_c_, r),  columns_of(dr_c_, r) + j0,
                                         columns_of(u_c_, r) + j0, rows_of(st_dr_, r), rows_of(ds_u_, r),
                                         columns_of(du_c_, r) + j0};
      };
      const auto correct_decay = [&](index_t r) {
        return typename tile::correct_decay{rows_of(eki_c_, r), rows_of(al_c_, r), columns_of(du_c_, r) + j0,
                                            rows_of(sp_du_, r), rows_of(ds_sp_, r)};
      };
      tile::template adjoint<true, false, erases, decays>(state(len), dS, Kp_, read_write(len - 1), {});
      for (index_t r = len - 1; r >= 1; --r)  // token r's correct/decay and token r−1's read/write, both on S_{t0+r}
        tile::template adjoint<true, B, erases, decays>(state(r), dS, Kp_, read_write(r - 1), correct_decay(r));
      if constexpr (B) tile::template adjoint<false, true, erases, decays>(state(0), dS, Kp_, {}, correct_decay(0));
    }
  }

  // 2c. Token t = t0 + r, after every tile: the rows' dot products and du become the gradients of the read, the
  //     normaliser, the rule's policies, and the token's inputs.
  void token_gradients(const arguments<T, S>& a, const gradients<T, S>& g, const sequence& seq, index_t n,
                       index_t hv, index_t t0, index_t r, backward_sums& sums) {
    const index_t K = p_.K, V = p_.V, bt = seq.batch, t = t0 + r;
    const R scale = R(p_.scale);
    const token<R> x = load_.load(a, p_, bt, t, hv);
    const R *st_dr = rows_of(st_dr_, r), *ds_u = rows_of(ds_u_, r), *du = columns_of(du_c_, r);
    std::fill(dq_.begin(), dq_.end(), 0.0);
    std::fill(dla_.begin(), dla_.end(), R(0));
    if (a.normalize) {  // dden = −(dr·o)/den² with o = S_tᵀ(s q̃) (raw dr), i.e. −Σ_i (s q̃_i)(S_t dr/den)_i / den
      const R* z = zs_.data() + (r + 1) * K;
      const R* cq = rows_of(cq_c_, r);
      R o_dr = 0;
      for (index_t i = 0; i < K; ++i) o_dr += cq[i] * st_dr[i];
      const R dden = -o_dr / den_[r];
      for (index_t i = 0; i < K; ++i) {
        dq_[i] += scale * z[i] * dden;
        dz_[i] += scale * x.q[i] * dden;
      }
    }
    // read o = S_tᵀ(s q̃) and write S_t = S' + k uᵀ: dq̃ = s S_t dr, dk += dS u.
    for (index_t i = 0; i < K; ++i) dqt_[i] = double(scale * st_dr[i]), dk_[i] = double(ds_u[i]);
    // The read policy: dq̃ → dq, dk, its own gradients, and d c_t of the rule's mean log decay (CCQ decayed).
    if constexpr (Read::is_identity) {  // q̃ = q
      for (index_t i = 0; i < K; ++i) dq_[i] += dqt_[i];
    } else {
      const token<double> xd = wide(x);
      const R dc = R(tape_.backward(a, sums, bt, t, hv, r, xd, double(mean_log_decay<Rule>(x, K)), dqt_.data(),
                                    dq_.data(), dk_.data()));
      if (dc != R(0))
        for (index_t i = 0; i < K; ++i) dla_[i] += dc / R(K);
    }
    if (a.normalize)
      for (index_t i = 0; i < K; ++i) dk_[i] += dz_[i];  // z_t = z_{t−1} + k_t

    // correct u = w ⊙ v − S'ᵀ(e ⊙ k) and decay S' = Diag(α) S_{t−1}.
    for (index_t j = 0; j < V; ++j) {
      dw_[j] = du[j] * x.v[j];
      dv_[j] = Update::write_gate(x, j) * du[j];
    }
    const R* al = rows_of(al_c_, r);
    if constexpr (erases) {
      const R* sp_du = rows_of(sp_du_, r);
      for (index_t i = 0; i < K; ++i) {
        const R recall = al[i] * sp_du[i];  // (S' du)_i
        de_[i] = -x.k[i] * recall;
        dk_[i] -= Update::erase_gate(x, i) * recall;
      }
    }
    if constexpr (decays) {
      const R* ds_sp = rows_of(ds_sp_, r);
      for (index_t i = 0; i < K; ++i) dla_[i] += al[i] * ds_sp[i];  // Σ_j dS'_ij S'_ij
    }
    reference::rule_adjoint<Rule>(dla_.data(), de_.data(), dw_.data(), K, V, grads_);

    const index_t s = t - seq.t_begin;
    for (index_t i = 0; i < K; ++i) dqh_[s * K + i] += R(dq_[i]), dkh_[s * K + i] += R(dk_[i]);
    store_token(a, g, bt, t, n, hv, sums);
  }

  // The token's gradients of the raw inputs (gates through their activations) into g, or into the sums.
  void store_token(const arguments<T, S>& a, const gradients<T, S>& g, index_t bt, index_t t, index_t n, index_t hv,
                   backward_sums& sums) {
    const index_t K = p_.K, V = p_.V;
    if (!g.dv.empty()) store_row(dv_.data(), g.dv.row(bt, t, hv), g.dv.stride(3), V);
    const bool bound = a.gate.lower_bound.has_value();
    const R lb = bound ? R(*a.gate.lower_bound) : R(0);
    const auto gate = [&](R d, const auto& raw_logit, index_t bias_at) -> R {
      if (!a.gate.active()) return d;
      const R bias = a.gate.dt_bias.empty() ? R(0) : R(a.gate.dt_bias(bias_at));
      const auto pd = reference::activate_gate_partials(load_as<R>(raw_logit), R(a.gate.A_log(hv)), bias, bound, lb);
      sums.dA_log(n, hv) += double(d * pd.dA_log);
      if (!a.gate.dt_bias.empty()) sums.ddt_bias(n, bias_at) += double(d * pd.ddt_bias);
      return d * pd.dx;
    };
    if constexpr (reads(Rule::inputs, input::g)) {
      const R d = gate(grads_.dg, a.g(bt, t, hv), hv);
      if (!g.dg.empty()) sums.dg(bt, t, hv) = d;
    }
    if constexpr (reads(Rule::inputs, input::gk))
      for (index_t i = 0; i < K; ++i) {
        const R d = gate(grads_.dgk[i], a.gk(bt, t, hv, i), hv * K + i);
        if (!g.dgk.empty()) g.dgk(bt, t, hv, i) = store_as<T>(d);
      }
    if constexpr (reads(Rule::inputs, input::beta))
      if (!g.dbeta.empty())
        sums.dbeta(bt, t, hv) = grads_.dbeta * reference::beta_activation_derivative(load_as<R>(a.beta(bt, t, hv)), a.beta_act);
    if constexpr (reads(Rule::inputs, input::b))
      if (!g.db.empty())
        for (index_t i = 0; i < K; ++i) g.db(bt, t, hv, i) = store_as<T>(grads_.db[i]);
    if constexpr (reads(Rule::inputs, input::w))
      if (!g.dw.empty())
        for (index_t j = 0; j < V; ++j) g.dw(bt, t, hv, j) = store_as<T>(grads_.dw[j]);
  }

  // dq, dk of the group, through the in-kernel L2 norm's adjoint (linear: the heads' sum first) when it is on.
  void store_qk(const arguments<T, S>& a, const gradients<T, S>& g, const sequence& seq, index_t h) {
    const index_t K = p_.K;
    const auto store = [&](const view<const T, 4>& x, const std::vector<R>& d_hat, const view<T, 4>& out) {
      if (out.empty()) return;
      for (index_t t = seq.t_begin; t < seq.t_end; ++t) {
        const R* d = d_hat.data() + (t - seq.t_begin) * K;
        if (a.qk_l2norm) {
          for (index_t i = 0; i < K; ++i) raw_[i] = load_as<R>(x(seq.batch, t, h, i)), dx_[i] = 0;
          reference::l2_normalize_adjoint(raw_.data(), d, K, dx_.data());
          d = dx_.data();
        }
        store_row(d, out.row(seq.batch, t, h), out.stride(3), K);
      }
    };
    store(a.q, dqh_, g.dq);
    store(a.k, dkh_, g.dk);
  }

  problem p_;
  index_t C_, Vp_, KV_;  // chunk size, padded V, padded state size K·Vp (boundary states: rows of Vp)
  index_t Kp_, Vt_;      // K padded to the lane count, V padded to the tile width (tiles: columns of Kp)
  token_loader<Rule, R> load_;
  tape_t tape_;
  std::vector<R> boundary_;                      // S at every chunk start [chunks, K, Vp]
  std::vector<typename tape_t::checkpoint> stats_;  // the read's statistics at every chunk start
  std::vector<R> zb_, zs_;                       // normaliser key sums: at chunk starts; within the chunk
  page_vector store_;  // one tile of S_{t0} … S_{t0+len} [len+1, columns · Kp] (one slot without erase and decay)
  page_vector dS_;                               // dL/dS, tile after tile [Vt / columns, columns · Kp]
  // The chunk's tokens: row coefficients α, k, e ⊙ k, α ⊙ erase key, s q̃ and the rows' dot products summed over
  // tiles (S_t·dr, dS_t·u, S_{t−1}·du, dS'·S_{t−1}) [C, Kp]; columns w (write target), dr, u, du [C, Vt];
  // the normaliser's divisors [C].
  std::vector<R> al_c_, k_c_, eki_c_, cu_c_, cq_c_, st_dr_, ds_u_, sp_du_, ds_sp_, w_c_, dr_c_, u_c_, du_c_, den_;
  std::vector<R> dla_, de_, dw_, dv_, dz_, raw_, dx_;
  std::vector<double> qd_, kd_, dqt_, dq_, dk_;  // the token's q, k for the tape; dq̃, dq̂, dk̂
  std::vector<R> dqh_, dkh_;                     // the group's dq̂, dk̂ over the sequence [L, K]
  reference::rule_input_gradients<R> grads_;
  std::unique_ptr<forward_t> forward_;  // made on first use (it holds ~0.5 MiB of block buffers)
  std::vector<T> discard_;
};

}  // namespace linea::cpu_backend
