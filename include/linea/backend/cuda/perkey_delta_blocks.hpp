// linea/backend/cuda/perkey_delta_blocks.hpp — the 32-token pieces of the per-key erasing kernel
// (perkey_delta_kernel.hpp) that the 64-token helpers of chunk_tiles.hpp / ut_blocks.hpp do not fit (fetch_rows and
// l2norm_rows take a row count of 32):
//   fill_t10         T's block below the diagonal, T_10 = −T_11 A_10 T_00, from the diagonal blocks already in T
//   cp_async_commit, cp_async_wait_groups   cp.async groups (gk before gdn2's b)
//   barrier_or       an OR over the threads of a named barrier (the producers: is any channel wide this chunk)
//   perkey_exact_rows8   the log-space fallback of an 8×8 diagonal block for the channels whose span is too wide
//                        (pkf14-next; pkf14's 16-row form, perkey_exact_rows16, measured slower and was removed)
#pragma once
#include "chunk_phases/layout.hpp"  // load_n
#include "chunk_tiles.hpp"
#include "reduce_scatter.hpp"

namespace linea::cuda_detail::tiles {

// cp.async groups (the per-key kernel's producers: the next chunk's gk waited for before gdn2's b, pk19): close this
// thread's outstanding copies into a group; wait until at most N of its newest groups are still in flight.
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void cp_async_wait_groups() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

// One warp: T_10 = −T_11 (A_10 T_00) for a 32-token chunk, T [32][ld] with its two diagonal blocks in place
// (invert_diagonal_blocks, warp 0), A10 the [16][ldx] block of A below the diagonal, X a [16][ldx] scratch.
// `nonfinite` (the chunk's k, e or gates may hold an inf or NaN; the same in every lane): X is stored with its
// non-finite entries as 0, as ut_blocks.hpp's fill_block_column does — T_11's zeros above its diagonal would carry a
// poisoned row of X to T's earlier rows (0 · NaN); rows at or after the first poisoned token are poisoned anyway.
template <class E>
__device__ __forceinline__ void fill_t10(const E* A10, int ldx, E* Ts, int ld, E* X, bool nonfinite = false) {
  float x[2][4] = {}, y[2][4] = {};
  mma_strip<E, 2, false, true>(x, A10, ldx, Ts, ld, 1);
#pragma unroll
  for (int t = 0; t < 2; ++t)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      float x0 = x[t][2 * h], x1 = x[t][2 * h + 1];
      if (nonfinite) x0 = isfinite(x0) ? x0 : 0.f, x1 = isfinite(x1) ? x1 : 0.f;
      *reinterpret_cast<std::uint32_t*>(X + acc_row(2 * h) * ldx + 8 * t + acc_col(0)) = pack2<E>(x0, x1);
    }
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

namespace linea::cuda_detail {

// bar.red.or on a named barrier: every one of `count` threads arrives with its predicate, all get the OR.
__device__ __forceinline__ bool barrier_or(int id, int count, bool pred) {
  unsigned r;
  asm volatile(
      "{\n .reg .pred p, q;\n setp.ne.u32 p, %1, 0;\n barrier.red.or.pred q, %2, %3, p;\n selp.u32 %0, 1, 0, q;\n}\n"
      : "=r"(r)
      : "r"(static_cast<unsigned>(pred)), "r"(id), "r"(count)
      : "memory");
  return r != 0;
}

// The exact fallback of an 8×8 diagonal block (perkey_delta_kernel.hpp, phase D): rows 2Q, 2Q + 1 of the block at
// b0, columns 0..7, in log space, Σ_d x_rd k_sd 2^(G_rd − G_sd) over s ≤ r and over the channels d marked wide
// (wide[d] ≠ 0) only — the others are on tensor cores. One warp, lane l sums channels 4l .. 4l + 3; lanes l and
// l + 16 return the sum of entry (row 2Q + l % 16 / 8, column l % 8). A channel that is not wide adds an exact 0
// (selected, not multiplied: its raw x or k may be non-finite).
template <class E, int LDK, int LDG>
__device__ __forceinline__ float perkey_exact_rows8(const E* Xs, const E* Ks, const float* G, const float* wide, int b0,
                                                    int Q, int lane) {
  const int dc = 4 * lane;
  float x[16];
#pragma unroll
  for (int e = 0; e < 16; ++e) x[e] = 0.f;
  float mk[4];
  load_n<4>(wide + dc, mk);
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    const int r = b0 + 2 * Q + i;
    float xv[4], gr[4];
    load_n<4>(Xs + r * LDK + dc, xv);
    load_n<4>(G + r * LDG + dc, gr);
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      if (j > 2 * Q + i) break;
      float kv[4], gs[4];
      load_n<4>(Ks + (b0 + j) * LDK + dc, kv);
      load_n<4>(G + (b0 + j) * LDG + dc, gs);
#pragma unroll
      for (int u = 0; u < 4; ++u) {
        const float t = xv[u] * kv[u] * tiles::ex2(gr[u] - gs[u]);
        x[8 * i + j] += mk[u] != 0.f ? t : 0.f;
      }
    }
  }
  reduce_scatter_step<8>(x, lane);
  reduce_scatter_step<4>(x, lane);
  reduce_scatter_step<2>(x, lane);
  reduce_scatter_step<1>(x, lane);
  return x[0] + __shfl_xor_sync(0xffffffffu, x[0], 16);
}

}  // namespace linea::cuda_detail
