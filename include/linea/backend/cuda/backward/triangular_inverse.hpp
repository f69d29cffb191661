// linea/backend/cuda/backward/triangular_inverse.hpp — T = (I + A)⁻¹ of the UT transform for one chunk, A strictly
// lower triangular [CL][CL] in shared memory (chunkwise.md §5). Forward substitution, one row at a time:
//   T_rc = [r = c] − Σ_{c≤s<r} A_rs T_sc
// Each column's sum is split over the CTA's four 64-thread quarters (so a warp reads 32 consecutive columns of a
// row of T, conflict-free, and each thread walks a quarter of the s range), then the four partial sums are added
// through shared memory. Every thread of the CTA must call it; it ends with a barrier. red: 4 · CL floats.
#pragma once
#include "work.hpp"

namespace linea::cuda_detail::bwd {

__device__ __forceinline__ void unit_lower_inverse(const float* sA, float* sT, float* red) {
  static_assert(threads == 4 * CL, "unit_lower_inverse: four threads per column");
  const int col = threadIdx.x % CL, part = threadIdx.x / CL;
  __syncthreads();
  for (int r = 0; r < CL; ++r) {
    float x = 0;
    for (int s = col + part; s < r; s += 4) x = fmaf(-sA[r * CL + s], sT[s * CL + col], x);
    red[part * CL + col] = x;
    __syncthreads();
    if (part == 0) {
      const float sum = red[col] + red[CL + col] + red[2 * CL + col] + red[3 * CL + col];
      sT[r * CL + col] = col < r ? sum : col == r ? 1.f : 0.f;
    }
    __syncthreads();
  }
}

}  // namespace linea::cuda_detail::bwd
