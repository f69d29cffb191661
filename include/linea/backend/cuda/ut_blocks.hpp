// linea/backend/cuda/ut_blocks.hpp — T = (I + A)⁻¹ for a 64-token chunk of the delta rules, blockwise in 16×16
// blocks (A strictly lower triangular, so T is unit lower triangular):
//   T_ii = (I + A_ii)⁻¹                          forward substitution in fp32, a lane per column
//   T_ij = −T_ii Σ_{j ≤ k < i} A_ik T_kj,  i > j  tensor cores, one warp per block column j, down from the diagonal
// The diagonal blocks must all be in T before any block column starts (a barrier between the two calls).
#pragma once
#include "mma.hpp"

namespace linea::cuda_detail::tiles {

constexpr int ut_scratch_ld = 24;  // a warp's [16][24] staging block for the block columns (rows 16-byte aligned)

// Warp w ∈ {0, 1}: the diagonal blocks 2w and 2w + 1 (half a warp each) of T from A's diagonal blocks kept in
// fp32 (Ad: [4][16][17]), into T ([64][ld], the operand type).
template <class E>
__device__ __forceinline__ void invert_diagonal_blocks(const float* Ad, E* Ts, int ld, int w) {
  const int lane = threadIdx.x & 31, b = 2 * w + (lane >> 4), c = lane & 15;
  const float* Ab = Ad + b * 16 * 17;
  float t[16];
#pragma unroll
  for (int r = 0; r < 16; ++r) {
    float x = r == c ? 1.f : 0.f;
#pragma unroll
    for (int s = 0; s < r; ++s) x = fmaf(-Ab[r * 17 + s], t[s], x);  // t_s = 0 for s < c
    t[r] = x;
  }
#pragma unroll
  for (int r = 0; r < 16; ++r) Ts[(16 * b + r) * ld + 16 * b + c] = from_float<E>(t[r]);
}

// Warp j ∈ {0, 1, 2}: block column j of T below the diagonal, from A ([64][ld]) and the diagonal blocks already in
// T; X is this warp's [16][ut_scratch_ld] scratch. `nonfinite`: the chunk's k, g or β may hold an inf or NaN (a flag
// the same in every lane). T_ii X multiplies T_ii's zeros above its diagonal too, so a non-finite row s of X would
// reach T's rows r < s of the block (0 · NaN); a flagged chunk stores X with its non-finite entries as 0 instead.
// That keeps T's rows before the first poisoned row s exact, and changes only rows ≥ s, which are poisoned anyway:
// a non-finite row s of A (k_s, β_s or the decays up to s) makes Z's row s non-finite too, and U = T Z carries it to
// every row ≥ s whatever T holds there (T_rs Z_s is a product, s ≤ r). Cheaper in registers than an exact sum.
template <class E>
__device__ __forceinline__ void fill_block_column(const E* As, E* Ts, int ld, E* X, int j, bool nonfinite = false) {
  constexpr int LDX = ut_scratch_ld;
  for (int i = j + 1; i < 4; ++i) {
    float x[2][4] = {}, y[2][4] = {};
    for (int k = j; k < i; ++k) mma_strip<E, 2, false, true>(x, As + 16 * i * ld + 16 * k, ld, Ts + 16 * k * ld + 16 * j, ld, 1);
#pragma unroll
    for (int t = 0; t < 2; ++t)
#pragma unroll
      for (int h = 0; h < 2; ++h)
      {
        float x0 = x[t][2 * h], x1 = x[t][2 * h + 1];
        if (nonfinite) x0 = isfinite(x0) ? x0 : 0.f, x1 = isfinite(x1) ? x1 : 0.f;
        *reinterpret_cast<std::uint32_t*>(X + acc_row(2 * h) * LDX + 8 * t + acc_col(0)) = pack2<E>(x0, x1);
      }
    __syncwarp();
    mma_strip<E, 2, false, true>(y, Ts + 16 * i * ld + 16 * i, ld, X, LDX, 1);
#pragma unroll
    for (int t = 0; t < 2; ++t)
#pragma unroll
      for (int h = 0; h < 2; ++h)
        *reinterpret_cast<std::uint32_t*>(Ts + (16 * i + acc_row(2 * h)) * ld + 16 * j + 8 * t + acc_col(0)) =
            pack2<E>(-y[t][2 * h], -y[t][2 * h + 1]);
    __syncwarp();  // T_ij is read by the next block down; the scratch is rewritten
  }
}

}  // namespace linea::cuda_detail::tiles
