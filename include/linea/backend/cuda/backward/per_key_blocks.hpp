// linea/backend/cuda/backward/per_key_blocks.hpp — phase 1's decayed products for per-key decays (per_key_prep_kernel
// .hpp), by 16 × 16 blocks of the 64-token chunk (secondary chunking, SPEC §4, as the forward's per-key kernels do):
//   P_rs = Σ_d q_rd k_sd D_rsd   (s ≤ r),   A_rs = Σ_d x_rd k_sd D_rsd   (s < r),   D_rsd = exp(G_rd − G_sd)
// with x = k (the caller scales A's row r by the erase gate e_r) or b ⊙ k (GDN-2's erase gate per key channel):
//   off_diagonal_block  a block (I, J), J < I, through the reference row ρ = 16 I, the first token of block row I
//                       (s < ρ ≤ r): D_rsd = exp(G_rd − G_ρd) · exp(G_ρd − G_sd), both exponents ≤ 0 (no exp(−G)
//                       alone: SPEC §6), so the block is a plain product of decayed operands on tensor cores. One
//                       warp forms its fragments' factors as it loads them (mma_step at the backward's precision,
//                       block_gemm.hpp) — 16 × 16 × K, for P and A at once (their B operand is the same).
//   diagonal_rows       rows of a diagonal block, summed in log space: lanes split the key channels (4 each, 16-byte
//                       reads), each lane sums 32 entries — one row of P and of A, or two rows of P — in independent
//                       accumulators (a chain of 4 FMAs each, not one of K), then a reduce-scatter leaves lane l the
//                       whole sum of entry l (reduce_scatter.hpp, shared with the forward's diagonal blocks).
// Tiles: [CL][ld_kv] floats (zeros past the chunk's length and past K up to max_kv); G the in-chunk cumulative log
// decay (constant past the chunk's length). put_p(r, s, x) / put_a(r, s, x) take every entry computed. GDN-2's b
// (Channels) is either such a tile (a pointer: only bench/cuda/per_key_prep_v1.hpp, the A/B's old kernel, passes
// one) or an accessor b(r, d) (finite everywhere: k is zero where b is not defined), read from global memory, which
// the library's phase 1 uses: a fourth tile would not leave two CTAs an SM (per_key_prep_kernel.hpp).
//
// Phase 4 (per_key_grad_kernel.hpp) sums the same decays over tokens instead of channels, e.g.
//   dq_rd = Σ_{s<r} N_rs k_sd D_rsd,   dk_rd = Σ_{t>r} N_tr q_td D_trd;
// its blocks below the diagonal go through a reference row as well (`token_block`): for rows r in block I and
// tokens s < ρ = 16 I, D_rsd = exp(G_rd − G_ρd) · exp(G_ρd − G_sd) — the first factor scales the output row, the
// second the B operand; for rows r in block J and tokens t > ρ' = 16 J + 15, D_trd = exp(G_td − G_ρ'd) ·
// exp(G_ρ'd − G_rd). Every exponent ≤ 0: no overflow, and a factor underflows only where the true decay is
// smaller still (extreme gates: SPEC §6). The diagonal blocks take the block's middle token as the reference for
// both sides (diag_refs below), within a bound on the factors.
#pragma once
#include <cstdint>
#include <type_traits>

#include "../chunk_phases/layout.hpp"  // load_n
#include "../reduce_scatter.hpp"
#include "block_gemm.hpp"

namespace linea::cuda_detail::bwd {

inline constexpr int diag_block = 16;  // the blocks' side

// One warp: the 16 × 16 block (I, J), J < I, of P and (Erases) A, K channels.
template <bool Erases, bool Channels, precision Prec, class BRows, class PutP, class PutA>
__device__ __forceinline__ void off_diagonal_block(int I, int J, int K, const float* sQ, const float* sK,
                                                   BRows sB, const float* sG, PutP put_p, PutA put_a) {
  constexpr int LD = ld_kv;
  constexpr bool b_tile = std::is_pointer_v<BRows>;
  const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  const int ref = diag_block * I, ra = ref + g, rb = ra + 8, s0 = diag_block * J;
  float p[2][4] = {}, a[2][4] = {};
  // b through an accessor: this k-step's four values loaded one step ahead (global memory's latency off the loop)
  const auto b_step = [&](int kk, float* bn) {
    if constexpr (Channels && !b_tile) {
      bn[0] = sB(ra, kk + t), bn[1] = sB(rb, kk + t), bn[2] = sB(ra, kk + t + 4), bn[3] = sB(rb, kk + t + 4);
    }
  };
  float bnext[4] = {1.f, 1.f, 1.f, 1.f};
  b_step(0, bnext);
  for (int kk = 0; kk < K; kk += 8) {
    const int k0 = kk + t, k1 = k0 + 4;
    const float gref0 = sG[ref * LD + k0], gref1 = sG[ref * LD + k1];
    // the A fragment (rows ra, rb × channels k0, k1: m16n8k8's a[0..3]) decayed down to row r from the reference
    const int at[4] = {ra * LD + k0, rb * LD + k0, ra * LD + k1, rb * LD + k1};
    float bv[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) bv[i] = bnext[i];
    if (kk + 8 < K) b_step(kk + 8, bnext);
    std::uint32_t qb[4], qs[4], xb[4] = {}, xs[4] = {};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const float f = __expf(sG[at[i]] - (i < 2 ? gref0 : gref1));
      a_operand<Prec>(sQ[at[i]] * f, qb[i], qs[i]);
      if constexpr (Erases) {
        float b = 1.f;
        if constexpr (Channels && b_tile) b = sB[at[i]];
        else if constexpr (Channels) b = bv[i];
        a_operand<Prec>(b * sK[at[i]] * f, xb[i], xs[i]);
      }
    }
    // the B fragment (channels k0, k1 × column s), decayed from column s down to the reference
#pragma unroll
    for (int j = 0; j < 2; ++j) {
      const int s = s0 + 8 * j + g;
      const float b0 = sK[s * LD + k0] * __expf(gref0 - sG[s * LD + k0]);
      const float b1 = sK[s * LD + k1] * __expf(gref1 - sG[s * LD + k1]);
      mma_step<Prec>(p[j], qb, qs, b0, b1);
      if constexpr (Erases) mma_step<Prec>(a[j], xb, xs, b0, b1);
    }
  }
#pragma unroll
  for (int j = 0; j < 2; ++j)
#pragma unroll
    for (int x = 0; x < 4; ++x) {
      const int r = ref + g + 8 * (x >> 1), s = s0 + 8 * j + 2 * t + (x & 1);
      put_p(r, s, p[j][x]);
      if constexpr (Erases) put_a(r, s, a[j][x]);
    }
}

// One warp: rows b0 + [lo, hi) of the diagonal block at row and column b0 (hi − lo even without Erases).
template <bool Erases, bool Channels, class BRows, class PutP, class PutA>
__device__ __forceinline__ void diagonal_rows(int b0, int lo, int hi, const float* sQ, const float* sK,
                                              BRows sB, const float* sG, PutP put_p, PutA put_a) {
  static_assert(max_kv == 4 * 32, "diagonal_rows: four key channels a lane");
  constexpr int LD = ld_kv, rows = Erases ? 1 : 2;  // rows a pass: 16 entries of P and 16 of A, or 2 × 16 of P
  const int lane = threadIdx.x & 31, dc = 4 * lane;
  for (int rr = lo; rr < hi; rr += rows) {
    float x[32];
#pragma unroll
    for (int e = 0; e < 32; ++e) x[e] = 0.f;
    float q[rows][4], gr[rows][4], xr[4];
#pragma unroll
    for (int i = 0; i < rows; ++i) {
      load_n<4>(sQ + (b0 + rr + i) * LD + dc, q[i]);
      load_n<4>(sG + (b0 + rr + i) * LD + dc, gr[i]);
    }
    if constexpr (Erases) {
      load_n<4>(sK + (b0 + rr) * LD + dc, xr);
      if constexpr (Channels) {
        float bv[4];
        if constexpr (std::is_pointer_v<BRows>) load_n<4>(sB + (b0 + rr) * LD + dc, bv);
        else
#pragma unroll
          for (int u = 0; u < 4; ++u) bv[u] = sB(b0 + rr, dc + u);
#pragma unroll
        for (int u = 0; u < 4; ++u) xr[u] *= bv[u];
      }
    }
#pragma unroll
    for (int j = 0; j < diag_block; ++j) {
      if (j < rr + rows) {  // (uniform over the warp) columns up to the pass's last row
        float kv[4], gs[4];
        load_n<4>(sK + (b0 + j) * LD + dc, kv);
        load_n<4>(sG + (b0 + j) * LD + dc, gs);
#pragma unroll
        for (int i = 0; i < rows; ++i)
          if (j <= rr + i) {  // s ≤ r: exponents ≤ 0 only
#pragma unroll
            for (int u = 0; u < 4; ++u) {
              const float decay = __expf(gr[i][u] - gs[u]);
              x[16 * i + j] = fmaf(q[i][u] * kv[u], decay, x[16 * i + j]);
              if constexpr (Erases) x[16 + j] = fmaf(xr[u] * kv[u], decay, x[16 + j]);
            }
          }
      }
    }
    const float sum = reduce_scatter_32(x, lane);
    const int s = lane & 15;
    if (Erases && lane >= 16) {
      if (s < rr) put_a(b0 + rr, b0 + s, sum);
    } else {
      const int row = rr + (Erases ? 0 : lane >> 4);
      if (s <= row) put_p(b0 + row, b0 + s, sum);
    }
  }
}

// Phase 4's diagonal blocks through their middle row (per_key_grad_kernel.hpp): block rows [b0, last], last =
// min(L, b0 + 16) − 1, reference mid = min(b0 + 8, last). Splitting D_rsd = exp(G_rd − G_mid,d) · exp(G_mid,d − G_sd)
// inside the block gives factors up to exp(G_b0 − G_mid) or exp(G_mid − G_last) (G falls along the chunk); a
// channel is `wide` in the block where either exceeds diag_span nats, and then keeps the exact form (the caller's
// choice). 40 nats (log decays below −5 per token on average, fla's lower bound for its sub-chunks) keeps every
// factor ≤ e^40 ≈ 2.4e17 and every decayed operand ≥ e^−80, inside float32's normal range with the operands' own
// magnitudes; LINEA_BWD_DIAG_SPAN overrides it for bench/cuda/grad_ab.cu's A/B (−1: every pair wide), not a user
// option.
#ifdef LINEA_BWD_DIAG_SPAN
inline constexpr float diag_span = LINEA_BWD_DIAG_SPAN;
#else
inline constexpr float diag_span = 40.f;
#endif
struct diag_refs {
  int b0, last, mid;
  __device__ diag_refs(int first, int L) : b0(first), last(min(L, first + diag_block) - 1), mid(min(first + diag_block / 2, last)) {}
  // whether channel d's factors would pass exp(diag_span) (G: [CL][LDG] floats)
  template <int LDG>
  __device__ bool wide(const float* sG, int d) const {
    const float gm = sG[mid * LDG + d];
    return sG[b0 * LDG + d] - gm > diag_span || gm - sG[last * LDG + d] > diag_span;
  }
};

// Phase 4: one warp's 16 rows × 16 key channels of products over tokens (see above),
//   acc0[j](r, d) += Σ_{s ∈ [s0, s1)} a0(r, s) · x0(s, d) · f(s, d, j)   and (Two) acc1 likewise with a1, x1,
// rows r0 + [0, 16), channels c0 + [0, 16) (n-tile j: c0 + 8 j + [0, 8)), in the m16n8k8 accumulator layout (row
// r0 + g + 8 (x >> 1), channel c0 + 8 j + 2 t + (x & 1) of acc[j][x]). f(s, d, j) is the B operand's decay for the
// lane's channel d = c0 + 8 j + g of n-tile j (the caller may hold per-tile references), computed once for both
// products. s0 a multiple of 8; tokens ≥ s1 read as zeros, never through the accessors; the accessors must give
// zeros (finite values) for rows and channels outside the problem.
template <bool Two, precision Prec, class A0, class A1, class X0, class X1, class F>
__device__ __forceinline__ void token_block(int r0, int c0, int s0, int s1, A0 a0, A1 a1, X0 x0, X1 x1, F f,
                                            float (&acc0)[2][4], float (&acc1)[2][4]) {
  const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3, ra = r0 + g, rb = ra + 8;
  // x0, x1 of a k-step's tokens (sa = kk + t, sb = sa + 4) and the lane's two channels, loaded a step ahead: gla's
  // k and q rows are global, and the loop is not unrolled
  float nx0[2][2], nx1[2][2] = {};
  const auto load_x = [&](int kk) {
#pragma unroll
    for (int j = 0; j < 2; ++j)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int s = kk + t + 4 * h, d = c0 + 8 * j + g;
        nx0[j][h] = s < s1 ? x0(s, d) : 0.f;
        if constexpr (Two) nx1[j][h] = s < s1 ? x1(s, d) : 0.f;
      }
  };
  if (s0 < s1) load_x(s0);
#pragma unroll 1
  for (int kk = s0; kk < s1; kk += 8) {
    const int sa = kk + t, sb = sa + 4;
    const bool ina = sa < s1, inb = sb < s1;
    float cx0[2][2], cx1[2][2];
#pragma unroll
    for (int j = 0; j < 2; ++j)
#pragma unroll
      for (int h = 0; h < 2; ++h) cx0[j][h] = nx0[j][h], cx1[j][h] = nx1[j][h];
    if (kk + 8 < s1) load_x(kk + 8);
    std::uint32_t ab0[4], as0[4], ab1[4] = {}, as1[4] = {};
    a_operand<Prec>(ina ? a0(ra, sa) : 0.f, ab0[0], as0[0]);
    a_operand<Prec>(ina ? a0(rb, sa) : 0.f, ab0[1], as0[1]);
    a_operand<Prec>(inb ? a0(ra, sb) : 0.f, ab0[2], as0[2]);
    a_operand<Prec>(inb ? a0(rb, sb) : 0.f, ab0[3], as0[3]);
    if constexpr (Two) {
      a_operand<Prec>(ina ? a1(ra, sa) : 0.f, ab1[0], as1[0]);
      a_operand<Prec>(ina ? a1(rb, sa) : 0.f, ab1[1], as1[1]);
      a_operand<Prec>(inb ? a1(ra, sb) : 0.f, ab1[2], as1[2]);
      a_operand<Prec>(inb ? a1(rb, sb) : 0.f, ab1[3], as1[3]);
    }
#pragma unroll
    for (int j = 0; j < 2; ++j) {
      const int d = c0 + 8 * j + g;
      const float fa = ina ? f(sa, d, j) : 0.f, fb = inb ? f(sb, d, j) : 0.f;
      mma_step<Prec>(acc0[j], ab0, as0, cx0[j][0] * fa, cx0[j][1] * fb);
      if constexpr (Two) mma_step<Prec>(acc1[j], ab1, as1, cx1[j][0] * fa, cx1[j][1] * fb);
    }
  }
}

}  // namespace linea::cuda_detail::bwd
