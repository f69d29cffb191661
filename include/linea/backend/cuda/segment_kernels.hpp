// linea/backend/cuda/segment_kernels.hpp — the device side of the segmented forward and of context parallelism
// (segments/plan.hpp): small index arrays written from kernel parameters, states filled with I, state rows copied
// through a row map, and the combine of chains S ← M S + B, all in the state type (float32).
#pragma once
#include "check.hpp"

#include <cstdint>

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

// One CTA per (chain, value head, 32 value columns): the state tile [K][32] stays in shared memory while the chain's
// links apply one after the other; 8 row groups of 32 threads, thread (g, c) computing rows g, g + 8, ... of column
// c. M's row is the same address across a warp (a broadcast); K <= 128.
inline constexpr int combine_threads = 256, combine_cols = 32, combine_kmax = 128;

template <class S>
__global__ void __launch_bounds__(combine_threads)
    combine_kernel(const S* from, S* to, const S* M, const S* B, segments::state_dims d, const segments::chain* chains) {
  constexpr int groups = combine_threads / combine_cols, rows_per = combine_kmax / groups;
  __shared__ S tile[combine_kmax][combine_cols];
  const segments::chain c = chains[blockIdx.x];
  const index_t h = blockIdx.y, col = threadIdx.x % combine_cols, j = blockIdx.z * combine_cols + col;
  const int g = static_cast<int>(threadIdx.x / combine_cols);
  const bool live = j < d.V;
  const index_t head = h * d.K * d.V;
  for (index_t i = g; i < d.K; i += groups)
    tile[i][col] = (live && c.start >= 0) ? from[c.start * d.state() + head + i * d.V + j] : S(0);
  S next[rows_per];
  for (index_t link = 0; link < c.links; ++link) {
    const index_t row = c.link + link * c.link_step;
    const S* b = B ? B + row * d.state() + head : nullptr;  // no B: the product of transitions alone
    const S* m = M ? M + row * d.transition() + h * d.K * d.KM : nullptr;
    __syncthreads();
    for (int r = 0; r < rows_per; ++r) {
      const index_t i = g + r * groups;
      if (i >= d.K) break;
      S acc = live && b ? b[i * d.V + j] : S(0);
      if (d.KM == d.K) {
        const S* mi = m + i * d.K;
        for (index_t l = 0; l < d.K; ++l) acc += mi[l] * tile[l][col];
      } else {
        acc += (d.KM == 1 ? m[i] : S(1)) * tile[i][col];
      }
      next[r] = acc;
    }
    __syncthreads();
    const index_t out = c.out + link * c.out_step;
    for (int r = 0; r < rows_per; ++r) {
      const index_t i = g + r * groups;
      if (i >= d.K) break;
      tile[i][col] = next[r];
      if (c.every_prefix && live) to[out * d.state() + head + i * d.V + j] = next[r];
    }
  }
  if (!c.every_prefix && live)
    for (index_t i = g; i < d.K; i += groups) to[c.out * d.state() + head + i * d.V + j] = tile[i][col];
}

}  // namespace linea::cuda_detail
