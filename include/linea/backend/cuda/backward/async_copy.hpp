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
//
//   block_gemm_ring<Prec, Stages, AResident>(M, N, Kd, a, lda, b, ldb, out, ring)
//
// block_gemm's product (64 × 64 output tiles, M ≤ 64) for operands contiguous along k in global memory:
// B(k, n) = b[n·ldb + k], and A(m, k) = a[m·lda + k] either in global memory too or (AResident) already in shared
// memory (lda ≡ 4 mod 32: conflict-free fragments). The global operands stream through a ring of Stages 32-deep
// slabs in shared memory filled by cp.async, Stages − 1 slabs ahead, across the n-tiles as one sequence: no
// prefetch registers, and the loads of the next slabs are in flight while the tensor cores work on this one (the
// register-prefetched block_gemm has one slab in flight, and phase 4, one CTA per SM, waited on it ~36 times a
// CTA). Each warp loads its mma fragments ahead of the mma that use them (a full slab's four k-steps at once);
// 3xTF32's three products chain into one accumulator (block_gemm.hpp's mma_step3; LINEA_BWD_SPLIT_ACC=1, an A/B
// switch, gives them accumulators of their own). ring:
// ring_floats<Stages, AResident> floats of shared memory. Every thread of the CTA calls it; it starts and ends with
// a barrier, and `out` runs after the ring's last read (so the ring may be scratch for it).
#pragma once
#include <cstdint>

#include "../chunk_tiles.hpp"
#include "block_gemm.hpp"
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

// A ring slab: the A rows [64][ring_tk + 4] (unless A is resident), then the B rows [64][ring_tk + 4], k contiguous
// (rows ≡ 4 mod 32 floats: conflict-free fragments, 16-byte aligned rows for cp.async).
inline constexpr int ring_tk = 32, ring_ld = ring_tk + 4;
template <bool AResident>
inline constexpr int ring_stage_floats = (AResident ? 0 : gemm_tm * ring_ld) + 64 * ring_ld;
template <int Stages, bool AResident>
inline constexpr int ring_floats = Stages * ring_stage_floats<AResident>;

// Rows [0, 64) of a k-contiguous operand (row r at src + r·ld), columns k0 .. k0 + ring_tk − 1, into dst [64][ring_ld];
// zeros for rows ≥ rows and columns ≥ Kd. wide: 16-byte pieces (ld, Kd multiples of 4, src 16-byte aligned).
__device__ __forceinline__ void ring_fill(float* dst, const float* src, index_t ld, int rows, int k0, int Kd, bool wide) {
  if (wide) {
    constexpr int P = ring_tk / 4;  // pieces per row: 8; 512 a slab, 2 per thread
#pragma unroll
    for (int i = 0; i < 64 * P / threads; ++i) {
      const int e = threadIdx.x + i * threads, r = e / P, c = 4 * (e % P);
      const bool in = r < rows && k0 + c < Kd;
      tiles::cp_async16_fill(dst + r * ring_ld + c, in ? src + r * ld + k0 + c : src, in ? 16 : 0);
    }
  } else {
#pragma unroll 4
    for (int i = 0; i < 64 * ring_tk / threads; ++i) {
      const int e = threadIdx.x + i * threads, r = e / ring_tk, c = e % ring_tk;
      const bool in = r < rows && k0 + c < Kd;
      cp_async_f1(dst + r * ring_ld + c, in ? src + r * ld + k0 + c : src, in ? 4 : 0);
    }
  }
}

template <precision Prec, int Stages, bool AResident, class Out>
__device__ __forceinline__ void block_gemm_ring(int M, int N, int Kd, const float* a, index_t lda, const float* b,
                                                index_t ldb, Out out, float* ring) {
  static_assert(threads == 256 && Stages >= 2, "block_gemm_ring: 256 threads, at least two stages");
  constexpr int NT = 4, SF = ring_stage_floats<AResident>, BO = AResident ? 0 : gemm_tm * ring_ld;
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, g = lane >> 2, t = lane & 3;
  const int wm = 16 * (warp & 3), wn = 32 * (warp >> 2);  // this warp's 16 × 32 strip of a 64 × 64 tile
  const int jobs = (Kd + ring_tk - 1) / ring_tk * ((N + 63) / 64);  // (n-tile, slab) pairs, slabs innermost
  const auto aligned = [](const float* p, index_t ld) {
    return ld % 4 == 0 && reinterpret_cast<std::uintptr_t>(p) % 16 == 0;
  };
  const bool wide = Kd % 4 == 0 && aligned(b, ldb) && (AResident || aligned(a, lda));
  // The fill cursor (the next job to fetch: its n-tile, slab and stage) and the compute cursor move by counters, not
  // by a division per job (prof11's profile: the runtime j / slabs, j % slabs cost ~50 dependent instructions a job).
  int f_n0 = 0, f_k0 = 0, f_st = 0, filled = 0;
  const auto fill_next = [&] {
    if (filled < jobs) {
      float* st = ring + f_st * SF;
      if constexpr (!AResident) ring_fill(st, a, lda, M, f_k0, Kd, wide);
      ring_fill(st + BO, b + f_n0 * ldb, ldb, N - f_n0, f_k0, Kd, wide);
      ++filled, f_st = f_st + 1 == Stages ? 0 : f_st + 1, f_k0 += ring_tk;
      if (f_k0 >= Kd) f_k0 = 0, f_n0 += 64;
    }
    async_commit();
  };
  __syncthreads();  // (the ring's previous readers are done; a resident A is complete)
#pragma unroll 1
  for (int j = 0; j < Stages - 1; ++j) fill_next();
  float acc[NT][3][4] = {};  // (mma_step3's accumulators: block_gemm.hpp)
  const int ma = wm + g, mb = ma + 8;
  int k0 = 0, n0 = 0, st = 0;  // this job's slab, n-tile and stage
  for (int j = 0; j < jobs; ++j) {
    async_wait<Stages - 2>();  // this thread's pieces of slab j are in
    __syncthreads();           // everyone's are; and slab j − 1's stage has been read by all
    fill_next();
    const float* As = ring + st * SF;
    const float* Bs = As + BO;
    const int steps = (Kd - k0 < ring_tk ? Kd - k0 + 7 : ring_tk) / 8;  // (the slab's zeros past Kd skip)
    // The fragments of k-step kk (raw float32; split or rounded just before their mma), loaded ahead of the mma
    // that use them: a full slab's four steps all at once, else step s + 1's before step s's mma (the same values
    // reach the same mma in the same order).
    const auto load = [&](int kk, float (&fa)[4], float (&fb)[NT][2]) {
      const int ka = kk + t, kb = ka + 4;
      if constexpr (AResident) {  // (A past M or Kd read as zeros, never from the tile)
        const int ga = k0 + ka, gb = k0 + kb;
        fa[0] = ma < M && ga < Kd ? a[ma * lda + ga] : 0.f;
        fa[1] = mb < M && ga < Kd ? a[mb * lda + ga] : 0.f;
        fa[2] = ma < M && gb < Kd ? a[ma * lda + gb] : 0.f;
        fa[3] = mb < M && gb < Kd ? a[mb * lda + gb] : 0.f;
      } else {
        fa[0] = As[ma * ring_ld + ka], fa[1] = As[mb * ring_ld + ka];
        fa[2] = As[ma * ring_ld + kb], fa[3] = As[mb * ring_ld + kb];
      }
#pragma unroll
      for (int i = 0; i < NT; ++i) {
        const int n = wn + 8 * i + g;
        fb[i][0] = Bs[n * ring_ld + ka], fb[i][1] = Bs[n * ring_ld + kb];
      }
    };
    const auto step = [&](const float (&fa)[4], const float (&fb)[NT][2]) {
      std::uint32_t ab[4], as[4];
#pragma unroll
      for (int x = 0; x < 4; ++x) a_operand<Prec>(fa[x], ab[x], as[x]);
#pragma unroll
      for (int i = 0; i < NT; ++i) mma_step3<Prec>(acc[i], ab, as, fb[i][0], fb[i][1]);
    };
    constexpr int full = ring_tk / 8;
    if (steps == full) {
      float fa[full][4], fb[full][NT][2];
#pragma unroll
      for (int s = 0; s < full; ++s) load(8 * s, fa[s], fb[s]);
#pragma unroll
      for (int s = 0; s < full; ++s) step(fa[s], fb[s]);
    } else {
      float fa[4], fb[NT][2];
      load(0, fa, fb);
      for (int s = 0; s < steps; ++s) {
        float na[4], nb[NT][2];
        load(s + 1 < steps ? 8 * (s + 1) : 8 * s, na, nb);  // (the last step reloads its own: inside the slab)
        step(fa, fb);
#pragma unroll
        for (int x = 0; x < 4; ++x) fa[x] = na[x];
#pragma unroll
        for (int i = 0; i < NT; ++i) fb[i][0] = nb[i][0], fb[i][1] = nb[i][1];
      }
    }
    st = st + 1 == Stages ? 0 : st + 1;
    k0 += ring_tk;
    if (k0 >= Kd) {  // the n-tile is done
      if (j == jobs - 1) __syncthreads();  // (out may write over the ring: every warp is past its last read)
#pragma unroll
      for (int i = 0; i < NT; ++i)
#pragma unroll
        for (int x = 0; x < 4; ++x) {
          const int m = wm + g + 8 * (x >> 1), n = n0 + wn + 8 * i + 2 * t + (x & 1);
          if (m < M && n < N) out(m, n, acc3_value<Prec>(acc[i], x));
        }
#pragma unroll
      for (int i = 0; i < NT; ++i)
#pragma unroll
        for (int y = 0; y < 3; ++y)
#pragma unroll
          for (int x = 0; x < 4; ++x) acc[i][y][x] = 0.f;
      k0 = 0, n0 += 64;
    }
  }
  async_wait<0>();  // (only empty groups are left)
  __syncthreads();
}

}  // namespace linea::cuda_detail::bwd
