// linea/backend/cuda/backward/async_copy.hpp — float32 tiles global → shared memory with cp.async, so that a
// sequential pass can fetch the next chunk's operands while the tensor cores work on the current one:
//
//   async_tile<Rows, Cols>(dst, ld, src, stride, rows, cols)   dst[r·ld + c] = src[r·stride + c],
//                                                               r < Rows, c < cols (zeros for r ≥ rows)
//   async_commit()        closes this thread's group of copies
//   async_wait<N>()       waits until at most N of this thread's groups are in flight (then a barrier makes
//                         every thread's copies visible)
//
// 16-byte pieces where every row starts 16-byte aligned and cols % 4 == 0 (K, V multiples of 4), else 4-byte ones.
// Every thread of the CTA calls async_tile with the same arguments. The 16-byte copy is the forward's
// (chunk_tiles.hpp's tiles::cp_async16_fill).
#pragma once
#include <cstdint>

#include "../chunk_tiles.hpp"
#include "work.hpp"

namespace linea::cuda_detail::bwd {

__device__ __forceinline__ void cp_async_f1(float* dst, const float* src, int bytes) {
  const std::uint32_t s = static_cast<std::uint32_t>(__cvta_generic_to_shared(dst));
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(s), "l"(src), "r"(bytes) : "memory");
}
__device__ __forceinline__ void async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

template <int Rows, int Cols>
__device__ __forceinline__ void async_tile(float* dst, int ld, const float* src, index_t stride, int rows, int cols) {
  const bool wide = cols % 4 == 0 && stride % 4 == 0 && reinterpret_cast<std::uintptr_t>(src) % 16 == 0 && ld % 4 == 0;
  if (wide) {
    constexpr int P = Cols / 4;  // 16-byte pieces per row
    for (int e = threadIdx.x; e < Rows * P; e += threads) {
      const int r = e / P, c = 4 * (e % P);
      if (c >= cols) continue;
      const bool in = r < rows;
      tiles::cp_async16_fill(dst + r * ld + c, in ? src + r * stride + c : src, in ? 16 : 0);
    }
  } else {
    for (int e = threadIdx.x; e < Rows * Cols; e += threads) {
      const int r = e / Cols, c = e % Cols;
      if (c >= cols) continue;
      const bool in = r < rows;
      cp_async_f1(dst + r * ld + c, in ? src + r * stride + c : src, in ? 4 : 0);
    }
  }
}

}  // namespace linea::cuda_detail::bwd
