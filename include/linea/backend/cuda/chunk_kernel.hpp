// linea/backend/cuda/chunk_kernel.hpp — the chunkwise forward (SPEC §4) on tensor cores, the general kernel: every
// rule, read, input type and layout. (The scalar-decay rules and gla, with 16-bit, aligned inputs, take the
// 64-token kernels instead: scalar_chunk_kernel.hpp, delta_pipeline_kernel.hpp, perkey_chunk_kernel.hpp; launch.hpp
// chooses.)
//
// One CTA per (sequence, value head, tile of VP value columns: 64 when two CTAs fit an SM, else 128), 8 warps;
// the K×VP state tile lives in registers for the whole sequence (fp32 mma accumulators: warp w owns key rows
// 16w..16w+15). Per chunk of CL tokens (chunk_phases/layout.hpp: the tiles), with G_r the in-chunk cumulative
// log decay of row r (base 2, scalar or per key channel), Γ = 2^G and C the last row:
//   gather   S (transposed, as the operand type E) and the chunk's q̂, k̂, erase keys, w ⊙ v into shared memory,
//            from a stage that cp.async filled during the previous chunk           chunk_phases/gather.hpp
//   decay    G; K_d = K ⊙ 2^(G_C − G); X = erase key ⊙ Γ                           chunk_phases/decay.hpp
//   products P = (Q Kᵀ ⊙ decay), s ≤ r;  A = (X Kᵀ ⊙ decay), s < r              chunk_phases/products.hpp
//            and Z = W_v − X S                                                      chunk_phases/ut_transform.hpp
//   solve    U = (I + A)⁻¹ Z by forward substitution, a thread per value column (delta family); the other
//            threads scale Q ← Q ⊙ Γ meanwhile
//   read     O = s [(Q ⊙ Γ) S + P U] to memory                                     chunk_phases/outputs.hpp
//   carry    S ← Diag(Γ_C) S + K_dᵀ U in registers                                 chunk_phases/state_update.hpp
// All products are C = A·Btᵀ with both operands row-major along the contracted index (mma_strip: ldmatrix +
// mma.sync for bf16 / fp16, the same tiles in fp32 FMAs for float inputs).
// States only (kernel_args::states_only, the segmented forward's passes A and M): P, the queries' decay and the
// read are skipped (a flag uniform over the CTA, read at run time: no second instantiation).
// Element-wise work is done four channels at a time (8- or 16-byte shared accesses): on the H200 the kernel is
// bound by issuing the work around the products, not by the products (bench/cuda/README.md).
#pragma once
#include "chunk_phases/decay.hpp"
#include "chunk_phases/gather.hpp"
#include "chunk_phases/layout.hpp"
#include "chunk_phases/outputs.hpp"
#include "chunk_phases/products.hpp"
#include "chunk_phases/state_update.hpp"
#include "chunk_phases/ut_transform.hpp"

namespace linea::cuda_detail {

template <class Rule, class T, class E, pass P, int BV>
__global__ void __launch_bounds__(chunk_threads, (chunk_shape<Rule, T, E, P, BV>::min_blocks))
    chunk_kernel(const kernel_args<T> a) {
  using Sh = chunk_shape<Rule, T, E, P, BV>;
  using traits = typename Sh::traits;
  namespace ph = chunk_phases;
  static_assert(std::is_same_v<E, float> || sizeof(E) == 2, "chunk_kernel: float, or 16-bit operands on tensor cores");
  static_assert(Sh::bytes <= 227 * 1024, "chunk_kernel: shared memory over the 227 KB a Hopper block can have");
  static_assert(!traits::erases || Sh::VP <= chunk_threads, "the solve: a thread per value column");
  constexpr int CL = Sh::CL, KP = Sh::KP, VP = Sh::VP;

  extern __shared__ __align__(16) unsigned char smem_raw[];
  const chunk_cta<Sh> cx{a, smem_raw};
  const int tid = cx.tid;
  const seq_range& seq = cx.seq;

  float acc[VP / 8][4];  // the state: acc[nt][e] = S(16 warp + acc_row(e), jt + 8 nt + acc_col(e))
  tiles::load_state(acc, traits::stats ? a.C0 : a.initial_state, seq.row, cx.hv, cx.jt, cx.K, cx.Vd);
  for (int d = tid; d < KP; d += chunk_threads) cx.sm.zsum[d] = 0.f;
  ph::row_scalars pre;
  if (seq.t0 < seq.t1) ph::prefetch_chunk(cx, seq.t0, pre);

  for (index_t c0 = seq.t0; c0 < seq.t1; c0 += CL) {
    const int L = cx.rows_in(c0);

    ph::stage_state(cx, acc, pre);
    __syncthreads();
    ph::load_chunk(cx, c0, L);
    __syncthreads();
    if (c0 + CL < seq.t1) ph::prefetch_chunk(cx, c0 + CL, pre);  // lands while this chunk computes

    // decays: a thread per key channel, one warp scans scalar decays, the rest clear P and A
    if (tid < KP) ph::decay_channel(cx, tid);
    else if (tid < KP + 32) ph::scan_scalar_decays(cx);
    else ph::clear_products(cx, tid - KP - 32, chunk_threads - KP - 32);
    __syncthreads();

    ph::right_hand_side(cx);  // Z, a warp per strip; P and A on the warps without one
    ph::decayed_products(cx);
    __syncthreads();

    // the solve, a thread per value column (delta family); the other threads prepare the read
    const int helpers_from = traits::erases ? VP : 0;
    if (traits::erases && tid < VP) ph::forward_substitute(cx, tid, c0, L);
    if (tid >= helpers_from && !a.states_only) {
      if (a.normalize) ph::normaliser(cx, tid - helpers_from, chunk_threads - helpers_from);
      ph::decay_queries(cx, tid - helpers_from, chunk_threads - helpers_from);
    }
    __syncthreads();

    if (!a.states_only) ph::store_outputs(cx, c0, L);
    ph::advance_state(cx, acc);
    __syncthreads();
  }

  tiles::save_state(acc, traits::stats ? a.C : a.final_state, seq.row, cx.hv, cx.jt, cx.K, cx.Vd);
}

}  // namespace linea::cuda_detail
