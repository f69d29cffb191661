// linea/backend/cuda/perkey_delta_blocks.hpp — the 32-token pieces of the per-key erasing kernel
// (perkey_delta_kernel.hpp) that the 64-token helpers of chunk_tiles.hpp / ut_blocks.hpp do not fit (fetch_rows and
// l2norm_rows take a row count of 32):
//   fill_t10         T's block below the diagonal, T_10 = −T_11 A_10 T_00, from the diagonal blocks already in T
#pragma once
#include "chunk_tiles.hpp"

namespace linea::cuda_detail::tiles {

// One warp: T_10 = −T_11 (A_10 T_00) for a 32-token chunk, T [32][ld] with its two diagonal blocks in place
// (invert_diagonal_blocks, warp 0), A10 the [16][ldx] block of A below the diagonal, X a [16][ldx] scratch.
template <class E>
__device__ __forceinline__ void fill_t10(const E* A10, int ldx, E* Ts, int ld, E* X) {
  float x[2][4] = {}, y[2][4] = {};
  mma_strip<E, 2, false, true>(x, A10, ldx, Ts, ld, 1);
#pragma unroll
  for (int t = 0; t < 2; ++t)
#pragma unroll
    for (int h = 0; h < 2; ++h)
      *reinterpret_cast<std::uint32_t*>(X + acc_row(2 * h) * ldx + 8 * t + acc_col(0)) = pack2<E>(x[t][2 * h], x[t][2 * h + 1]);
  __syncwarp();
  mma_strip<E, 2, false, true>(y, Ts + 16 * ld + 16, ld, X, ldx, 1);
#pragma unroll
  for (int t = 0; t < 2; ++t)
#pragma unroll
    for (int h = 0; h < 2; ++h)
      *reinterpret_cast<std::uint32_t*>(Ts + (16 + acc_row(2 * h)) * ld + 8 * t + acc_col(0)) =
          pack2<E>(-y[t][2 * h], -y[t][2 * h + 1]);
}

}  // namespace linea::cuda_detail::tiles
