// linea/backend/cuda/mma.hpp — the one matrix primitive of the chunk kernel: a warp computes a 16×8 fp32 tile
// D += A·B over a k-step of 16, with the operands read through functors fa(m, k), fb(k, n) (tile-local indices).
//
// Every thread owns the same four outputs whatever the operand type (mma.sync's accumulator layout):
//   c[0], c[1]: row g,   columns 2q, 2q+1;   c[2], c[3]: row g+8, same columns     (g = lane/4, q = lane%4)
// E = __nv_bfloat16 / __half: tensor cores (mma.sync.m16n8k16, fp32 accumulation);
// E = float: the same tile in fp32 FMAs (float32 inputs keep float32 accuracy, SPEC §5).
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

template <class E, class FA, class FB>
__device__ __forceinline__ void mma_k16(float (&c)[4], const FA& fa, const FB& fb) {
  const int lane = threadIdx.x & 31, g = lane >> 2, q = lane & 3;
  if constexpr (std::is_same_v<E, float>) {
#pragma unroll
    for (int k = 0; k < 16; ++k) {
      const float a0 = fa(g, k), a1 = fa(g + 8, k), b0 = fb(k, 2 * q), b1 = fb(k, 2 * q + 1);
      c[0] = fmaf(a0, b0, c[0]);
      c[1] = fmaf(a0, b1, c[1]);
      c[2] = fmaf(a1, b0, c[2]);
      c[3] = fmaf(a1, b1, c[3]);
    }
  } else {
    const std::uint32_t a0 = pack2<E>(fa(g, 2 * q), fa(g, 2 * q + 1));
    const std::uint32_t a1 = pack2<E>(fa(g + 8, 2 * q), fa(g + 8, 2 * q + 1));
    const std::uint32_t a2 = pack2<E>(fa(g, 2 * q + 8), fa(g, 2 * q + 9));
    const std::uint32_t a3 = pack2<E>(fa(g + 8, 2 * q + 8), fa(g + 8, 2 * q + 9));
    const std::uint32_t b0 = pack2<E>(fb(2 * q, g), fb(2 * q + 1, g));
    const std::uint32_t b1 = pack2<E>(fb(2 * q + 8, g), fb(2 * q + 9, g));
    const std::uint32_t a[4] = {a0, a1, a2, a3}, b[2] = {b0, b1};
    mma_regs<E>(c, a, b);
  }
}

// c += A · Btᵀ over 16·ksteps: A row-major at (r0, k0) with row stride lda, Bt[n][k] row-major at (n0, k0).
// 16-bit operands come in by ldmatrix (rows 16-byte aligned); float runs the same tile in FMAs.
template <class E>
__device__ __forceinline__ void mma_rows(float (&c)[4], const E* A, int lda, const E* Bt, int ldb, int ksteps) {
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
      const std::uint32_t sa = static_cast<std::uint32_t>(__cvta_generic_to_shared(pa + 16 * s));
      const std::uint32_t sb = static_cast<std::uint32_t>(__cvta_generic_to_shared(pb + 16 * s));
      asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                   : "=r"(a[0]), "=r"(a[1]), "=r"(a[2]), "=r"(a[3]) : "r"(sa));
      asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0,%1}, [%2];\n" : "=r"(b[0]), "=r"(b[1]) : "r"(sb));
      mma_regs<E>(c, a, b);
    }
  }
}

// A 16 × 8·NT strip, 16-bit operands in shared memory, either layout: c[t] += A · B(·, 8t ..) over 16·ksteps.
// A is [m][k] row-major (A_KM = false) or [k][m] (A_KM = true: e.g. Kᵀ read from a token-major key tile);
// B is [n][k] (B_KN = false) or [k][n] (B_KN = true: e.g. V read from a token-major value tile). The stored-
// transposed layouts go through ldmatrix .trans, so no tile has to be rewritten transposed first. NT is even;
// rows 16-byte aligned.
template <class E, int NT, bool A_KM, bool B_KN>
__device__ __forceinline__ void mma_strip(float (&c)[NT][4], const E* A, int lda, const E* B, int ldb, int ksteps) {
  static_assert(NT % 2 == 0, "mma_strip: pairs of n-tiles (one ldmatrix.x4 each)");
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
    const std::uint32_t sa = static_cast<std::uint32_t>(__cvta_generic_to_shared(pa + s * a_step));
    if constexpr (A_KM)
      asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                   : "=r"(a[0]), "=r"(a[1]), "=r"(a[2]), "=r"(a[3]) : "r"(sa));
    else
      asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                   : "=r"(a[0]), "=r"(a[1]), "=r"(a[2]), "=r"(a[3]) : "r"(sa));
#pragma unroll
    for (int h = 0; h < NT / 2; ++h) {
      std::uint32_t b[4];
      const std::uint32_t sb = static_cast<std::uint32_t>(__cvta_generic_to_shared(pb + s * b_step + h * b_pair));
      if constexpr (B_KN)
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                     : "=r"(b[0]), "=r"(b[1]), "=r"(b[2]), "=r"(b[3]) : "r"(sb));
      else
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                     : "=r"(b[0]), "=r"(b[1]), "=r"(b[2]), "=r"(b[3]) : "r"(sb));
      const std::uint32_t b0[2] = {b[0], b[1]}, b1[2] = {b[2], b[3]};
      mma_regs<E>(c[2 * h], a, b0);
      mma_regs<E>(c[2 * h + 1], a, b1);
    }
  }
}

// Four adjacent n-tiles at once: c[t] += A · Bt(n0 + 8t ..)ᵀ, t = 0..3 (a 16×32 strip); the A fragment is
// loaded once per k-step and the four accumulator chains are independent (latency hidden within the warp).
template <class E>
__device__ __forceinline__ void mma_rows4(float (&c)[4][4], const E* A, int lda, const E* Bt, int ldb, int ksteps) {
  if constexpr (std::is_same_v<E, float>) {
#pragma unroll
    for (int t = 0; t < 4; ++t) mma_rows<E>(c[t], A, lda, Bt + 8 * t * ldb, ldb, ksteps);
  } else {
    mma_strip<E, 4, false, false>(c, A, lda, Bt, ldb, ksteps);
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
