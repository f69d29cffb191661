// linea/backend/cuda/backward/phases.hpp — phases 1–4 of the CUDA backward (backward.hpp) as launches on a filled
// `work` (phase 0 done), so that a read can run them more than once: the CCQ read (ccq_read.hpp) runs them for the
// rule with its cleaned queries and for the additive statistics pass C_t = a_t C_{t-1} + k̂ k̂ᵀ.
//   prep_phase     phase 1, per chunk × head: the chunk factors
//   state_phases   phases 2 and 3 (either or both), per sequence × head × value tile: h_c; dh, dU, dS_0
//   grad_phase     phase 4, per chunk × head: dq̂, dk̂, dv, d log α, de (db, dw for GDN-2's channel gates); for
//                  16-bit inputs and scalar decays two launches: inter_grad_kernel (its products over V),
//                  chunk_grad16_kernel (erasing rules: ut_grad_kernel.hpp's two launches between them, the UT
//                  transform's adjoints); it and per_key_grad_kernel can also write the caller's dq, dk, dg / dgk,
//                  dβ themselves (direct_grads.hpp)
// Channels: GDN-2's channel gates (channel_gates.hpp), per-key decays only. Prec: how every product multiplies
// (block_gemm.hpp's precision): chunk_phases and grad_phase take it from the input type (3xTF32 for float32 inputs,
// one TF32 mma for 16-bit ones), prep_phase and state_phases from their caller (3xTF32 unless told). prep_phase's In
// (the input type; chunk_phases passes it): for 16-bit inputs and scalar decays phase 1 is chunk_prep16_kernel
// (bf16 operands on tensor cores, same outputs; Prec unused), else chunk_prep_kernel at Prec. The state passes run
// at Prec for float32 inputs and (by default) per-key decays (at one TF32 mma they measured slower than 3xTF32 on
// the H200, prep13: gated_delta bf16 8×4096 forward 1.640 against 1.443 ms, reverse 1.860 against 1.613); for
// 16-bit inputs with scalar decays (per-key ones too with LINEA_BWD_STATE16_PER_KEY, below) state_phases (In) runs
// state_passes16.hpp's (bf16 operands on m16n8k16, split hi + lo: state14), for the erasing rules' narrow tiles
// (and their reverse pass at every shape) in state_passes16_ring.hpp's two-stage form (st17).
#pragma once
#include "chunk_grad16_kernel.hpp"
#include "chunk_grad_kernel.hpp"
#include "chunk_prep16_kernel.hpp"
#include "chunk_prep_kernel.hpp"
#include "first_chunk_adjoint.hpp"
#include "inter_grad_kernel.hpp"
#include "per_key_grad_kernel.hpp"
#include "per_key_prep_kernel.hpp"
#include "staged_state_passes.hpp"
#include "state_passes16.hpp"
#include "state_passes16_ring.hpp"
#include "ut_grad_kernel.hpp"
#include "../check.hpp"
#include "../kernel_attributes.hpp"

namespace linea::cuda_detail::bwd {

template <bool Erases, bool PerKey, bool Channels = false, precision Prec = precision::tf32x3, class In = float>
void prep_phase(const work& w, cudaStream_t st, const channel_gates& cg = {}) {
  static_assert(PerKey || !Channels, "channel gates have a per-key kernel only");
  if (!w.chunks) return;
  const dim3 grid{unsigned(w.chunks), unsigned(w.HV)};
  if constexpr (PerKey) {
    constexpr auto prep = per_key_prep_kernel<Erases, Channels, Prec>;  // (two CTAs an SM for every rule)
    constexpr std::size_t bytes = per_key_prep_shape<Erases>::bytes;
    allow_dynamic_shared<prep, bytes>();
    prep<<<grid, threads, bytes, st>>>(w, cg);
    check_launch("backward per_key_prep_kernel");
  } else if constexpr (!std::is_same_v<In, float>) {
    constexpr auto prep = chunk_prep16_kernel<Erases>;  // (two CTAs an SM)
    constexpr std::size_t bytes = prep16_shape<Erases>::bytes;
    allow_dynamic_shared<prep, bytes>();
    prep<<<grid, threads, bytes, st>>>(w);
    check_launch("backward chunk_prep16_kernel");
  } else {
    constexpr auto prep = chunk_prep_kernel<Erases, Prec>;
    allow_dynamic_shared<prep, prep_shape<Erases>::bytes>();
    prep<<<grid, threads, prep_shape<Erases>::bytes, st>>>(w);
    check_launch("backward chunk_prep_kernel");
  }
}

// One launch of a state pass (phase 2 or 3): Kernel over (value tiles of Shape::BV columns, value heads, sequences),
// `threads` threads, Shape::bytes of dynamic shared memory; args after w: S0 (forward) or dST, dS0 (reverse).
template <auto Kernel, class Shape, class... Args>
void launch_state_pass(const char* kernel, const work& w, cudaStream_t st, const Args&... args) {
  const dim3 grid{unsigned((w.V + Shape::BV - 1) / Shape::BV), unsigned(w.HV), unsigned(w.N)};
  allow_dynamic_shared<Kernel, Shape::bytes>();
  Kernel<<<grid, threads, Shape::bytes, st>>>(w, args...);
  check_launch(kernel);
}

// The forms of the state passes at BV value columns a CTA: each its forward and reverse kernel and their shape. (The
// kernels as functions: a data member's `auto` initializer would instantiate both directions' kernels wherever one
// is launched, kernels no dispatch runs.)
// staged_state_passes.hpp: float32 operands at Prec (float32 inputs, per-key decays).
template <int BV, bool Erases, bool PerKey, precision Prec>
struct staged_form {
  using shape = staged_shape<BV>;
  static constexpr auto forward() { return staged_forward_states_kernel<BV, Erases, PerKey, Prec>; }
  static constexpr auto reverse() { return staged_reverse_states_kernel<BV, Erases, PerKey, Prec>; }
  static constexpr const char* forward_name = "backward staged_forward_states_kernel";
  static constexpr const char* reverse_name = "backward staged_reverse_states_kernel";
};
// state_passes16.hpp: 16-bit inputs, bf16 operands on m16n8k16, Terms products a step (state14; PerKey: session 13).
template <int BV, bool Erases, int Terms = state16_terms, bool PerKey = false>
struct state16_form {
  using shape = state16_shape<BV, Terms, PerKey>;
  static constexpr auto forward() { return state16_forward_kernel<BV, Erases, Terms, PerKey>; }
  static constexpr auto reverse() { return state16_reverse_kernel<BV, Erases, Terms, PerKey>; }
  static constexpr const char* forward_name = "backward state16_forward_kernel";
  static constexpr const char* reverse_name = "backward state16_reverse_kernel";
};
// state_passes16_ring.hpp: the same for narrow tiles, a chunk's operands a whole chunk ahead in two stages; one CTA
// an SM (st17).
template <int BV, bool Erases, int Terms = state16_terms, bool Lean = true, bool PerKey = false>
struct state16_ring_form {
  using shape = state16_ring_shape<BV, Terms, PerKey>;
  static constexpr auto forward() { return state16_ring_forward_kernel<BV, Erases, Terms, Lean, PerKey>; }
  static constexpr auto reverse() { return state16_ring_reverse_kernel<BV, Erases, Terms, Lean, PerKey>; }
  static constexpr const char* forward_name = "backward state16_ring_forward_kernel";
  static constexpr const char* reverse_name = "backward state16_ring_reverse_kernel";
};

// Phase 2 (h_c, U_new) and phase 3 (dh, dU; dS_0) in one of the forms above.
template <class Form>
void forward_pass(const work& w, const view<const float, 4>& S0, cudaStream_t st) {
  launch_state_pass<Form::forward(), typename Form::shape>(Form::forward_name, w, st, S0);
}
template <class Form>
void reverse_pass(const work& w, const view<const float, 4>& dST, const view<float, 4>& dS0, cudaStream_t st) {
  launch_state_pass<Form::reverse(), typename Form::shape>(Form::reverse_name, w, st, dST, dS0);
}

// Session 13's two dispatch changes (its third, per_key_inter, is work.hpp's), measured on the H200 in session 15
// (bench/cuda/README.md "Session 15"); each can be switched off for an A/B by defining its macro to 0:
//   state16_per_key (LINEA_BWD_STATE16_PER_KEY)  per-key decays (kda, gdn2, gla) with 16-bit inputs on the 16-bit
//                                  passes below (their PerKey form) instead of the 3xTF32 ones
//   state16_ring_adding (LINEA_BWD_STATE16_RING_ADDING)  the rules that only add (gla; the CCQ read's rule pass and
//                                  add16's fallback of linear_attn and simple_gla) on the two-stage ring at narrow
//                                  tiles, as the erasing rules
#ifdef LINEA_BWD_STATE16_PER_KEY
inline constexpr bool state16_per_key = LINEA_BWD_STATE16_PER_KEY;
#else
inline constexpr bool state16_per_key = true;
#endif
#ifdef LINEA_BWD_STATE16_RING_ADDING
inline constexpr bool state16_ring_adding = LINEA_BWD_STATE16_RING_ADDING;
#else
inline constexpr bool state16_ring_adding = true;
#endif

// The state passes for 16-bit inputs (state14: state_passes16.hpp; per-key decays with state16_per_key); float32
// inputs keep the 3xTF32 passes (In = float: every caller that does not name its input type).
template <class In, bool PerKey>
inline constexpr bool state16_for = sizeof(In) == 2 && (!PerKey || state16_per_key);

template <bool Erases, bool PerKey, precision Prec = precision::tf32x3, class In = float>
void state_phases(const work& w, const view<const float, 4>& S0, const view<const float, 4>& dST,
                  const view<float, 4>& dS0, bool forward, bool reverse, cudaStream_t st) {
  if (!w.N) return;
  int device = 0;
  LINEA_CUDA_CHECK(cudaGetDevice(&device));
  const std::size_t sms = std::size_t(multiprocessor_count(device)), heads = std::size_t(w.N) * std::size_t(w.HV);
  // wide tiles (forward 128 value columns: one CTA per (head, sequence); reverse 64, which holds Y in registers)
  // where they leave at most a quarter of the SMs idle, else 16 columns
  const auto wide = [&](index_t bv) { return 4 * heads * std::size_t((w.V + bv - 1) / bv) >= 3 * sms; };
  if constexpr (state16_for<In, PerKey>) {
    // Widths by measurement (state14, H200, bf16, H = 16, K = V = 128; bench/cuda/README.md): one CTA per (head,
    // sequence) where that fills the GPU (8×4096: forward 128 columns 0.913 ms against 64: 1.052; reverse 128 and 64
    // within 2 %, 128 for simple_gla 0.958 against 1.133); else forward 16 (1×32768: 2.06 ms against 32: 2.79) and
    // reverse 32 (3.18 against 16: 3.38; every value tile reads the chunk's whole W and k, so narrower tiles read
    // them more often).
    // st17 (erasing rules; bench/cuda/README.md "st17"): the two-stage passes (state_passes16_ring.hpp) beat the
    // single-stage ones at the same width at every shape measured (gated_delta 1×32768, 16 columns: forward 2.08 →
    // 1.43 ms, reverse 3.39 → 1.76; 8×4096, 32 columns: 1.08 → 0.97, 1.77 → 1.07), so: 16 columns where those CTAs
    // (one an SM) fit in one wave, else 32 — also for the reverse pass where one CTA per (head, sequence) fills the
    // GPU (8×4096: 1.07 against 128 columns' 1.19); the forward keeps its 128 columns there (0.92 against 0.97).
    // The rules that only add (gla; and the CCQ read's rule pass and add16's fallback for linear_attn and
    // simple_gla) keep state14's choice, or with state16_ring_adding take the same two-stage passes where their tiles
    // are narrow (s13: gla 1×32768); where one CTA per (sequence, head) fills the GPU they keep state14's 128 columns
    // in both passes (simple_gla 8×4096 reverse: 0.958 against 64 columns' 1.133 ms).
    constexpr bool ring = Erases || state16_ring_adding;
    const auto one_wave = [&](index_t bv) { return heads * std::size_t((w.V + bv - 1) / bv) <= sms; };
    // The ring's state slabs move as float2 (state_pairs): h and dh must be 8-byte aligned. plan.hpp starts every
    // slot 256 bytes past a 16-byte aligned base, so they always are; a violation is a bug in the workspace's
    // carving (before that invariant, odd tokens · HV left them 4-byte aligned and the ring faulted: fuzz seed
    // 20261220 case 40, seed 20261207 case 1303), reported here rather than as cudaErrorMisalignedAddress.
    if ((reinterpret_cast<std::uintptr_t>(w.h) | reinterpret_cast<std::uintptr_t>(w.dh)) % 8 != 0)
      throw linea::error("cuda backward: internal: the workspace's h and dh slots are not 8-byte aligned (plan.hpp)");
    constexpr int terms = state16_terms;
    if (forward) {
      if (wide(128)) forward_pass<state16_form<128, Erases, terms, PerKey>>(w, S0, st);
      else if constexpr (!ring) forward_pass<state16_form<16, Erases, terms, PerKey>>(w, S0, st);
      else if (one_wave(16)) forward_pass<state16_ring_form<16, Erases, terms, true, PerKey>>(w, S0, st);
      else forward_pass<state16_ring_form<32, Erases, terms, true, PerKey>>(w, S0, st);
    }
    if (reverse) {
      if (!Erases && wide(128)) reverse_pass<state16_form<128, Erases, terms, PerKey>>(w, dST, dS0, st);
      else if constexpr (!ring) reverse_pass<state16_form<32, Erases, terms, PerKey>>(w, dST, dS0, st);
      else if (one_wave(16)) reverse_pass<state16_ring_form<16, Erases, terms, true, PerKey>>(w, dST, dS0, st);
      else reverse_pass<state16_ring_form<32, Erases, terms, true, PerKey>>(w, dST, dS0, st);
    }
  } else {
    if (forward) {
      if (wide(128)) forward_pass<staged_form<128, Erases, PerKey, Prec>>(w, S0, st);
      else forward_pass<staged_form<16, Erases, PerKey, Prec>>(w, S0, st);
    }
    if (reverse) {
      if (wide(64)) reverse_pass<staged_form<64, Erases, PerKey, Prec>>(w, dST, dS0, st);
      else reverse_pass<staged_form<16, Erases, PerKey, Prec>>(w, dST, dS0, st);
    }
  }
  // The erasing rules' dS_0 again, token by token over each sequence's first chunk (kone16: the passes' UT form of
  // the chunk's transition cancels where it is nearly singular; first_chunk_adjoint.hpp)
  if constexpr (Erases && !PerKey)
    if (reverse) first_chunk_adjoint_phase(w, dS0, st);
}

// Phase 4 of scalar decays in two kernels (inter_grad_kernel.hpp) for 16-bit inputs; float32 inputs keep one.
template <class T>
inline constexpr bool inter_grad_for = sizeof(T) == 2;

template <bool Erases, bool Decays, bool PerKey, class T, bool Channels = false, precision Prec = precision_for<T>>
void grad_phase(const work& w, const view<T, 4>& dv, cudaStream_t st, const channel_gates& cg = {},
                const channel_grads<T>& cd = {}, const direct_grads<T>& out = {}) {
  if (!w.chunks) return;
  if (out.on && (Channels || (!PerKey && !inter_grad_for<T>)))
    throw linea::error("cuda backward: internal: direct gradients are written by chunk_grad16_kernel and "
                       "per_key_grad_kernel (without channel gates) only");
  const dim3 grid{unsigned(w.chunks), unsigned(w.HV)};
  if constexpr (PerKey) {
    // with per_key_inter (work.hpp; 16-bit inputs): the products over V in inter_grad_kernel, the UT transform's
    // adjoints in ut_grad_kernel (as the scalar decays', below), then per_key_grad_kernel's Inter form
    constexpr bool inter = per_key_inter && inter_grad_for<T>;
    if constexpr (inter) {
      if (!w.dP_inter || !w.dW_inter || (Erases && (!w.dBv_inter || !w.M_inter)))
        throw linea::error("cuda backward: internal: phase 4's inter-chunk scratch was not carved (plan.hpp)");
      const int key_tiles = int((w.K + inter_shape<inter_terms>::tile - 1) / inter_shape<inter_terms>::tile);
      const std::size_t ctas = std::size_t(w.chunks) * std::size_t(w.HV) * std::size_t(inter_jobs<Erases>(key_tiles));
      inter_grad_kernel<Erases, inter_terms, false, true><<<unsigned(ctas), inter_shape<inter_terms>::threads, 0, st>>>(w);
      check_launch("backward inter_grad_kernel");
      if constexpr (Erases) ut_grad_launch<false>(w, st);  // dBv, dBk, M (undecayed: per_key_grad applies D)
    }
    constexpr auto grad = per_key_grad_kernel<Erases, T, Channels, false, Prec, inter>;
    allow_dynamic_shared<grad, per_key_grad_shape<Erases>::bytes>();
    grad<<<grid, threads, per_key_grad_shape<Erases>::bytes, st>>>(w, dv, cg, cd, out);
    check_launch("backward per_key_grad_kernel");
  } else if constexpr (inter_grad_for<T>) {
    // 16-bit inputs (grad13): the products that contract over V in small CTAs of their own, several an SM
    // (inter_grad_kernel.hpp), then chunk_grad without them. (Compile-time, so that no 16-bit instance of the
    // one-kernel form is built: every 16-bit plan carves the hand-over scratch, plan.hpp.)
    if (!w.dP_inter || (Erases && (!w.dW_inter || !w.dBv_inter || !w.M_inter)))
      throw linea::error("cuda backward: internal: phase 4's inter-chunk scratch was not carved (plan.hpp)");
    const int key_tiles = int((w.K + inter_shape<inter_terms>::tile - 1) / inter_shape<inter_terms>::tile);
    const std::size_t ctas = std::size_t(w.chunks) * std::size_t(w.HV) * std::size_t(inter_jobs<Erases>(key_tiles));
    inter_grad_kernel<Erases, inter_terms, Decays && hdh_in_inter>
        <<<unsigned(ctas), inter_shape<inter_terms>::threads, 0, st>>>(w);
    check_launch("backward inter_grad_kernel");
    if constexpr (Erases) ut_grad_launch<Decays>(w, st);  // dBv, dBk, M (grad13b: ut_grad_kernel.hpp)
    // the rest (intra14): bf16 hi/lo products, two CTAs an SM (chunk_grad16_kernel.hpp)
    constexpr auto grad = chunk_grad16_kernel<Erases, Decays, T>;
    allow_dynamic_shared<grad, grad16_shape::bytes>();
    prefer_max_shared_carveout<grad>();
    grad<<<grid, threads, grad16_shape::bytes, st>>>(w, dv, out);
    check_launch("backward chunk_grad16_kernel");
  } else {
    constexpr auto grad = chunk_grad_kernel<Erases, Decays, T, false, Prec>;  // Wide is unused by the ring kernel
    allow_dynamic_shared<grad, grad_shape<Erases>::bytes>();
    grad<<<grid, threads, grad_shape<Erases>::bytes, st>>>(w, dv);
    check_launch("backward chunk_grad_kernel");
  }
}

// Phases 1–4 of a rule's backward on w: S0, dST, dS0 the initial state, dL/d(final state), dL/d(initial state).
template <bool Erases, bool Decays, bool PerKey, bool Channels = false, class T, precision Prec = precision_for<T>>
void chunk_phases(const work& w, const view<const float, 4>& S0, const view<const float, 4>& dST,
                  const view<float, 4>& dS0, const view<T, 4>& dv, cudaStream_t st, const channel_gates& cg = {},
                  const channel_grads<T>& cd = {}, const direct_grads<T>& out = {}) {
  prep_phase<Erases, PerKey, Channels, Prec, T>(w, st, cg);
  state_phases<Erases, PerKey, Prec, T>(w, S0, dST, dS0, true, true, st);
  // (per-key decays on the 16-bit passes: dS_0 token by token over the first chunk, as state_phases does for scalar
  // decays — here, where the channel gates are known)
  if constexpr (Erases && PerKey && state16_for<T, PerKey>) first_chunk_adjoint_per_key_phase<Channels>(w, dS0, cg, st);
  grad_phase<Erases, Decays, PerKey, T, Channels, Prec>(w, dv, st, cg, cd, out);
}

}  // namespace linea::cuda_detail::bwd
