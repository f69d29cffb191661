// linea/backend/cuda/backward/triangular_inverse.hpp — T = (I + A)⁻¹ of the UT transform for one chunk, A strictly
// lower triangular [CL][CL] in shared memory (chunkwise.md §5), by 16 × 16 blocks (as fla's solve_tril):
//   diagonal blocks   T_ii = (I + A_ii)⁻¹, forward substitution, one warp per block (no CTA barrier inside)
//   block row i > 0   T_ij = −T_ii Σ_{j≤k<i} A_ik T_kj,   j < i   (two CTA-wide steps per block row)
// so the CTA meets 7 barriers instead of two per row (the row-by-row solve spent most of phase 1's barrier
// stalls). Every thread of the CTA must call it; it writes every element of T (zeros above the diagonal) and ends
// with a barrier. scratch: inverse_scratch = 3 · 16 · 16 floats. LDT: T's row stride (CL, or ld_cc = CL + 4 where
// T is then an mma operand read by rows: conflict-free fragments); A's is CL.
#pragma once
#include "work.hpp"

namespace linea::cuda_detail::bwd {

inline constexpr int inverse_scratch = 3 * 16 * 16;

template <int LDT = CL>
__device__ __forceinline__ void unit_lower_inverse(const float* sA, float* sT, float* scratch) {
  constexpr int B = 16, NB = CL / B;
  static_assert(CL == 64 && threads == 256, "unit_lower_inverse: four 16-row blocks, eight warps");
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  __syncthreads();
  if (warp < NB) {  // T_ii: lane (col, half) sums half of row r's terms for column col
    const int R = warp * B, col = lane & (B - 1), half = lane >> 4;
    for (int r = 0; r < B; ++r) {
      float x = 0;
      for (int s = col + half; s < r; s += 2) x = fmaf(-sA[(R + r) * CL + R + s], sT[(R + s) * LDT + R + col], x);
      x += __shfl_xor_sync(0xffffffffu, x, 16);
      if (half == 0) sT[(R + r) * LDT + R + col] = col < r ? x : col == r ? 1.f : 0.f;
      __syncwarp();
    }
  } else {  // the blocks above the diagonal
    for (int e = tid - NB * 32; e < CL * CL; e += threads - NB * 32)
      if ((e % CL) / B > (e / CL) / B) sT[(e / CL) * LDT + e % CL] = 0.f;
  }
  __syncthreads();
  for (int i = 1; i < NB; ++i) {
    for (int e = tid; e < i * B * B; e += threads) {  // M_j = Σ_{j≤k<i} A_ik T_kj
      const int j = e / (B * B), r = e / B % B, c = e % B;
      float x = 0;
      for (int k = j; k < i; ++k)
#pragma unroll
        for (int p = 0; p < B; ++p) x = fmaf(sA[(i * B + r) * CL + k * B + p], sT[(k * B + p) * LDT + j * B + c], x);
      scratch[e] = x;
    }
    __syncthreads();
    for (int e = tid; e < i * B * B; e += threads) {  // T_ij = −T_ii M_j
      const int j = e / (B * B), r = e / B % B, c = e % B;
      float x = 0;
      for (int p = 0; p <= r; ++p) x = fmaf(sT[(i * B + r) * LDT + i * B + p], scratch[j * B * B + p * B + c], x);
      sT[(i * B + r) * LDT + j * B + c] = -x;
    }
    __syncthreads();
  }
}

}  // namespace linea::cuda_detail::bwd
