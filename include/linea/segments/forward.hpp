// linea/segments/forward.hpp — the segmented forward (plan.hpp says the algorithm): long sequences cut into pieces
// that run in parallel, their states combined exactly. Written once over a backend's operations (host_ops.hpp,
// backend/cuda/segments.hpp); the result is the chunkwise form's function, within SPEC §5.
//
// It takes the identity read without `normalize` (the normaliser's z_t and CCQ's statistics are not part of the
// K×V state the combine carries) and no checkpoints; `applies()` says whether a call qualifies. Inputs are seen as
// one packed row: B rows of T tokens become packed sequences when every token view's batch stride is T times its
// token stride (the contiguous layouts, g_gamma's stride 0).
#pragma once
#include <algorithm>
#include <cstdint>
#include <vector>

#include "../core/aliasing.hpp"
#include "../core/arguments.hpp"
#include "../read/identity.hpp"
#include "../rules/write_rule.hpp"
#include "host_ops.hpp"
#include "plan.hpp"

namespace linea::segments {

template <class X, int R>
bool packable(const view<X, R>& v) {
  return v.empty() || v.ext[0] <= 1 || v.str[0] == v.ext[1] * v.str[1];
}
// [B, T, ...] as [1, B·T, ...] (packable views only).
template <class X, int R>
view<X, R> packed(view<X, R> v) {
  if (v.empty()) return v;
  v.ext[1] *= v.ext[0];
  v.ext[0] = 1;
  v.str[0] = v.ext[1] * v.str[1];
  return v;
}
// Tokens [t0, t1) of a packed view.
template <class X, int R>
view<X, R> tokens(view<X, R> v, index_t t0, index_t t1) {
  if (v.empty()) return v;
  v.ptr += t0 * v.str[1];
  v.ext[1] = t1 - t0;
  return v;
}

// Whether the segmented forward can run this (validated) call.
template <class Read, class T, class S>
bool applies(const arguments<T, S>& a) {
  if constexpr (!std::is_same_v<Read, read::identity>) {
    return false;
  } else {
    if (a.normalize || !a.checkpoints.empty() || !a.state_indices.empty()) return false;
    if (linea::detail::bytes_of(a.o).overlaps(linea::detail::bytes_of(a.v))) return false;  // o = v in place: pass A writes o
    if (!a.cu_seqlens.empty()) return true;
    return packable(a.q) && packable(a.k) && packable(a.v) && packable(a.g) && packable(a.gk) && packable(a.beta) &&
           packable(a.b) && packable(a.w) && packable(a.o) && packable(a.residual);
  }
}

// Packed offsets of the call's sequences.
template <class T, class S>
std::vector<std::int64_t> sequence_starts(const arguments<T, S>& a, const problem& p) {
  if (!a.cu_seqlens.empty()) return a.cu_seqlens.to_int64();
  std::vector<std::int64_t> s(static_cast<std::size_t>(p.B) + 1);
  for (index_t b = 0; b <= p.B; ++b) s[b] = b * p.T;
  return s;
}

template <class T, class S>
arguments<T, S> packed_arguments(const arguments<T, S>& a) {
  arguments<T, S> x = a;
  x.q = packed(a.q), x.k = packed(a.k), x.v = packed(a.v), x.g = packed(a.g), x.gk = packed(a.gk);
  x.beta = packed(a.beta), x.b = packed(a.b), x.w = packed(a.w), x.o = packed(a.o), x.residual = packed(a.residual);
  x.cu_seqlens = {};
  return x;
}

// Tokens [t0, t1) of the packed arguments, with no states, residual or sequences of their own.
template <class T, class S>
arguments<T, S> slice(const arguments<T, S>& x, index_t t0, index_t t1) {
  arguments<T, S> s = x;
  s.q = tokens(x.q, t0, t1), s.k = tokens(x.k, t0, t1), s.v = tokens(x.v, t0, t1), s.g = tokens(x.g, t0, t1);
  s.gk = tokens(x.gk, t0, t1), s.beta = tokens(x.beta, t0, t1), s.b = tokens(x.b, t0, t1), s.w = tokens(x.w, t0, t1);
  s.o = tokens(x.o, t0, t1);
  s.residual = {}, s.initial_state = {}, s.final_state = {}, s.cu_seqlens = {};
  return s;
}

template <class S>
view<S, 4> state_rows(S* base, index_t rows, index_t HV, index_t K, index_t cols) {
  return contiguous<4>(base, {rows, HV, K, cols});
}

// Whether Ops runs passes A and M for their final states alone (Ops::states_only_passes; the CUDA backend's chunk
// kernels then skip the query side and o's stores: kernel_args::states_only). Their o is thrown away either way.
template <class Ops>
inline constexpr bool states_only_passes = Ops::states_only_passes;

// The transition pass of `x` (tokens of one or more pieces): the rule with v = 0 and w's columns broadcast, from
// S_0 = I (or 1) written in place into `M` [pieces, HV, K, KM]; its output o goes to `o_scratch` (or nowhere, under
// states_only_passes).
template <class Rule, class Ops, class T, class S>
void transition_pass(Ops& ops, arguments<T, S> x, const T* zeros, view<T, 4> o_scratch, const view<S, 4>& M,
                     std::span<const std::int64_t> cu) {
  const index_t B = x.v.ext[0], L = x.v.ext[1], HV = x.v.ext[2], KM = M.ext[3];
  x.v = strided<4>(zeros, {B, L, HV, KM}, {0, 0, KM, 1});
  if (!x.w.empty()) x.w = strided<4>(x.w.ptr, {B, L, HV, KM}, {x.w.str[0], x.w.str[1], x.w.str[2], 0});
  x.o = o_scratch;
  x.residual = {};
  ops.fill_identity(M);
  x.initial_state = M, x.final_state = M;
  ops.template forward<Rule>(x, cu, states_only_passes<Ops>);
}

// Whether Ops computes pass M of Rule from the summed log decays (Ops::decay_transitions: the CUDA backend, for a
// diagonal transition) instead of the general transition_pass.
template <class Rule, class Ops>
inline constexpr bool sums_decays = diagonal_transition<Rule> && Ops::sums_log_decays;

// Pass M of `x` (tokens of one or more pieces, cut at `cu`, or x's own sequences when cu is empty) into M
// [pieces, HV, K, KM]. `zeros` and `o_scratch` serve the general path only (null / empty under sums_decays).
template <class Rule, class Ops, class T, class S>
void transitions(Ops& ops, const arguments<T, S>& x, const T* zeros, view<T, 4> o_scratch, const view<S, 4>& M,
                 std::span<const std::int64_t> cu) {
  if constexpr (sums_decays<Rule, Ops>) ops.template decay_transitions<Rule>(x, M, cu);
  else transition_pass<Rule>(ops, x, zeros, o_scratch, M, cu);
}

// Whether Ops computes pass A of Rule as a reduction over slabs of the pieces (Ops::reduces_piece_states: the CUDA
// backend, for a rule with no erase — backend/cuda/piece_state_kernel.hpp) instead of the chunkwise form from zero.
template <class Rule, class Ops>
inline constexpr bool reduces_states = !erases<Rule> && Ops::reduces_piece_states;

// Pass A of `pa` (tokens of one or more pieces cut at `cu`): the pieces' final states from zero into pa.final_state;
// where the chunkwise form runs, it runs for final states alone under states_only_passes (o is overwritten by pass C
// either way). Given `M` (a diagonal transition that Ops sums from the log decays), the reduction writes pass M too,
// from the slabs' decay sums: true when it did (the caller then skips pass M).
template <class Rule, class Ops, class T, class S>
bool piece_states(Ops& ops, const arguments<T, S>& pa, std::span<const std::int64_t> cu, const view<S, 4>& M = {}) {
  if constexpr (reduces_states<Rule, Ops>)
    if (ops.template piece_states<Rule>(pa, cu, M)) return !M.empty();  // false: inputs its kernel does not read
  ops.template forward<Rule>(pa, cu, states_only_passes<Ops>);
  return false;
}

// The segmented forward of a validated call `a` (problem p) with plan `pl` (make_plan over sequence_starts).
template <class Rule, class Ops, class T, class S>
void forward(Ops& ops, const arguments<T, S>& a, const problem& p, const plan& pl) {
  const state_dims d{p.HV, p.K, p.V, transition_columns<Rule>(p.K)};
  const arguments<T, S> x = packed_arguments(a);
  const index_t PC = pl.total_pieces();
  S* C = ops.template alloc<S>(static_cast<std::size_t>(PC * d.state()));
  S* Bs = ops.template alloc<S>(static_cast<std::size_t>(pl.rows * d.state()));
  S* Ms = d.KM ? ops.template alloc<S>(static_cast<std::size_t>(pl.rows * d.transition())) : nullptr;
  // The general pass M's v = 0 and, when K ≠ V, its output (none when Ops sums the log decays).
  constexpr bool general_m = !sums_decays<Rule, Ops>;
  const T* zeros = general_m ? ops.template zeros<T>(static_cast<std::size_t>(p.HV * std::max<index_t>(d.KM, 1))) : nullptr;
  index_t longest_run = 0;
  for (const run& r : pl.runs) longest_run = std::max(longest_run, r.t1 - r.t0);
  T* o_m = (general_m && d.KM && d.KM != p.V) ? ops.template alloc<T>(static_cast<std::size_t>(longest_run * p.HV * d.KM))
                                              : nullptr;

  // Passes A and M, one launch each per run.
  for (const run& r : pl.runs) {
    arguments<T, S> pa = slice(x, r.t0, r.t1);
    pa.final_state = state_rows(Bs + r.first_row * d.state(), r.pieces(), p.HV, p.K, p.V);
    const view<S, 4> Mr = d.KM ? state_rows(Ms + r.first_row * d.transition(), r.pieces(), p.HV, p.K, d.KM) : view<S, 4>{};
    const bool m_done = piece_states<Rule>(ops, pa, std::span<const std::int64_t>(r.cu), general_m ? view<S, 4>{} : Mr);
    if (d.KM && !m_done) {
      const view<T, 4> om = o_m ? contiguous<4>(o_m, {1, r.t1 - r.t0, p.HV, d.KM}) : pa.o;
      transitions<Rule>(ops, pa, zeros, om, Mr, r.cu);
    }
  }
  // S_init of every piece: the call's initial states at first pieces, then the chains of the cut sequences.
  const view<S, 4> Cv = state_rows(C, PC, p.HV, p.K, p.V);
  std::vector<std::int32_t> from(static_cast<std::size_t>(PC), -1);
  if (!a.initial_state.empty())
    for (index_t n = 0; n < pl.sequences(); ++n) from[pl.first_piece[n]] = static_cast<std::int32_t>(n);
  ops.copy_states(Cv, a.initial_state, from);
  ops.combine(C, C, Ms, Bs, d, std::span<const chain>(pl.chains));
  // Pass C: every piece from its S_init; final states in place, then the last pieces' to the call's.
  arguments<T, S> pc = x;
  pc.initial_state = Cv;
  pc.final_state = a.final_state.empty() ? view<S, 4>{} : Cv;
  ops.template forward<Rule>(pc, std::span<const std::int64_t>(pl.cu_all));
  if (!a.final_state.empty()) {
    std::vector<std::int32_t> last(static_cast<std::size_t>(pl.sequences()));
    for (index_t n = 0; n < pl.sequences(); ++n) last[n] = static_cast<std::int32_t>(pl.first_piece[n] + pl.pieces[n] - 1);
    ops.copy_states(a.final_state, view<const S, 4>(Cv), last);
  }
}

}  // namespace linea::segments
