// linea/backend/cuda/causal_strip.hpp — a warp's strip of a causal product, c += M · B with M zero above its
// diagonal (P, T = (I + A)⁻¹ of a chunk), that carries a NaN or inf in a row of B only where the recurrence does.
//
// A tensor-core product (and the float path's FMAs) multiplies a masked entry like any other, and 0 · NaN and
// 0 · inf are NaN: a non-finite value in B's row s (a token's v, or what a NaN k, β or g made of its row) would
// reach every earlier row r < s of the same diagonal block, where the recurrence and the reference have finite
// outputs (issue #13). So the strip first checks the rows of B under M's diagonal block (a few 16-byte shared
// loads a lane and one vote a warp); where one holds a non-finite value, that block is summed over s ≤ r only, in
// fp32, instead of on tensor cores. Finite operands take the plain mma_strip: the fast path pays the check alone.
//
// M: the strip's 16 rows, [m][k] row-major; its rows are tokens r0 .. r0 + 15 with r0 = 16 (ksteps − 1), so its
// last k-step is the diagonal block. B: [k][n] (B_KN, token-major) or [n][k], as mma_strip reads it.
#pragma once
#include "mma.hpp"

#include <cstdint>
#include <type_traits>

namespace linea::cuda_detail {

// Bit tests on packed 16-bit values: a lane's exponent field is all ones (inf or NaN) exactly when adding one to
// its lowest exponent bit carries into the sign bit; the two halves cannot carry into each other.
template <class E>
__device__ __forceinline__ std::uint32_t nonfinite_halves(std::uint32_t w) {
  if constexpr (std::is_same_v<E, __nv_bfloat16>) return ((w & 0x7f807f80u) + 0x00800080u) & 0x80008000u;
  else return ((w & 0x7c007c00u) + 0x04000400u) & 0x80008000u;
}

// Whether rows d0 .. d0 + 15 of B (B(k, n), n < 8·NT) hold an inf or NaN; the same answer in every lane.
template <class E, int NT, bool B_KN>
__device__ __forceinline__ bool block_has_nonfinite(const E* B, int ldb, int d0) {
  const int lane = threadIdx.x & 31;
  bool bad = false;
  if constexpr (std::is_same_v<E, float>) {
    for (int x = lane; x < 16 * 8 * NT; x += 32) {
      const int k = d0 + x / (8 * NT), n = x % (8 * NT);
      bad |= !isfinite(B_KN ? B[k * ldb + n] : B[n * ldb + k]);
    }
  } else {
    // 16-byte pieces of 8 elements along the contiguous index: 16 rows × NT pieces (B_KN), or 8·NT rows × 2.
    std::uint32_t any = 0;
    for (int p = lane; p < 16 * NT; p += 32) {
      const E* at = B_KN ? B + (d0 + p / NT) * ldb + 8 * (p % NT) : B + (p / 2) * ldb + d0 + 8 * (p % 2);
      const uint4 w = *reinterpret_cast<const uint4*>(at);
      any |= nonfinite_halves<E>(w.x) | nonfinite_halves<E>(w.y) | nonfinite_halves<E>(w.z) | nonfinite_halves<E>(w.w);
    }
    bad = any != 0;
  }
  return __any_sync(0xffffffffu, bad);
}

// Whether the pieces this thread copied with tiles::fetch_rows<PR, NTH, Rows> (chunk_tiles.hpp: piece 8·(tid % PR) of
// rows tid / PR + i·NTH / PR) hold an inf or NaN, read back once its own cp.async copies have landed
// (cp_async_wait_all; no barrier needed). Rows past the chunk and columns past the width were zero-filled.
// The pipelined kernels flag a chunk from its inputs this way (a few 16-byte shared loads a thread, once a chunk) and
// send only a flagged chunk down causal_strip's exact path.
template <int PR, int NTH, int Rows, class E>
__device__ __forceinline__ bool fetched_rows_nonfinite(const E* dst, int ld, int tid) {
  static_assert(sizeof(E) == 2 && NTH % PR == 0 && Rows % (NTH / PR) == 0, "fetch_rows' pieces");
  constexpr int RP = NTH / PR;
  const E* d = dst + (tid / PR) * ld + 8 * (tid % PR);
  std::uint32_t any = 0;
#pragma unroll
  for (int i = 0; i < Rows / RP; ++i) {
    const uint4 w = *reinterpret_cast<const uint4*>(d + i * RP * ld);
    any |= nonfinite_halves<E>(w.x) | nonfinite_halves<E>(w.y) | nonfinite_halves<E>(w.z) | nonfinite_halves<E>(w.w);
  }
  return any != 0;
}

// A chunk's flag in shared memory, one int a slot: the index of the last chunk flagged there (−1: none yet), so
// that nobody clears it. Threads that saw a non-finite input of chunk c raise it with atomicMax (rare: nothing is
// written on finite inputs); after the barrier that hands the slot over, flag == c says chunk c is flagged.
__device__ __forceinline__ void raise_chunk_flag(int* flag, int c) { atomicMax(flag, c); }

// The diagonal block token by token, each term only where s ≤ r: this lane's rows g and g + 8, columns 2q, 2q + 1 of
// each n-tile (acc_row / acc_col), token-outer so that little more than the accumulators stays live.
template <class E, int NT, bool B_KN>
__device__ __forceinline__ void causal_diagonal(float (&c)[NT][4], const E* M, int ldm, const E* B, int ldb, int d0) {
  const int lane = threadIdx.x & 31, g = lane >> 2, q2 = 2 * (lane & 3);
  auto b_at = [&](int k, int n) { return static_cast<float>(B_KN ? B[k * ldb + n] : B[n * ldb + k]); };
#pragma unroll 1
  for (int s = 0; s < 16; ++s) {
    const float m0 = static_cast<float>(M[g * ldm + d0 + s]), m1 = static_cast<float>(M[(g + 8) * ldm + d0 + s]);
#pragma unroll
    for (int t = 0; t < NT; ++t) {
      const float b0 = b_at(d0 + s, 8 * t + q2), b1 = b_at(d0 + s, 8 * t + q2 + 1);
      if (s <= g) c[t][0] = fmaf(m0, b0, c[t][0]), c[t][1] = fmaf(m0, b1, c[t][1]);
      if (s <= g + 8) c[t][2] = fmaf(m1, b0, c[t][2]), c[t][3] = fmaf(m1, b1, c[t][3]);
    }
  }
}

// The same as a call, for a kernel at its register limit: the rare path's registers stay out of the fast one. The
// block's sum comes back by value — the caller's accumulators must not be passed by reference, which would keep
// them in local memory on the fast path too.
template <int NT>
struct strip_sum {
  float c[NT][4];
};
template <class E, int NT, bool B_KN>
__device__ __noinline__ strip_sum<NT> causal_diagonal_call(const E* M, int ldm, const E* B, int ldb, int d0) {
  strip_sum<NT> x = {};
  causal_diagonal<E, NT, B_KN>(x.c, M, ldm, B, ldb, d0);
  return x;
}

// `nonfinite`: whether B may hold an inf or NaN under M's diagonal block (the same in every lane); true takes the
// exact path, false the plain mma_strip. (A kernel that wrote B itself can tell from the values it stored.)
// OutOfLine: the exact path as a call (the scalar and general kernels: 0 bytes of stack and spills, as without it).
// Measured on the H200 against main (bench/cuda/README.md, 2026-12-02): the scalar kernel +2-3%, the general +1.5%.
// The pipelined kernels take `nonfinite` from a flag per chunk raised while its inputs land (fetched_rows_nonfinite,
// raise_chunk_flag; checking every stored product instead cost them 5-15%, hyg2): perkey_delta_kernel.hpp through
// this function (out of line), delta_pipeline_kernel.hpp by running main's plain products and, in a flagged chunk
// only, computing the two masked products again on the exact path after them (inline; in place of the plain ones
// behind a branch they cost it 4.5-6.7%). Both at 168 registers, no spills (bench/cuda/README.md, hyg3).
template <class E, int NT, bool B_KN, bool OutOfLine = true>
__device__ __forceinline__ void causal_strip(float (&c)[NT][4], const E* M, int ldm, const E* B, int ldb, int ksteps,
                                             bool nonfinite) {
  if (!nonfinite) return mma_strip<E, NT, false, B_KN>(c, M, ldm, B, ldb, ksteps);
  mma_strip<E, NT, false, B_KN>(c, M, ldm, B, ldb, ksteps - 1);  // below the diagonal block nothing is masked
  if constexpr (OutOfLine) {
    const strip_sum<NT> d = causal_diagonal_call<E, NT, B_KN>(M, ldm, B, ldb, 16 * (ksteps - 1));
#pragma unroll
    for (int t = 0; t < NT; ++t)
#pragma unroll
      for (int e = 0; e < 4; ++e) c[t][e] += d.c[t][e];
  } else {
    causal_diagonal<E, NT, B_KN>(c, M, ldm, B, ldb, 16 * (ksteps - 1));
  }
}

// The same, B's diagonal block checked here.
template <class E, int NT, bool B_KN, bool OutOfLine = true>
__device__ __forceinline__ void causal_strip(float (&c)[NT][4], const E* M, int ldm, const E* B, int ldb, int ksteps) {
  causal_strip<E, NT, B_KN, OutOfLine>(c, M, ldm, B, ldb, ksteps,
                                       block_has_nonfinite<E, NT, B_KN>(B, ldb, 16 * (ksteps - 1)));
}

}  // namespace linea::cuda_detail
