// linea/backend/cuda/backward/add16_phases.hpp — the backward's fast path for the rules that only add (linear_attn:
// update additive, no decay; simple_gla: a scalar decay) with 16-bit inputs and the identity read (issue #14), in
// place of phases 1–4 (phases.hpp's chunk_phases) between phase 0 (inputs_kernel: q̂, k̂, v, dO, log α as float32)
// and phase 5 (input_adjoint_kernel: group sums, L2 norm, gates), which are unchanged — or, where nothing needs
// phases 0 and 5 (G = 1, no L2 norm, no in-kernel gate, no normalize: add16_io.hpp's add16_direct_ok), in place of
// all six: the kernels then read the caller's q, k, v, dO, g and write its dq, dk, dg directly (io17):
//   forward_states  add16_state_kernel<BV, false>  per (value tile, value head, sequence): h_c as bf16
//                   (BV = 64, 32 or 16 columns; 128 before add18: 64 runs two CTAs an SM)
//   reverse_states  add16_state_kernel<BV, true>   the same, reversed: dH_c as bf16, dS_0
//   grads           add16_grad_kernel              per (chunk, value head): dq̂, dk̂ (per value head), dv, d log α
// On long sequences each state pass runs as three launches over pieces of the sequences (add16_pieces.hpp: an end
// pass, the combine, the full pass), so that the chain of chunk steps a CTA walks is short enough to fill the GPU.
// Without the UT transform, the additive rules need no phase 1 (G, P are formed where they are used) and no fp32
// states: bf16 h, dH are the products' operands anyway (docs/math/backward.md §6, "the additive fast path").
// Selected at compile time in backward.hpp's run (add16_rule), at run time by add16_enabled (the bench's A/B switch).
#pragma once
#include <algorithm>
#include <cstdlib>

#include "../kernel_attributes.hpp"
#include "../check.hpp"
#include "add16_grad_kernel.hpp"
#include "add16_pieces.hpp"

namespace linea::cuda_detail::bwd {

template <class Rule, class T>
inline constexpr bool add16_rule = sizeof(T) == 2 && Rule::update::kind == update_kind::additive &&
                                   Rule::update::inputs == input::none &&
                                   (Rule::decay::kind == decay_kind::none || Rule::decay::kind == decay_kind::scalar);

// false: these rules take phases 1–4 like every other — the A/B switch of issue #14's measurements: the environment
// variable LINEA_BWD_ADD16_OFF (set: false) for whole runs (the suite's before/after errors), bench/cuda/add16_ab.cu
// flips it between calls.
inline bool add16_enabled = std::getenv("LINEA_BWD_ADD16_OFF") == nullptr;
// false: the fast path always goes through phases 0 and 5 (the workspace's float32 inputs and dq, dk), never reads
// and writes the caller's tensors directly (add16_io.hpp) — the A/B switch of io17's measurements: the environment
// variable LINEA_BWD_ADD16_DIRECT_OFF (set: false), or bench/cuda/add16_ab.cu between calls.
inline bool add16_direct_enabled = std::getenv("LINEA_BWD_ADD16_DIRECT_OFF") == nullptr;
// The state passes' value-tile width: 0 (add16_phases' choice), else 64, 32 or 16 columns whatever the shape (the
// suite runs each width on the same shapes).
inline int add16_state_columns = 0;

// One state pass: a CTA row per sequence, or over the pieces (end pass, combine, full pass).
template <int BV, bool Reverse, bool Decays, class X>
void add16_state_launch(const work& w, const add16_io<X>& io, const view<const float, 4>& init,
                        const view<float, 4>& dS0, const add16_states& st, const add16_pieces& pc, cudaStream_t s) {
  const dim3 grid{unsigned((w.V + BV - 1) / BV), unsigned(w.HV), unsigned(pc.piece ? pc.count : w.N)};
  constexpr std::size_t bytes = add16_state_shape<BV>::bytes;
  constexpr auto kernel = add16_state_kernel<BV, Reverse, Decays, X>;
  allow_dynamic_shared<kernel, bytes>();
  if (pc.piece) {
    add16_pieces end = pc;
    end.end_only = true;
    kernel<<<grid, threads, bytes, s>>>(w, io, init, dS0, st, end);
    check_launch(Reverse ? "backward add16_state_kernel (reverse, the pieces' ends)"
                         : "backward add16_state_kernel (forward, the pieces' ends)");
    const unsigned blocks = unsigned(std::min<index_t>((w.K * w.V + threads - 1) / threads, 64));
    add16_combine_kernel<Reverse, Decays><<<dim3{blocks, unsigned(w.HV), unsigned(pc.count)}, threads, 0, s>>>(w, pc, init);
    check_launch("backward add16_combine_kernel");
  }
  kernel<<<grid, threads, bytes, s>>>(w, io, init, dS0, st, pc);
  check_launch(Reverse ? "backward add16_state_kernel (reverse)" : "backward add16_state_kernel (forward)");
}

// Phases 1–4 of linear_attn and simple_gla for 16-bit inputs: io where the inputs are read and dq, dk, d log α
// written (add16_io.hpp: the workspace, or the caller's tensors directly); S0, dST, dS0 the initial state,
// dL/d(final state), dL/d(initial state); dv the caller's.
// pc: the pieces of long sequences (add16_pieces.hpp; add16_plan_pieces made them, backward.hpp's scratch holds
// them), or none.
template <bool Decays, class T, class X>
void add16_phases(const work& w, const add16_io<X>& io, const view<const float, 4>& S0, const view<const float, 4>& dST,
                  const view<float, 4>& dS0, const view<T, 4>& dv, const add16_pieces& pc, cudaStream_t s) {
  if (!w.N) return;
  const add16_states st = add16_states_of(w);
  int device = 0;
  LINEA_CUDA_CHECK(cudaGetDevice(&device));
  // value tiles: 64 columns (two CTAs an SM) where those tiles keep three quarters of the SMs busy, else 32 or 16
  // columns (add16_state_columns, when set, instead); a piece counts as a sequence
  const std::size_t sms = std::size_t(multiprocessor_count(device)),
                    heads = std::size_t(pc.piece ? pc.count : w.N) * std::size_t(w.HV);
  const auto busy = [&](index_t bv) { return 4 * heads * std::size_t((w.V + bv - 1) / bv) >= 3 * sms; };
  const int bv = add16_state_columns ? add16_state_columns : busy(64) ? 64 : busy(32) ? 32 : 16;
  if (bv == 64) {
    add16_state_launch<64, false, Decays>(w, io, S0, {}, st, pc, s);
    add16_state_launch<64, true, Decays>(w, io, dST, dS0, st, pc, s);
  } else if (bv == 32) {
    add16_state_launch<32, false, Decays>(w, io, S0, {}, st, pc, s);
    add16_state_launch<32, true, Decays>(w, io, dST, dS0, st, pc, s);
  } else {
    add16_state_launch<16, false, Decays>(w, io, S0, {}, st, pc, s);
    add16_state_launch<16, true, Decays>(w, io, dST, dS0, st, pc, s);
  }
  if (!w.chunks) return;
  constexpr auto grad = add16_grad_kernel<Decays, T, X>;
  allow_dynamic_shared<grad, add16_grad_shape::bytes>();
  grad<<<dim3{unsigned(w.chunks), unsigned(w.HV)}, threads, add16_grad_shape::bytes, s>>>(w, io, st, dv);
  check_launch("backward add16_grad_kernel");
}

}  // namespace linea::cuda_detail::bwd
