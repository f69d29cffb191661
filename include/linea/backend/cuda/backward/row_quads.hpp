// linea/backend/cuda/backward/row_quads.hpp — one warp reads or writes one row of ≤ 128 elements (a key or value
// row of one token and head: the backward's K, V ≤ 128), lane l holding elements [4l, 4l + 4) as floats.
//
// Why: the per-token kernels (phases 0 and 5) move ~1.6 GB at 8×4096 and were bound by issue, not bandwidth:
// element-by-element loads of 2 bytes through a 4-stride view, each row read twice (the L2 norm's sum, then the
// scaled copy), and a 64-bit division per element to split a flat index into (head, column). Here each row is
// read once into registers, by one 8- or 16-byte load a lane where the row is contiguous and aligned (every
// packed [.., K] tensor with K a multiple of 4), else element by element through its stride.
#pragma once
#include <cstdint>

#include "../source.hpp"

namespace linea::cuda_detail::bwd {

template <class X>
struct alignas(4 * sizeof(X)) quad_of {
  X v[4];
};

template <class X>
__device__ __forceinline__ bool quad_aligned(const X* p) {
  return reinterpret_cast<std::uintptr_t>(p) % (4 * sizeof(X)) == 0;
}

// x[j] = row[(4·lane + j)·stride] as float, 0 past n.
template <class X>
__device__ __forceinline__ void load_quad(const X* row, index_t stride, index_t n, int lane, float (&x)[4]) {
  const index_t i0 = 4 * index_t(lane);
  if (stride == 1 && i0 + 4 <= n && quad_aligned(row + i0)) {
    const quad_of<X> q = *reinterpret_cast<const quad_of<X>*>(row + i0);
#pragma unroll
    for (int j = 0; j < 4; ++j) x[j] = to_float(q.v[j]);
    return;
  }
#pragma unroll
  for (int j = 0; j < 4; ++j) x[j] = i0 + j < n ? to_float(row[(i0 + j) * stride]) : 0.f;
}

// row[(4·lane + j)·stride] = s · x[j] (converted to X) for 4·lane + j < n.
template <class X>
__device__ __forceinline__ void store_quad(X* row, index_t stride, index_t n, int lane, const float (&x)[4],
                                           float s = 1.f) {
  const index_t i0 = 4 * index_t(lane);
  if (stride == 1 && i0 + 4 <= n && quad_aligned(row + i0)) {
    quad_of<X> q;
#pragma unroll
    for (int j = 0; j < 4; ++j) q.v[j] = from_float<X>(x[j] * s);
    *reinterpret_cast<quad_of<X>*>(row + i0) = q;
    return;
  }
#pragma unroll
  for (int j = 0; j < 4; ++j)
    if (i0 + j < n) row[(i0 + j) * stride] = from_float<X>(x[j] * s);
}

__device__ __forceinline__ float quad_dot(const float (&x)[4], const float (&y)[4]) {
  return (x[0] * y[0] + x[1] * y[1]) + (x[2] * y[2] + x[3] * y[3]);
}

}  // namespace linea::cuda_detail::bwd
