// linea/backend/cuda/backward/block_gemm.hpp — one CTA's float32 matrix product on tensor cores:
//
//   block_gemm<Prec, TN>(M, N, Kd, a, b, out, scratch):   out(m, n, Σ_k a(m, k) · b(k, n))   for m < M, n < N
//
// a(m, k) and b(k, n) are element accessors (global or shared memory, any layout, any factor folded in); each
// element is loaded once per 64×TN output tile, into a 32-deep slab of shared memory (the next slab's elements
// are loaded into registers while the tensor cores work on the current one). WalkA / WalkB say which index
// consecutive threads load: walk::k where the operand is contiguous along k (coalesced global loads, no bank
// conflicts on row-major shared tiles), walk::mn where it is contiguous along m (A) or n (B). The 8 warps each own a 16 × TN/2
// strip of the tile: mma.sync m16n8k8 on TF32 operands with float32 accumulation. TF32 keeps 10 bits of
// mantissa, so at precision::tf32x3 each operand is split x = big + small (both TF32) and the product is big·big +
// big·small + small·big ("3xTF32": float32 accuracy, SPEC §6's 1e-4 for float32 inputs); at precision::tf32 each
// operand is rounded to TF32 and multiplied once (16-bit inputs; Prec below). `out` is called once per output
// element, always by the same thread for the same (m, n) whatever the accessors (so an out() may
// read-modify-write its element). Every thread of the CTA must call it; it starts and ends with a barrier.
// scratch: gemm_scratch floats of shared memory (gemm_scratch_for<TK, TN> with a TK-deep slab: a deeper slab halves
// the global round trips, each behind a barrier, at twice the prefetch registers). TN = 128 (one 64 × 128 tile, the
// warps' strips 16 × 64) serves the 128-wide products of phase 4 (K or V columns): the A operand streams once, and a
// 128-deep product with 32-deep slabs takes 4 round trips instead of 8 (gemm_128 chooses by its Wide).
//
//   block_gemm_direct<Prec, TN, Unroll>(M, N, Kd, a, b, out):   the same product with no slab and no barrier inside
//
// for operands already in shared memory: each warp reads its mma fragments straight through the accessors (rows
// of a padded tile, leading dimension ≡ 4 mod 32, read without bank conflicts). Elements past M, N or Kd are read
// as zeros, never through the accessors. `out` must not write what a or b read (no barrier separates them).
#pragma once
#include <cstdint>
#include <type_traits>

#include "work.hpp"

namespace linea::cuda_detail::bwd {

enum class walk { mn, k };

inline constexpr int gemm_tm = 64, gemm_tk = 16, gemm_ld = gemm_tm + 4;  // ld ≡ 4 (mod 32): conflict-free fragments
template <int TN>
inline constexpr int gemm_ldb = TN == 128 ? TN + 4 : gemm_ld;  // the B slab's rows, ≡ 4 (mod 32)
// Rows of the tiles block_gemm_direct reads, padded to ≡ 4 (mod 32) floats: conflict-free fragments.
inline constexpr int ld_kv = max_kv + 4, ld_cc = CL + 4;

template <int TK, int TN = 64>
inline constexpr int gemm_scratch_for = TK * (gemm_ld + gemm_ldb<TN>);  // the A and B slabs
inline constexpr int gemm_scratch = gemm_scratch_for<gemm_tk>;

// x = big + small: big is x with its low 13 mantissa bits cleared (a TF32 value: one LOP3), small = x − big (exact
// in float32: one FADD), handed to the mma as is (the tensor cores read its TF32 part, dropping its low bits: an
// error ≈ 2⁻²⁰ |x| per operand, far inside SPEC §6's 1e-4 for float32 inputs). Not cvt.rna.tf32.f32: sm_90 has no
// instruction for it and emulates it in ~9 instructions per conversion (ncu, bwd6), two per operand element, which
// cost more than the mma work of the backward's products.
__device__ __forceinline__ void split_tf32(float x, std::uint32_t& big, std::uint32_t& small) {
  big = __float_as_uint(x) & 0xffffe000u;
  small = __float_as_uint(x - __uint_as_float(big));
}

__device__ __forceinline__ void mma_tf32(float (&c)[4], const std::uint32_t (&a)[4], const std::uint32_t (&b)[2]) {
  asm volatile(
      "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// acc += a · b on one m16n8k8 step in 3xTF32 (a, b: the float32 fragments; a's split shared by the n-tiles).
__device__ __forceinline__ void mma_3xtf32(float (&c)[4], const std::uint32_t (&ab)[4], const std::uint32_t (&as)[4],
                                           float b0, float b1) {
  std::uint32_t bb[2], bs[2];
  split_tf32(b0, bb[0], bs[0]);
  split_tf32(b1, bb[1], bs[1]);
  mma_tf32(c, as, bb);
  mma_tf32(c, ab, bs);
  mma_tf32(c, ab, bb);
}

// How every product of a backward kernel multiplies (precision_for, by input type): 3xTF32 (above: float32
// accuracy, SPEC §6's 1e-4), or one TF32 mma per step (each operand rounded to TF32's 10 mantissa bits, ≈ 2⁻¹¹
// relative per operand). bwd8 chose one TF32 mma for bf16 / fp16 inputs (2–9 % faster: the kernels are
// latency-bound, bench/cuda/README.md); the lead's final call's fuzz then found a bf16 gated_delta case (T = 6000,
// K = 16, L2 norm, in-kernel gate) whose ddt_bias — a sum over 6000 tokens of d log α — missed SPEC §6 by 2000×,
// not yet explained, so every input type runs 3xTF32 again until that case is understood; `precision::tf32` stays
// for bench/cuda/grad_ab.cu's A/B (LINEA_BWD_TF32_FOR_16BIT builds it as the default for 16-bit inputs).
enum class precision { tf32x3, tf32 };
#ifdef LINEA_BWD_TF32_FOR_16BIT
template <class T>
inline constexpr precision precision_for = std::is_same_v<T, float> ? precision::tf32x3 : precision::tf32;
#else
template <class T>
inline constexpr precision precision_for = precision::tf32x3;
#endif

// x rounded to the nearest TF32 value (ties away from zero; the carry of a mantissa of ones rounds up the
// exponent): an add and a mask, in place of sm_90's emulated cvt.rna.tf32.f32. ±inf stay, and a NaN stays a NaN
// (the quiet NaN 0x7fc00000): the add would carry a NaN's mantissa into the sign (the H200's 0x7fffffff → −0) and
// drop the payload of one with only low mantissa bits (→ inf), and a NaN must poison what the math says it poisons.
__device__ __forceinline__ std::uint32_t round_tf32(float x) {
  const std::uint32_t u = __float_as_uint(x);
  if ((u & 0x7f800000u) == 0x7f800000u) return (u & 0x007fffffu) ? 0x7fc00000u : u;
  return (u + 0x1000u) & 0xffffe000u;
}

// An A fragment element for precision Prec: its split (3xTF32) or its rounding (small unused, left 0).
template <precision Prec>
__device__ __forceinline__ void a_operand(float x, std::uint32_t& big, std::uint32_t& small) {
  if constexpr (Prec == precision::tf32x3)
    split_tf32(x, big, small);
  else
    big = round_tf32(x), small = 0;
}

// acc += a · b on one m16n8k8 step at precision Prec (ab, as from a_operand<Prec>; b0, b1 the float32 B fragment).
template <precision Prec>
__device__ __forceinline__ void mma_step(float (&c)[4], const std::uint32_t (&ab)[4], const std::uint32_t (&as)[4],
                                         float b0, float b1) {
  if constexpr (Prec == precision::tf32x3) {
    mma_3xtf32(c, ab, as, b0, b1);
  } else {
    const std::uint32_t bb[2] = {round_tf32(b0), round_tf32(b1)};
    mma_tf32(c, ab, bb);
  }
}

// Phase 4's products (block_gemm_ring, block_gemm_direct's Pipe) can keep 3xTF32's three products in accumulators
// of their own (split_acc): acc[0] += big·big, acc[1] += small·big, acc[2] += big·small, the result acc[0] + (acc[1]
// + acc[2]), so that one k-step's three mma depend on no other mma of that step. prof11 measured it (bench/cuda/
// README.md): gated_delta's phase 4 1.027× over main with it, 1.062× with the single chain, because the kernel is
// bound by instruction fetch, not by that chain (the split costs 31 registers and 6 % more code). So the single
// chain is the default (the same arithmetic as before prof11: bit-identical outputs); LINEA_BWD_SPLIT_ACC=1 builds
// the split for bench/cuda/grad_ab.cu's A/B, not a user option.
#ifdef LINEA_BWD_SPLIT_ACC
inline constexpr bool split_acc = LINEA_BWD_SPLIT_ACC;
#else
inline constexpr bool split_acc = false;
#endif
template <precision Prec>
__device__ __forceinline__ void mma_step3(float (&c)[3][4], const std::uint32_t (&ab)[4], const std::uint32_t (&as)[4],
                                          float b0, float b1) {
  if constexpr (Prec == precision::tf32x3 && split_acc) {
    std::uint32_t bb[2], bs[2];
    split_tf32(b0, bb[0], bs[0]);
    split_tf32(b1, bb[1], bs[1]);
    mma_tf32(c[1], as, bb);
    mma_tf32(c[2], ab, bs);
    mma_tf32(c[0], ab, bb);
  } else {
    mma_step<Prec>(c[0], ab, as, b0, b1);
  }
}
template <precision Prec>
__device__ __forceinline__ float acc3_value(const float (&c)[3][4], int x) {
  if constexpr (Prec == precision::tf32x3 && split_acc)
    return c[0][x] + (c[1][x] + c[2][x]);
  else
    return c[0][x];
}

template <precision Prec, int TN, walk WalkA = walk::mn, walk WalkB = walk::mn, int TK = gemm_tk, class A, class B, class Out>
__device__ __forceinline__ void block_gemm(int M, int N, int Kd, A a, B b, Out out, float* scratch) {
  static_assert(threads == 256 && (TN == 16 || TN == 32 || TN == 64 || TN == 128),
                "block_gemm: 256 threads, 64 × 16|32|64|128 tiles");
  static_assert(TK == 16 || TK == 32, "block_gemm: 16- or 32-deep slabs");
  constexpr int LD = gemm_ld, LDB = gemm_ldb<TN>, NT = TN / 16;  // n-tiles of 8 per warp (two warps across the tile)
  constexpr int PA = TK * gemm_tm / threads;      // slab elements per thread: A
  constexpr int PB = TK * TN / threads;           // and B
  float* As = scratch;                 // [tk][LD]: As[k][m]
  float* Bs = scratch + TK * LD;  // [tk][LDB]: Bs[k][n]
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, g = lane >> 2, t = lane & 3;
  const int wm = 16 * (warp & 3), wn = (TN / 2) * (warp >> 2);  // this warp's strip
  // Slab element e (of this thread's PA / PB) → its (k, m) / (k, n), by the walk.
  const auto a_k = [](int e) { return WalkA == walk::k ? e % TK : e / gemm_tm; };
  const auto a_m = [](int e) { return WalkA == walk::k ? e / TK : e % gemm_tm; };
  const auto b_k = [](int e) { return WalkB == walk::k ? e % TK : e / TN; };
  const auto b_n = [](int e) { return WalkB == walk::k ? e / TK : e % TN; };
  __syncthreads();
  for (int m0 = 0; m0 < M; m0 += gemm_tm)
    for (int n0 = 0; n0 < N; n0 += TN) {
      float ra[PA], rb[PB];
      const auto fetch = [&](int k0) {
#pragma unroll
        for (int i = 0; i < PA; ++i) {
          const int k = a_k(tid + i * threads), m = a_m(tid + i * threads);
          ra[i] = m0 + m < M && k0 + k < Kd ? a(m0 + m, k0 + k) : 0.f;
        }
#pragma unroll
        for (int i = 0; i < PB; ++i) {
          const int k = b_k(tid + i * threads), n = b_n(tid + i * threads);
          rb[i] = n0 + n < N && k0 + k < Kd ? b(k0 + k, n0 + n) : 0.f;
        }
      };
      float acc[NT][4] = {};
      fetch(0);
      for (int k0 = 0; k0 < Kd; k0 += TK) {
#pragma unroll
        for (int i = 0; i < PA; ++i) As[a_k(tid + i * threads) * LD + a_m(tid + i * threads)] = ra[i];
#pragma unroll
        for (int i = 0; i < PB; ++i) Bs[b_k(tid + i * threads) * LDB + b_n(tid + i * threads)] = rb[i];
        __syncthreads();
        if (k0 + TK < Kd) fetch(k0 + TK);  // in flight while the tensor cores run
        const int steps = (Kd - k0 < TK ? Kd - k0 + 7 : TK) / 8;  // (the slab's zeros past Kd skip)
        for (int s = 0; s < steps; ++s) {
          const int kk = 8 * s;
          std::uint32_t ab[4], as[4];
          a_operand<Prec>(As[(kk + t) * LD + wm + g], ab[0], as[0]);
          a_operand<Prec>(As[(kk + t) * LD + wm + g + 8], ab[1], as[1]);
          a_operand<Prec>(As[(kk + t + 4) * LD + wm + g], ab[2], as[2]);
          a_operand<Prec>(As[(kk + t + 4) * LD + wm + g + 8], ab[3], as[3]);
#pragma unroll
          for (int j = 0; j < NT; ++j)
            mma_step<Prec>(acc[j], ab, as, Bs[(kk + t) * LDB + wn + 8 * j + g], Bs[(kk + t + 4) * LDB + wn + 8 * j + g]);
        }
        __syncthreads();
      }
#pragma unroll
      for (int j = 0; j < NT; ++j)
#pragma unroll
        for (int x = 0; x < 4; ++x) {
          const int m = m0 + wm + g + 8 * (x >> 1), n = n0 + wn + 8 * j + 2 * t + (x & 1);
          if (m < M && n < N) out(m, n, acc[j][x]);
        }
    }
  __syncthreads();
}

// A 64-row product whose output may be 128 wide: one 64 × 128 tile 32 deep where Wide (fewer round trips, more
// registers), else 64-wide tiles NarrowTK deep. scratch: gemm_scratch_for<32, 128> floats where Wide.
template <precision Prec, bool Wide, int NarrowTK, walk WalkA, walk WalkB, class A, class B, class Out>
__device__ __forceinline__ void gemm_128(int M, int N, int Kd, A a, B b, Out out, float* scratch) {
  if constexpr (Wide)
    block_gemm<Prec, 128, WalkA, WalkB, 32>(M, N, Kd, a, b, out, scratch);
  else
    block_gemm<Prec, 64, WalkA, WalkB, NarrowTK>(M, N, Kd, a, b, out, scratch);
}

// dst[r·ldd + c] = src(r, c) for r < Rows, c < Cols (src returns 0 where it has no element), over the CTA's
// threads: each thread issues a batch of loads before its first store. (A store through one pointer and a load
// through another may alias for the compiler, so a plain copy loop waits out every load's latency in turn.)
template <int Rows, int Cols, int Batch = 16, class Src>
__device__ __forceinline__ void stage_tile(float* dst, int ldd, Src src) {
  constexpr int per = Rows * Cols / threads, batch = per < Batch ? per : Batch;
  static_assert(Rows * Cols % threads == 0 && per % batch == 0, "stage_tile: whole batches per thread");
  for (int b0 = 0; b0 < per; b0 += batch) {
    float x[batch];
#pragma unroll
    for (int i = 0; i < batch; ++i) {
      const int e = threadIdx.x + (b0 + i) * threads;
      x[i] = src(e / Cols, e % Cols);
    }
#pragma unroll
    for (int i = 0; i < batch; ++i) {
      const int e = threadIdx.x + (b0 + i) * threads;
      dst[(e / Cols) * ldd + e % Cols] = x[i];
    }
  }
}

// done(r, Σ_{c < cols} f(r, c)) for r < rows: one warp per row, lanes across c, a shuffle reduction, done called
// by lane 0 (in place of shared-memory atomics on the same row from every thread).
template <class F, class Done>
__device__ __forceinline__ void row_sums(int rows, int cols, F f, Done done) {
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  for (int r = warp; r < rows; r += threads / 32) {
    float x = 0;
    for (int c = lane; c < cols; c += 32) x += f(r, c);
#pragma unroll
    for (int o = 16; o; o >>= 1) x += __shfl_xor_sync(0xffffffffu, x, o);
    if (lane == 0) done(r, x);
  }
}

// How far block_gemm_direct unrolls its k loop in each backward kernel: by two, the next k-step's shared-memory
// fragment loads overlap this step's mma (bwd6's patch). Measured on the H200 over the whole backward (bwd7,
// bench/cuda/README.md, both loop forms alternated, 8×4096 and 1×32768): faster for linear_attn and simple_gla
// (no erase, scalar decay) and for kda and gdn2 (erase, per-key decay), slower for delta and gated_delta (erase,
// scalar decay) and gla (per-key decay, no erase). Every backward kernel serves one (Erases, PerKey) pair, so the
// choice is made per pair. LINEA_BWD_DIRECT_UNROLL forces one factor on every kernel (bench/cuda/grad_ab.cu's A/B
// builds), not a user option.
#ifdef LINEA_BWD_DIRECT_UNROLL
template <bool Erases, bool PerKey>
inline constexpr int direct_unroll = LINEA_BWD_DIRECT_UNROLL;
#else
template <bool Erases, bool PerKey>
inline constexpr int direct_unroll = Erases == PerKey ? 2 : 1;
#endif

// Pipe: each warp loads k-step kk + 8's fragments before it issues step kk's mma (software pipelining: the
// shared-memory latency hides behind the tensor-core work instead of stalling every step; the same values reach the
// same mma in the same order, so results are unchanged). chunk_grad (phase 4 of the scalar-decay rules) uses it
// (prof11's profile, bench/cuda/README.md; per_key_grad has no block_gemm_direct product); it costs 4 + TN / 8 registers, which the two-CTA-per-SM kernels do not have to spare.
template <precision Prec, int TN = 64, int Unroll = 1, bool Pipe = false, class A, class B, class Out>
__device__ __forceinline__ void block_gemm_direct(int M, int N, int Kd, A a, B b, Out out) {
  static_assert(threads == 256 && (TN == 16 || TN == 32 || TN == 64), "block_gemm_direct: 256 threads, 64 × 16|32|64 tiles");
  constexpr int NT = TN / 16;
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, g = lane >> 2, t = lane & 3;
  const int wm = 16 * (warp & 3), wn = (TN / 2) * (warp >> 2);
  const auto A0 = [&](int m, int k) { return m < M && k < Kd ? a(m, k) : 0.f; };
  const auto B0 = [&](int k, int n) { return n < N && k < Kd ? b(k, n) : 0.f; };
  __syncthreads();
  for (int m0 = 0; m0 < M; m0 += gemm_tm)
    for (int n0 = 0; n0 < N; n0 += TN) {
      float acc[NT][4] = {};
      const int ma = m0 + wm + g, mb = ma + 8;
      if constexpr (Pipe) {
        // step kk's fragments, raw float32 (zeros past Kd: the prefetch of the step after the last reads nothing)
        const auto load = [&](int kk, float (&fa)[4], float (&fb)[NT][2]) {
          const int k0 = kk + t, k1 = k0 + 4;
          fa[0] = A0(ma, k0), fa[1] = A0(mb, k0), fa[2] = A0(ma, k1), fa[3] = A0(mb, k1);
#pragma unroll
          for (int j = 0; j < NT; ++j) {
            const int n = n0 + wn + 8 * j + g;
            fb[j][0] = B0(k0, n), fb[j][1] = B0(k1, n);
          }
        };
        float acc3[NT][3][4] = {};  // (mma_step3's accumulators)
        float fa[4], fb[NT][2];
        load(0, fa, fb);
#pragma unroll (Unroll)
        for (int kk = 0; kk < Kd; kk += 8) {
          float na[4], nb[NT][2];
          load(kk + 8, na, nb);
          std::uint32_t ab[4], as[4];
#pragma unroll
          for (int x = 0; x < 4; ++x) a_operand<Prec>(fa[x], ab[x], as[x]);
#pragma unroll
          for (int j = 0; j < NT; ++j) mma_step3<Prec>(acc3[j], ab, as, fb[j][0], fb[j][1]);
#pragma unroll
          for (int x = 0; x < 4; ++x) fa[x] = na[x];
#pragma unroll
          for (int j = 0; j < NT; ++j) fb[j][0] = nb[j][0], fb[j][1] = nb[j][1];
        }
#pragma unroll
        for (int j = 0; j < NT; ++j)
#pragma unroll
          for (int x = 0; x < 4; ++x) acc[j][x] = acc3_value<Prec>(acc3[j], x);
      } else {
#pragma unroll (Unroll)
        for (int kk = 0; kk < Kd; kk += 8) {
          const int k0 = kk + t, k1 = k0 + 4;
          std::uint32_t ab[4], as[4];
          a_operand<Prec>(A0(ma, k0), ab[0], as[0]);
          a_operand<Prec>(A0(mb, k0), ab[1], as[1]);
          a_operand<Prec>(A0(ma, k1), ab[2], as[2]);
          a_operand<Prec>(A0(mb, k1), ab[3], as[3]);
#pragma unroll
          for (int j = 0; j < NT; ++j) {
            const int n = n0 + wn + 8 * j + g;
            mma_step<Prec>(acc[j], ab, as, B0(k0, n), B0(k1, n));
          }
        }
      }
#pragma unroll
      for (int j = 0; j < NT; ++j)
#pragma unroll
        for (int x = 0; x < 4; ++x) {
          const int m = m0 + wm + g + 8 * (x >> 1), n = n0 + wn + 8 * j + 2 * t + (x & 1);
          if (m < M && n < N) out(m, n, acc[j][x]);
        }
    }
  __syncthreads();
}

}  // namespace linea::cuda_detail::bwd
