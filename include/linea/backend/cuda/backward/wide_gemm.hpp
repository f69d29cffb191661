// linea/backend/cuda/backward/wide_gemm.hpp — block_gemm (block_gemm.hpp) with a 64 × 128 output tile:
//
//   block_gemm_wide<WalkA, WalkB>(M, N, Kd, a, b, out, scratch)   out(m, n, Σ_k a(m, k) · b(k, n)), N ≤ 128 per tile
//
// The same contract as block_gemm (accessors, walks, 3xTF32 on m16n8k8, `out` once per element by a fixed thread,
// a barrier at both ends), for the products of phase 4 whose output is 128 wide (K or V columns): one tile instead
// of two, so the A operand streams once and a 128-deep product takes 4 global round trips (each a slab behind a
// barrier) instead of 8. The 8 warps each own a 16 × 64 strip. scratch: wide_gemm_scratch floats.
#pragma once
#include "block_gemm.hpp"

namespace linea::cuda_detail::bwd {

inline constexpr int wide_tn = 128, wide_tk = 32, wide_ldb = wide_tn + 4;  // B rows ≡ 4 (mod 32): conflict-free
inline constexpr int wide_gemm_scratch = wide_tk * (gemm_ld + wide_ldb);

template <precision Prec, walk WalkA = walk::mn, walk WalkB = walk::mn, class A, class B, class Out>
__device__ __forceinline__ void block_gemm_wide(int M, int N, int Kd, A a, B b, Out out, float* scratch) {
  static_assert(threads == 256, "block_gemm_wide: 256 threads");
  constexpr int TK = wide_tk, TN = wide_tn, NT = TN / 16;
  constexpr int PA = TK * gemm_tm / threads, PB = TK * TN / threads;
  float* As = scratch;                 // [TK][gemm_ld]: As[k][m]
  float* Bs = scratch + TK * gemm_ld;  // [TK][wide_ldb]: Bs[k][n]
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, g = lane >> 2, t = lane & 3;
  const int wm = 16 * (warp & 3), wn = (TN / 2) * (warp >> 2);
  const auto a_k = [](int e) { return WalkA == walk::k ? e % TK : e / gemm_tm; };
  const auto a_m = [](int e) { return WalkA == walk::k ? e / TK : e % gemm_tm; };
  const auto b_k = [](int e) { return WalkB == walk::k ? e % TK : e / TN; };
  const auto b_n = [](int e) { return WalkB == walk::k ? e / TK : e % TN; };
  __syncthreads();
  for (int m0 = 0; m0 < M; m0 += gemm_tm)
    for (int n0 = 0; n0 < N; n0 += TN) {
      float ra[PA], rb[PB];
      const auto fetch = [&](int k0) {
#pragma unroll
        for (int i = 0; i < PA; ++i) {
          const int k = a_k(tid + i * threads), m = a_m(tid + i * threads);
          ra[i] = m0 + m < M && k0 + k < Kd ? a(m0 + m, k0 + k) : 0.f;
        }
#pragma unroll
        for (int i = 0; i < PB; ++i) {
          const int k = b_k(tid + i * threads), n = b_n(tid + i * threads);
          rb[i] = n0 + n < N && k0 + k < Kd ? b(k0 + k, n0 + n) : 0.f;
        }
      };
      float acc[NT][4] = {};
      fetch(0);
      for (int k0 = 0; k0 < Kd; k0 += TK) {
#pragma unroll
        for (int i = 0; i < PA; ++i) As[a_k(tid + i * threads) * gemm_ld + a_m(tid + i * threads)] = ra[i];
#pragma unroll
        for (int i = 0; i < PB; ++i) Bs[b_k(tid + i * threads) * wide_ldb + b_n(tid + i * threads)] = rb[i];
        __syncthreads();
        if (k0 + TK < Kd) fetch(k0 + TK);  // in flight while the tensor cores run
        const int steps = (Kd - k0 < TK ? Kd - k0 + 7 : TK) / 8;
        for (int s = 0; s < steps; ++s) {
          const int kk = 8 * s;
          std::uint32_t ab[4], as[4];
          a_operand<Prec>(As[(kk + t) * gemm_ld + wm + g], ab[0], as[0]);
          a_operand<Prec>(As[(kk + t) * gemm_ld + wm + g + 8], ab[1], as[1]);
          a_operand<Prec>(As[(kk + t + 4) * gemm_ld + wm + g], ab[2], as[2]);
          a_operand<Prec>(As[(kk + t + 4) * gemm_ld + wm + g + 8], ab[3], as[3]);
#pragma unroll
          for (int j = 0; j < NT; ++j)
            mma_step<Prec>(acc[j], ab, as, Bs[(kk + t) * wide_ldb + wn + 8 * j + g],
                       Bs[(kk + t + 4) * wide_ldb + wn + 8 * j + g]);
        }
        __syncthreads();
      }
#pragma unroll
      for (int j = 0; j < NT; ++j)
#pragma unroll
        for (int x = 0; x < 4; ++x) {
          const int m = m0 + wm + g + 8 * (x >> 1), n = n0 + wn + 8 * j + 2 * t + (x & 1);
          if (m < M && n < N) out(m, n, acc[j][x]);
        }
    }
  __syncthreads();
}

// A 64-row product whose output may be 128 wide: block_gemm_wide where Wide (fewer round trips, more registers),
// else block_gemm's 64-wide tiles, NarrowTK deep.
template <precision Prec, bool Wide, int NarrowTK, walk WalkA, walk WalkB, class A, class B, class Out>
__device__ __forceinline__ void gemm_128(int M, int N, int Kd, A a, B b, Out out, float* scratch) {
  if constexpr (Wide)
    block_gemm_wide<Prec, WalkA, WalkB>(M, N, Kd, a, b, out, scratch);
  else
    block_gemm<Prec, 64, WalkA, WalkB, NarrowTK>(M, N, Kd, a, b, out, scratch);
}

}  // namespace linea::cuda_detail::bwd
