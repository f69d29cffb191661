// linea/backend/cuda/staged_combine_kernel.hpp — the combine of the segmented forward and of context parallelism
// (segments/plan.hpp's chains, S ← M S + B link after link) for the erasing rules' full transitions (KM = K), with
// each link's M and B tile copied into shared memory a link ahead.
//
// Why: a chain is sequential in its state, but not in its inputs — every link's M and B are known before the
// combine starts. combine_kernel (segment_kernels.hpp) reads M from global memory inside the product, so each link
// waits on ~16 rounds of L2 latency (~37 µs a link at K = V = 128, H = 16: ncu, fwd7 2026-12-02). Here cp.async
// brings link l + 1's M [K][K] and B tile [K][16] while link l's product runs from shared memory; the product is
// the same FMAs in the same order as combine_kernel's (the results are the same bits).
//
// One CTA per (chain, value head, 16 value columns), 256 threads: thread (g, c) of 16 row groups × 16 columns
// computes rows 8g .. 8g + 7 of column c. Preconditions (staged_combine_fits): float states, KM = K, K <= 128 and a
// multiple of 4, V a multiple of 16, M and B 16-byte aligned (every row of M and every B tile row then is).
#pragma once
#include "chunk_tiles.hpp"
#include "kernel_attributes.hpp"
#include "segment_kernels.hpp"

namespace linea::cuda_detail {

struct staged_combine_shape {
  static constexpr int threads = combine_threads, cols = combine_cols, kmax = combine_kmax;
  static constexpr int groups = threads / cols, rows_per = kmax / groups;
  // M's rows padded by 4 floats: the two row groups of a warp read different banks
  static constexpr int LDM = kmax + 4;
  static constexpr int m_at = 0,        // M of two links              [2][kmax][LDM]
      b_at = m_at + 2 * kmax * LDM,     // B's tile of two links       [2][kmax][cols]
      t_at = b_at + 2 * kmax * cols,    // the chain's state tile      [kmax][cols]
      end = t_at + kmax * cols;
  static constexpr std::size_t bytes = sizeof(float) * end;
  static_assert(bytes <= 227 * 1024, "one CTA per SM");
  static_assert(groups * rows_per == kmax && cols % 4 == 0, "the thread layout covers the tile");
};

inline bool staged_combine_fits(const void* M, const void* B, const segments::state_dims& d) {
  const auto aligned = [](const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; };
  return M != nullptr && d.KM == d.K && d.K > 0 && d.K <= combine_kmax && d.K % 4 == 0 && d.V % combine_cols == 0 &&
         aligned(M) && aligned(B);
}

namespace staged_combine {
__device__ __forceinline__ void copy16(float* smem, const float* gmem) {
  const std::uint32_t s = static_cast<std::uint32_t>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(s), "l"(gmem) : "memory");
}
__device__ __forceinline__ void commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void wait() {  // all but the newest N groups of this thread landed
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}
}  // namespace staged_combine

template <class S>  // float (a template: defined in every unit that includes it)
__global__ void __launch_bounds__(staged_combine_shape::threads, 1)
    staged_combine_kernel(const S* from, S* to, const S* M, const S* B, segments::state_dims d,
                          const segments::chain* chains) {
  static_assert(std::is_same_v<S, float>, "staged_combine_kernel: float32 states");
  using sh = staged_combine_shape;
  namespace sc = staged_combine;
  constexpr int cols = sh::cols, rows_per = sh::rows_per, LDM = sh::LDM;
  extern __shared__ __align__(16) float smem[];
  float(*tile)[cols] = reinterpret_cast<float(*)[cols]>(smem + sh::t_at);
  const segments::chain c = chains[blockIdx.x];
  const int tid = static_cast<int>(threadIdx.x), col = tid % cols, i0 = tid / cols * rows_per;
  const index_t K = d.K, h = blockIdx.y, j0 = static_cast<index_t>(blockIdx.z) * cols, j = j0 + col;
  const index_t head = h * K * d.V;

  // Link `link`'s M (K rows of K) and B tile (K rows of 16) into buffer `buf`, one commit group.
  auto stage = [&](index_t link, int buf) {
    const index_t row = c.link + link * c.link_step;
    const float* m = M + row * d.transition() + h * K * K;
    float* ms = smem + sh::m_at + buf * sh::kmax * LDM;
    const int pieces = static_cast<int>(K / 4);  // 16-byte pieces of a row of M
    for (int x = tid; x < K * pieces; x += sh::threads) {
      const int i = x / pieces, l = 4 * (x % pieces);
      sc::copy16(ms + i * LDM + l, m + i * K + l);
    }
    if (B) {
      const float* b = B + row * d.state() + head + j0;
      float* bs = smem + sh::b_at + buf * sh::kmax * cols;
      for (int x = tid; x < K * (cols / 4); x += sh::threads) {
        const int i = x / (cols / 4), l = 4 * (x % (cols / 4));
        sc::copy16(bs + i * cols + l, b + i * d.V + l);
      }
    }
    sc::commit();
  };

  for (index_t i = tid / cols; i < K; i += sh::groups)
    tile[i][col] = c.start >= 0 ? from[c.start * d.state() + head + i * d.V + j] : 0.f;
  if (c.links > 0) stage(0, 0);
  for (index_t link = 0; link < c.links; ++link) {
    const int buf = static_cast<int>(link & 1);
    if (link + 1 < c.links) {
      stage(link + 1, buf ^ 1);  // its buffer was last read before the previous link's second barrier
      sc::wait<1>();
    } else {
      sc::wait<0>();
    }
    __syncthreads();  // this link's M and B in (every thread's pieces); the tile as the previous link left it
    const float* ms = smem + sh::m_at + buf * sh::kmax * LDM;
    const float* bs = smem + sh::b_at + buf * sh::kmax * cols;
    float next[rows_per];
#pragma unroll
    for (int r = 0; r < rows_per; ++r) next[r] = B && i0 + r < K ? bs[(i0 + r) * cols + col] : 0.f;
    if (i0 + rows_per <= K) {  // all 8 rows (every group when K % 8 = 0): the 8 loads issued before the FMAs
#pragma unroll 2
      for (index_t l = 0; l < K; l += 4) {
        const float t0 = tile[l][col], t1 = tile[l + 1][col], t2 = tile[l + 2][col], t3 = tile[l + 3][col];
        float4 mv[rows_per];
#pragma unroll
        for (int r = 0; r < rows_per; ++r) mv[r] = *reinterpret_cast<const float4*>(ms + (i0 + r) * LDM + l);
#pragma unroll
        for (int r = 0; r < rows_per; ++r)
          next[r] += mv[r].x * t0, next[r] += mv[r].y * t1, next[r] += mv[r].z * t2, next[r] += mv[r].w * t3;
      }
    } else {  // the last row group of K % 8 = 4 (or past K): a row at a time, the same FMAs in the same order
#pragma unroll 2
      for (index_t l = 0; l < K; l += 4) {
        const float t0 = tile[l][col], t1 = tile[l + 1][col], t2 = tile[l + 2][col], t3 = tile[l + 3][col];
#pragma unroll
        for (int r = 0; r < rows_per; ++r) {
          if (i0 + r >= K) break;
          const float4 mv = *reinterpret_cast<const float4*>(ms + (i0 + r) * LDM + l);
          next[r] += mv.x * t0, next[r] += mv.y * t1, next[r] += mv.z * t2, next[r] += mv.w * t3;
        }
      }
    }
    __syncthreads();  // every read of the tile and of buffer buf done
    const index_t out = c.out + link * c.out_step;
#pragma unroll
    for (int r = 0; r < rows_per; ++r) {
      const index_t i = i0 + r;
      if (i >= K) break;
      tile[i][col] = next[r];
      if (c.every_prefix) to[out * d.state() + head + i * d.V + j] = next[r];
    }
  }
  __syncthreads();  // with no links, the tile as loaded
  if (!c.every_prefix)
    for (index_t i = tid / cols; i < K; i += sh::groups) to[c.out * d.state() + head + i * d.V + j] = tile[i][col];
}

}  // namespace linea::cuda_detail
