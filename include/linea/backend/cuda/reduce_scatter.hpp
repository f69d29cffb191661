// linea/backend/cuda/reduce_scatter.hpp — a warp's sums of many entries at once, each lane holding a partial sum of
// every entry (lanes split the summed index, e.g. key channels): reduce_scatter_step<N> halves the entries a lane
// holds and sums them with its partner's, so steps N = M/2 … 1 leave lane l the whole sum of one entry, M − 1
// independent shuffles in all rather than a chain of five per entry. Used by the per-key kernels' log-space diagonal
// blocks (perkey_chunk_kernel.hpp forward, backward/per_key_blocks.hpp backward).
#pragma once

namespace linea::cuda_detail {

// lane l keeps the half of x[0 .. 2N) selected by its bit N, summed with its partner's (lane l ^ N)
template <int N, int M>
__device__ __forceinline__ void reduce_scatter_step(float (&x)[M], int lane) {
  static_assert(2 * N <= M, "reduce_scatter_step: 2N live entries");
  const bool upper = lane & N;
#pragma unroll
  for (int e = 0; e < N; ++e) {
    const float send = upper ? x[e] : x[e + N], keep = upper ? x[e + N] : x[e];
    x[e] = keep + __shfl_xor_sync(0xffffffffu, send, N);
  }
}

// x[0 .. 32) summed over the warp: lane l returns the whole sum of entry l
__device__ __forceinline__ float reduce_scatter_32(float (&x)[32], int lane) {
  reduce_scatter_step<16>(x, lane);
  reduce_scatter_step<8>(x, lane);
  reduce_scatter_step<4>(x, lane);
  reduce_scatter_step<2>(x, lane);
  reduce_scatter_step<1>(x, lane);
  return x[0];
}

}  // namespace linea::cuda_detail
