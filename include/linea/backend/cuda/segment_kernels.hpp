// linea/backend/cuda/segment_kernels.hpp — the device side of the segmented forward and of context parallelism
// (segments/plan.hpp): small index arrays written from kernel parameters, states filled with I, state rows copied
// through a row map, and the combine of chains S ← M S + B, all in the state type (float32).
#pragma once
#include "check.hpp"

#include <cstdint>
#include <type_traits>

#include "../../core/view.hpp"
#include "../../segments/host_ops.hpp"

namespace linea::cuda_detail {

// Up to 4000 bytes of host values travel as the kernel's parameter: no host buffer has to outlive the call, no
// pinned memory, nothing waits; a CUDA graph captures them with the launch.
template <class X>
struct parameter_block {
  static constexpr int capacity = static_cast<int>(4000 / sizeof(X));
  X values[capacity];
  int count;
};

template <class X>
__global__ void write_block_kernel(X* dst, parameter_block<X> block) {
  for (int i = static_cast<int>(threadIdx.x); i < block.count; i += static_cast<int>(blockDim.x)) dst[i] = block.values[i];
}

// dst(n, h, i, j) = 1 where i = j (or everywhere when dst has one column), else 0.
template <class S>
__global__ void fill_identity_kernel(view<S, 4> dst) {
  const index_t total = dst.size();
  for (index_t e = blockIdx.x * static_cast<index_t>(blockDim.x) + threadIdx.x; e < total;
       e += static_cast<index_t>(gridDim.x) * blockDim.x) {
    const index_t j = e % dst.ext[3], i = e / dst.ext[3] % dst.ext[2], h = e / (dst.ext[3] * dst.ext[2]) % dst.ext[1],
                  n = e / (dst.ext[3] * dst.ext[2] * dst.ext[1]);
    dst(n, h, i, j) = (i == j || dst.ext[3] == 1) ? S(1) : S(0);
  }
}

// Row r of dst ← row map[r] of src; zero where map[r] < 0 or src is not given.
template <class S>
__global__ void copy_states_kernel(view<S, 4> dst, view<const S, 4> src, const std::int32_t* map) {
  const index_t total = dst.size();
  for (index_t e = blockIdx.x * static_cast<index_t>(blockDim.x) + threadIdx.x; e < total;
       e += static_cast<index_t>(gridDim.x) * blockDim.x) {
    const index_t j = e % dst.ext[3], i = e / dst.ext[3] % dst.ext[2], h = e / (dst.ext[3] * dst.ext[2]) % dst.ext[1],
                  n = e / (dst.ext[3] * dst.ext[2] * dst.ext[1]);
    const std::int32_t from = map[n];
    dst(n, h, i, j) = (from >= 0 && src.ptr != nullptr) ? src(from, h, i, j) : S(0);
  }
}

// One CTA per (chain, value head, 16 value columns): the state tile [K][16] stays in shared memory while the chain's
// links apply one after the other. Thread (g, c) of 16 row groups × 16 columns computes rows 8g .. 8g + 7 of column
// c, reading M's rows four columns at a time (a float4 when the rows are 16-byte aligned; the same address across the
// 16 threads of a row group, a broadcast): 8 vector loads and 4 shared loads per 32 FMAs. The first version, a thread
// per (row group of 8, column) with M read one element per FMA over 64 CTAs, took ~77 µs per link at K = V = 128,
// H = 16 (ncu, 2026-12-02) — a quarter of Gated DeltaNet's 1×32768 call. K <= 128.
inline constexpr int combine_threads = 256, combine_cols = 16, combine_kmax = 128;

template <class S>
__global__ void __launch_bounds__(combine_threads)
    combine_kernel(const S* from, S* to, const S* M, const S* B, segments::state_dims d, const segments::chain* chains) {
  constexpr int groups = combine_threads / combine_cols, rows_per = combine_kmax / groups;
  __shared__ S tile[combine_kmax][combine_cols];
  const segments::chain c = chains[blockIdx.x];
  const index_t h = blockIdx.y, col = threadIdx.x % combine_cols, j = blockIdx.z * combine_cols + col;
  const index_t i0 = static_cast<index_t>(threadIdx.x / combine_cols) * rows_per;  // this thread's rows i0 + r
  const bool live = j < d.V;
  const index_t head = h * d.K * d.V;
  for (index_t i = threadIdx.x / combine_cols; i < d.K; i += groups)
    tile[i][col] = (live && c.start >= 0) ? from[c.start * d.state() + head + i * d.V + j] : S(0);
  const bool full = d.KM == d.K;
  // every row of M starts 16-byte aligned when M does and K is a multiple of 4 (rows, heads and links are K apart)
  const bool vec = std::is_same_v<S, float> && full && d.K % 4 == 0 && reinterpret_cast<std::uintptr_t>(M) % 16 == 0;
  S next[rows_per];
  for (index_t link = 0; link < c.links; ++link) {
    const index_t row = c.link + link * c.link_step;
    const S* b = B ? B + row * d.state() + head : nullptr;  // no B: the product of transitions alone
    const S* m = M ? M + row * d.transition() + h * d.K * d.KM : nullptr;
    __syncthreads();
#pragma unroll
    for (int r = 0; r < rows_per; ++r) {
      const index_t i = i0 + r;
      next[r] = live && b && i < d.K ? b[i * d.V + j] : S(0);
    }
    if (vec) {
      if constexpr (std::is_same_v<S, float>) {
#pragma unroll 2
        for (index_t l = 0; l < d.K; l += 4) {
          const float t0 = tile[l][col], t1 = tile[l + 1][col], t2 = tile[l + 2][col], t3 = tile[l + 3][col];
#pragma unroll
          for (int r = 0; r < rows_per; ++r) {
            if (i0 + r >= d.K) break;
            const float4 mv = *reinterpret_cast<const float4*>(m + (i0 + r) * d.K + l);
            next[r] += mv.x * t0, next[r] += mv.y * t1, next[r] += mv.z * t2, next[r] += mv.w * t3;
          }
        }
      }
    } else if (full) {
      for (index_t l = 0; l < d.K; ++l) {
        const S t = tile[l][col];
#pragma unroll
        for (int r = 0; r < rows_per; ++r)
          if (i0 + r < d.K) next[r] += m[(i0 + r) * d.K + l] * t;
      }
    } else {
#pragma unroll
      for (int r = 0; r < rows_per; ++r)
        if (i0 + r < d.K) next[r] += (d.KM == 1 ? m[i0 + r] : S(1)) * tile[i0 + r][col];
    }
    __syncthreads();
    const index_t out = c.out + link * c.out_step;
#pragma unroll
    for (int r = 0; r < rows_per; ++r) {
      const index_t i = i0 + r;
      if (i >= d.K) break;
      tile[i][col] = next[r];
      if (c.every_prefix && live) to[out * d.state() + head + i * d.V + j] = next[r];
    }
  }
  __syncthreads();  // with no links, the tile as loaded (rows g, g + 16, ...)
  if (!c.every_prefix && live)
    for (index_t i = threadIdx.x / combine_cols; i < d.K; i += groups)
      to[c.out * d.state() + head + i * d.V + j] = tile[i][col];
}

}  // namespace linea::cuda_detail
