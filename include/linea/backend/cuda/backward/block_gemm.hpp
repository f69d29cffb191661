// linea/backend/cuda/backward/block_gemm.hpp — one CTA's float32 matrix product through shared memory:
//
//   block_gemm<TN>(M, N, Kd, a, b, out, scratch):   out(m, n, Σ_k a(m, k) · b(k, n))   for m < M, n < N
//
// a(m, k) and b(k, n) are element accessors (global or shared memory, any layout, any factor folded in); each
// element is loaded once per 64×TN output tile, into a 16-deep slab of shared memory, and every thread keeps a
// 4 × TN/16 block of sums in registers. `out` is called once per output element, always by the same thread for the
// same (m, n) whatever the accessors (so an out() may read-modify-write its element). Every thread of the CTA must
// call it; it starts and ends with a barrier. scratch: gemm_scratch floats of shared memory.
#pragma once
#include "work.hpp"

namespace linea::cuda_detail::bwd {

inline constexpr int gemm_tm = 64, gemm_tk = 16;
inline constexpr int gemm_scratch = gemm_tk * (gemm_tm + 4) * 2;  // the A and B slabs (B at most 64 wide)

template <int TN, class A, class B, class Out>
__device__ __forceinline__ void block_gemm(int M, int N, int Kd, A a, B b, Out out, float* scratch) {
  static_assert(threads == 256 && (TN == 32 || TN == 64), "block_gemm: 256 threads, 64 × 32 or 64 × 64 tiles");
  constexpr int LD = gemm_tm + 4, NJ = TN / 16;
  float* As = scratch;             // [tk][LD]: As[k][m]
  float* Bs = scratch + gemm_tk * LD;  // [tk][LD]: Bs[k][n]
  const int tid = threadIdx.x, tx = tid % 16, ty = tid / 16;
  __syncthreads();
  for (int m0 = 0; m0 < M; m0 += gemm_tm)
    for (int n0 = 0; n0 < N; n0 += TN) {
      float acc[4][NJ] = {};
      for (int k0 = 0; k0 < Kd; k0 += gemm_tk) {
        for (int e = tid; e < gemm_tk * gemm_tm; e += threads) {
          const int k = e / gemm_tm, m = e % gemm_tm;
          As[k * LD + m] = m0 + m < M && k0 + k < Kd ? a(m0 + m, k0 + k) : 0.f;
        }
        for (int e = tid; e < gemm_tk * TN; e += threads) {
          const int k = e / TN, n = e % TN;
          Bs[k * LD + n] = n0 + n < N && k0 + k < Kd ? b(k0 + k, n0 + n) : 0.f;
        }
        __syncthreads();
#pragma unroll
        for (int k = 0; k < gemm_tk; ++k) {
          float av[4], bv[NJ];
#pragma unroll
          for (int i = 0; i < 4; ++i) av[i] = As[k * LD + ty + 16 * i];
#pragma unroll
          for (int j = 0; j < NJ; ++j) bv[j] = Bs[k * LD + tx + 16 * j];
#pragma unroll
          for (int i = 0; i < 4; ++i)
#pragma unroll
            for (int j = 0; j < NJ; ++j) acc[i][j] = fmaf(av[i], bv[j], acc[i][j]);
        }
        __syncthreads();
      }
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < NJ; ++j) {
          const int m = m0 + ty + 16 * i, n = n0 + tx + 16 * j;
          if (m < M && n < N) out(m, n, acc[i][j]);
        }
    }
  __syncthreads();
}

}  // namespace linea::cuda_detail::bwd
