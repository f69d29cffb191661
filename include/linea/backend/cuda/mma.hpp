// linea/backend/cuda/mma.hpp — the warp-level matrix primitives of the CUDA kernels, one way to issue each:
//   mma_regs            one m16n8k16 tensor-core product on fragments in registers (fp32 accumulation)
//   ldmatrix_x4 / _x2   16-bit 8×8 tiles from shared memory into fragments (.trans for tiles stored [k][m])
//   mma_tile            a warp's 16×8 tile c += A·Bᵀ, operands in shared memory
//   mma_strip           a warp's 16 × 8·NT strip c += A·B (A, B either way round), the same from shared memory
//   stmatrix_x4_trans   fragments back to shared memory, transposed (sm_90)
//   pack2, acc_row/col  a fragment's packed pair; where an accumulator element sits in its tile
// Every thread owns the same four outputs of a 16×8 tile whatever the operand type (mma.sync's accumulator layout):
//   c[0], c[1]: row g,   columns 2q, 2q+1;   c[2], c[3]: row g+8, same columns     (g = lane/4, q = lane%4)
// E = __nv_bfloat16 / __half: tensor cores (mma.sync.m16n8k16, fp32 accumulation);
// E = float: the same tiles in fp32 FMAs (float32 inputs keep float32 accuracy, SPEC §5).
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

namespace linea::cuda_detail {

template <class E>
__device__ __forceinline__ std::uint32_t pack2(float lo, float hi) {
  if constexpr (std::is_same_v<E, __nv_bfloat16>) {
    __nv_bfloat162 p = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<std::uint32_t*>(&p);
  } else {
    __half2 p = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<std::uint32_t*>(&p);
  }
}

// One m16n8k16 tensor-core product on fragments already in registers (fp32 accumulation).
template <class E>
__device__ __forceinline__ void mma_regs(float (&c)[4], const std::uint32_t (&a)[4], const std::uint32_t (&b)[2]) {
  if constexpr (std::is_same_v<E, __nv_bfloat16>) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  } else {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  }
}

// 16-bit 8×8 tiles from shared memory into mma fragments: lane l gives the row address of tile l / 8 (16 bytes
// aligned); .trans for tiles stored the other way round ([k][m] instead of [m][k]).
template <bool Trans = false>
__device__ __forceinline__ void ldmatrix_x4(std::uint32_t (&r)[4], const void* row) {
  const std::uint32_t s = static_cast<std::uint32_t>(__cvta_generic_to_shared(row));
  if constexpr (Trans)
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(s));
  else
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(s));
}
// Two tiles (lanes 0..15 give the row addresses).
__device__ __forceinline__ void ldmatrix_x2(std::uint32_t (&r)[2], const void* row) {
  const std::uint32_t s = static_cast<std::uint32_t>(__cvta_generic_to_shared(row));
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0,%1}, [%2];\n" : "=r"(r[0]), "=r"(r[1]) : "r"(s));
}

// A warp's 16×8 tile: c += A · Btᵀ over 16·ksteps, A [m][k] and Bt [n][k] row-major; 16-bit operands by ldmatrix
// (.x4 for A, .x2 for B; rows 16-byte aligned), float ones in FMAs.
template <class E>
__device__ __forceinline__ void mma_tile(float (&c)[4], const E* A, int lda, const E* Bt, int ldb, int ksteps) {
  const int lane = threadIdx.x & 31;
  if constexpr (std::is_same_v<E, float>) {
    const int g = lane >> 2, q = lane & 3;
    for (int k = 0; k < 16 * ksteps; ++k) {
      const float a0 = A[g * lda + k], a1 = A[(g + 8) * lda + k];
      const float b0 = Bt[(2 * q) * ldb + k], b1 = Bt[(2 * q + 1) * ldb + k];
      c[0] = fmaf(a0, b0, c[0]);
      c[1] = fmaf(a0, b1, c[1]);
      c[2] = fmaf(a1, b0, c[2]);
      c[3] = fmaf(a1, b1, c[3]);
    }
  } else {
    const E* pa = A + (lane & 15) * lda + (lane >> 4) * 8;
    const E* pb = Bt + (lane & 7) * ldb + ((lane >> 3) & 1) * 8;
    for (int s = 0; s < ksteps; ++s) {
      std::uint32_t a[4], b[2];
      ldmatrix_x4(a, pa + 16 * s);
      ldmatrix_x2(b, pb + 16 * s);
      mma_regs<E>(c, a, b);
    }
  }
}

// A warp's 16 × 8·NT strip, operands in shared memory: c[t] += A · B(·, 8t ..) over 16·ksteps.
// A is [m][k] row-major (A_KM = false) or [k][m] (A_KM = true: e.g. Kᵀ read from a token-major key tile);
// B is [n][k] (B_KN = false) or [k][n] (B_KN = true: e.g. V read from a token-major value tile). The stored-
// transposed layouts go through ldmatrix .trans, so no tile has to be rewritten transposed first. 16-bit rows are
// 16-byte aligned, NT even (one ldmatrix.x4 per pair of n-tiles); float operands ([m][k], [n][k] only) run NT
// mma_tiles in FMAs.
template <class E, int NT, bool A_KM = false, bool B_KN = false>
__device__ __forceinline__ void mma_strip(float (&c)[NT][4], const E* A, int lda, const E* B, int ldb, int ksteps) {
  if constexpr (std::is_same_v<E, float>) {
    static_assert(!A_KM && !B_KN, "mma_strip: float operands are read [m][k] and [n][k]");
#pragma unroll
    for (int t = 0; t < NT; ++t) mma_tile<E>(c[t], A, lda, B + 8 * t * ldb, ldb, ksteps);
  } else {
    static_assert(NT % 2 == 0, "mma_strip: pairs of n-tiles (one ldmatrix.x4 each); mma_tile for one");
    const int lane = threadIdx.x & 31, l8 = lane & 7, m = lane >> 3;
    // Lane l gives the row address of 8×8 matrix l / 8 of each x4 load; the matrices come back as the fragments
    // (a0, a1, a2, a3) = (m 0-7 k 0-7, m 8-15 k 0-7, m 0-7 k 8-15, m 8-15 k 8-15) and, per n-tile pair,
    // (b[t][0], b[t][1], b[t+1][0], b[t+1][1]) = (n 0-7 k 0-7, n 0-7 k 8-15, n 8-15 k 0-7, n 8-15 k 8-15).
    const E* pa = A_KM ? A + (l8 + 8 * (m >> 1)) * lda + 8 * (m & 1) : A + (l8 + 8 * (m & 1)) * lda + 8 * (m >> 1);
    const E* pb = B_KN ? B + (l8 + 8 * (m & 1)) * ldb + 8 * (m >> 1) : B + (l8 + 8 * (m >> 1)) * ldb + 8 * (m & 1);
    const int a_step = A_KM ? 16 * lda : 16, b_step = B_KN ? 16 * ldb : 16;  // one k-step of 16
    const int b_pair = B_KN ? 16 : 16 * ldb;                                 // the next two n-tiles
    for (int s = 0; s < ksteps; ++s) {
      std::uint32_t a[4];
      ldmatrix_x4<A_KM>(a, pa + s * a_step);
#pragma unroll
      for (int h = 0; h < NT / 2; ++h) {
        std::uint32_t b[4];
        ldmatrix_x4<B_KN>(b, pb + s * b_step + h * b_pair);
        const std::uint32_t b0[2] = {b[0], b[1]}, b1[2] = {b[2], b[3]};
        mma_regs<E>(c[2 * h], a, b0);
        mma_regs<E>(c[2 * h + 1], a, b1);
      }
    }
  }
}

// (sm_90 and later.) Four 8×8 16-bit tiles from mma accumulator fragments (r_m: this lane's packed pair of tile m) to shared
// memory, transposed: lane l gives the address of row l % 8 of tile l / 8 (16-byte aligned).
template <class E>
__device__ __forceinline__ void stmatrix_x4_trans(E* row, std::uint32_t r0, std::uint32_t r1, std::uint32_t r2,
                                                  std::uint32_t r3) {
  const std::uint32_t s = static_cast<std::uint32_t>(__cvta_generic_to_shared(row));
  asm volatile("stmatrix.sync.aligned.m8n8.x4.trans.shared.b16 [%0], {%1, %2, %3, %4};\n" ::"r"(s), "r"(r0), "r"(r1),
               "r"(r2), "r"(r3)
               : "memory");
}

// The (row, column) of accumulator element e ∈ {0..3} of this lane, within a 16×8 tile.
__device__ __forceinline__ int acc_row(int e) { return ((threadIdx.x & 31) >> 2) + (e >= 2 ? 8 : 0); }
__device__ __forceinline__ int acc_col(int e) { return 2 * (threadIdx.x & 3) + (e & 1); }

}  // namespace linea::cuda_detail
