// linea/backend/cuda/perkey_delta_blocks.hpp — the 32-token pieces of the per-key erasing kernel
// (perkey_delta_kernel.hpp) that the 64-token helpers of chunk_tiles.hpp / ut_blocks.hpp do not fit:
//   fetch_rows32     a [32][ld] tile of 16-bit rows by cp.async (zeros past the chunk and past the width)
//   l2norm_rows32    the in-kernel L2 norm (qk_l2norm) on such a tile, in place
//   fill_t10         T's block below the diagonal, T_10 = −T_11 A_10 T_00, from the diagonal blocks already in T
#pragma once
#include "chunk_tiles.hpp"

namespace linea::cuda_detail::tiles {

// Rows c0 .. c0 + L − 1 (columns 0 .. width − 1) of a 16-bit source (row r at base + r·stride) into a [32][ld] tile
// of 8·PR columns; NTH threads copy, this one at tid among them (the same walk as fetch_rows, over 32 rows).
template <int PR, int NTH, class T, class E>
__device__ __forceinline__ void fetch_rows32(E* dst, int ld, const T* base, index_t stride, index_t c0, int L, int width,
                                             int tid) {
  static_assert(sizeof(T) == 2 && sizeof(E) == 2, "16-bit tiles");
  constexpr int rows = 32, RP = NTH / PR;  // rows per pass
  static_assert(NTH % PR == 0 && rows % RP == 0, "every thread copies the same number of pieces");
  const int r = tid / PR, c = 8 * (tid % PR), w = width - c;
  const int piece = w > 0 ? 2 * (w < 8 ? w : 8) : 0;
  const T* src = base + (c0 + r) * stride + c;
  E* d = dst + r * ld + c;
#pragma unroll
  for (int i = 0; i < rows / RP; ++i) {
    const int bytes = r + i * RP < L ? piece : 0;
    cp_async16_fill(d + i * RP * ld, bytes ? src + i * RP * stride : base, bytes);
  }
}

// x̂ = x / sqrt(Σ x² + 1e-6) on each of the 32 rows of a [32][ld] 16-bit tile (KP columns), in place; NTH threads,
// NTH / 32 consecutive lanes a row (as l2norm_rows: the normalised rows are rounded to the input type).
template <int NTH, class E>
__device__ __forceinline__ void l2norm_rows32(E* X, int ld, int tid) {
  constexpr int rows = 32, TPR = NTH / rows, W = KP / TPR;
  static_assert(sizeof(E) == 2 && NTH % rows == 0 && 32 % TPR == 0 && W % 8 == 0, "lanes of a row in one warp");
  E* p = X + (tid / TPR) * ld + (tid % TPR) * W;
  uint4 raw[W / 8];
  float ss = 0;
#pragma unroll
  for (int u = 0; u < W / 8; ++u) {
    raw[u] = *reinterpret_cast<const uint4*>(p + 8 * u);
    const E* e = reinterpret_cast<const E*>(&raw[u]);
#pragma unroll
    for (int c = 0; c < 8; ++c) ss = fmaf(static_cast<float>(e[c]), static_cast<float>(e[c]), ss);
  }
#pragma unroll
  for (int o = 1; o < TPR; o <<= 1) ss += __shfl_xor_sync(0xffffffffu, ss, o);
  const float f = rsqrtf(ss + 1e-6f);
#pragma unroll
  for (int u = 0; u < W / 8; ++u) {
    E* e = reinterpret_cast<E*>(&raw[u]);
#pragma unroll
    for (int c = 0; c < 8; ++c) e[c] = from_float<E>(static_cast<float>(e[c]) * f);
    *reinterpret_cast<uint4*>(p + 8 * u) = raw[u];
  }
}

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
