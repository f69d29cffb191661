// linea/backend/cuda/backward/grad_products.hpp — phase 4's (chunk_grad_kernel.hpp) matrix products as two
// out-of-line routines, so that the kernel's code fits in the SM's instruction caches:
//
//   direct_product<Prec, Decays>(M, N, Kd, a, a_m, a_k, b, ldb, out)
//       acc(m, n) = Σ_{k < Kd} A(m, k) B(k, n),  A(m, k) = S[a + m·a_m + k·a_k],  B(k, n) = S[b + k·ldb + n]
//   ring_product<Prec, Decays>(M, N, Kd, a, a_at, lda, b, ldb, ring, out)
//       acc(m, n) = Σ_{k < Kd} A(m, k) B(k, n),  B(k, n) = b[n·ldb + k] (global), A(m, k) = a[m·lda + k] (global)
//       or, where a_at ≥ 0, S[a_at + m·lda + k] (already in shared memory)
//
// S is the dynamic shared memory (offsets in floats, so that every access is a 32-bit shared one), M ≤ 64 (one
// chunk's rows), N ≤ 128. Then for every (m < M, n < N) the tile_out `out` says what happens to acc (a small switch
// of the epilogues phase 4 needs, chosen once per call). prof11's profile (bench/cuda/README.md) found phase 4 bound
// by instruction fetch: every product was a force-inlined instance of block_gemm_ring / block_gemm_direct with its
// own accessor and epilogue lambdas (~12 k-loops, ~12 epilogues, ~14k SASS instructions run ~2.4 times a CTA, one
// CTA per SM); here the k-loops exist once per routine and the kernel calls them.
//
// The arithmetic is block_gemm_ring's and block_gemm_direct's (Pipe) exactly: the same fragments reach the same mma
// in the same order (3xTF32 in one accumulator chain; block_gemm.hpp's mma_step), so results are bit-identical to
// the inlined products. Elements past M or N are read from the tiles (rows of a tile past M, columns past N: in
// bounds, their results never leave: a row of A or a column of B reaches only its own row or column of the
// product), not bounds-checked per element; elements past Kd are zeros (the last k-step's partial fragment).
// Both routines start and end with a barrier; `out` must not write what the product reads (direct_product: no
// barrier separates them), and ring_product's last tile's `out` runs after the ring's last read (the ring may be
// written by it).
#pragma once
#include <cstdint>

#include "async_copy.hpp"
#include "block_gemm.hpp"
#include "work.hpp"

namespace linea::cuda_detail::bwd {

// The dynamic shared memory (every extern __shared__ array starts at its base): the routines address it by offsets.
extern __shared__ __align__(16) float grad_smem[];

// What a product does with acc at (m, n), o(m, n) = S[o + m·ldo + n] (o2 likewise); r1, r2 per-row vectors.
enum class tile_op : int {
  set,        // o = acc
  set_neg,    // o = −acc
  set_row,    // o = (alpha · r1[m]) · acc
  add,        // o += acc
  causal_m,   // o = n < m ? −(o + acc) · D(m, n) : 0                          (r1 = G: D(m, n) = exp(G_m − G_n))
  causal_dp,  // dp = n ≤ m ? alpha · acc : 0;  o = n ≤ m ? dp · D(m, n) : 0;  where Decays: o2 (rows of CL + 1)
              // = n < m ? dp · S[r2 + m·ldo + n] : 0
  gate_x,     // x = r1[m] · o2 + acc;  o2 = x;  o += r2[m] · x
  add_keep,   // o += acc;  where Decays: o2 = acc
};
struct tile_out {
  tile_op op = tile_op::set;
  int o = 0, ldo = 0, o2 = 0, r1 = 0, r2 = 0;
  float alpha = 1;
};

// acc[j][x] is (m, n) = (mb + 8·(x >> 1), nb + 8·j + (x & 1)) (an m16n8 fragment per n-tile j of 8 columns). The
// elements go through one rolled loop (the values shift down a register array: no local memory), the op's switch
// inside it: one copy of each epilogue, not 16 unrolled ones per op (this runs once per output tile).
template <bool Decays>
__device__ __forceinline__ void apply_tile_out(const tile_out& e, int M, int N, int mb, int nb,
                                               const float (&acc)[4][4]) {
  float* const S = grad_smem;
  const auto D = [&](int r, int s) { return Decays ? __expf(S[e.r1 + r] - S[e.r1 + s]) : 1.f; };
  float v[16];
#pragma unroll
  for (int i = 0; i < 16; ++i) v[i] = acc[i >> 2][i & 3];
#pragma unroll 1
  for (int i = 0; i < 16; ++i) {
    const int m = mb + 8 * ((i & 3) >> 1), n = nb + 8 * (i >> 2) + (i & 1);
    const float a = v[0];
#pragma unroll
    for (int x = 0; x < 15; ++x) v[x] = v[x + 1];
    if (m >= M || n >= N) continue;
    float& o = S[e.o + m * e.ldo + n];
    switch (e.op) {
      case tile_op::set:
        o = a;
        break;
      case tile_op::set_neg:
        o = -a;
        break;
      case tile_op::set_row:
        o = e.alpha * S[e.r1 + m] * a;
        break;
      case tile_op::add:
        o += a;
        break;
      case tile_op::causal_m:
        o = n < m ? -(o + a) * D(m, n) : 0.f;
        break;
      case tile_op::causal_dp: {
        const float dp = n <= m ? e.alpha * a : 0.f;
        if (Decays) S[e.o2 + m * (CL + 1) + n] = n < m ? dp * S[e.r2 + m * e.ldo + n] : 0.f;
        o = n <= m ? dp * D(m, n) : 0.f;  // (D past the diagonal may overflow)
        break;
      }
      case tile_op::gate_x: {
        float& o2 = S[e.o2 + m * e.ldo + n];
        const float x = S[e.r1 + m] * o2 + a;
        o2 = x;
        o += S[e.r2 + m] * x;
        break;
      }
      case tile_op::add_keep:
        o += a;
        if (Decays) S[e.o2 + m * e.ldo + n] = a;
        break;
    }
  }
}

// z_r = Σ_{c < cols} X(r, c) Y(r, c) over two [CL][ld_kv] tiles (X at x_at, Y at y_at), then by op, into the rows at
// g_at (and h_at, e_at): block_gemm.hpp's row_sums (one warp per row, lanes across c, a shuffle reduction; the same
// sums in the same order) with the four ways phase 4 uses them, one copy.
enum class row_op : int {
  dk0_decay,  // r < rows − 1: g[r] −= z, g[rows − 1] += z (shared-memory atomics)
  erase_x,    // h[r] += z;  where Decays: g[r] += e[r] · z
  sub,        // g[r] −= z
  add,        // g[r] += z
};
template <bool Decays>
__device__ __noinline__ void row_dots(int rows, int cols, int x_at, int y_at, int g_at, row_op op, int h_at = 0,
                                      int e_at = 0) {
  float* const S = grad_smem;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
#pragma unroll 1
  for (int r = warp; r < rows; r += threads / 32) {
    float z = 0;
#pragma unroll 1
    for (int c = lane; c < cols; c += 32) z += S[x_at + r * ld_kv + c] * S[y_at + r * ld_kv + c];
#pragma unroll
    for (int o = 16; o; o >>= 1) z += __shfl_xor_sync(0xffffffffu, z, o);
    if (lane == 0) {
      float* const g = S + g_at;
      switch (op) {
        case row_op::dk0_decay:
          if (r < rows - 1) atomicAdd(&g[r], -z), atomicAdd(&g[rows - 1], z);
          break;
        case row_op::erase_x:
          S[h_at + r] += z;
          if (Decays) g[r] += S[e_at + r] * z;
          break;
        case row_op::sub:
          g[r] -= z;
          break;
        case row_op::add:
          g[r] += z;
          break;
      }
    }
  }
}

inline constexpr int log2_kv = 7, log2_cl = 6;  // max_kv = 128, CL = 64
static_assert(1 << log2_kv == max_kv && 1 << log2_cl == CL);

// async_tile (async_copy.hpp) out of line, for every tile phase 4 stages: dst = S[dst_at + r·ld + c] for r < CL,
// c < cols (zeros for r ≥ rows), columns in pieces of 16 bytes where aligned, else 4; cols_log2: log2 of the tile's
// width (max_kv or CL), so that one copy of the loops serves every tile.
inline __device__ __noinline__ void stage_tile_async(int dst_at, int ld, const float* src, index_t stride, int rows, int cols,
                                              int cols_log2) {
  float* const dst = grad_smem + dst_at;
  const bool wide = cols % 4 == 0 && stride % 4 == 0 && reinterpret_cast<std::uintptr_t>(src) % 16 == 0 && ld % 4 == 0;
  const int Cols = 1 << cols_log2;
  if (wide) {
    const int lp = cols_log2 - 2, P = Cols >> 2;  // 16-byte pieces per row
#pragma unroll 1
    for (int e = threadIdx.x; e < CL * P; e += threads) {
      const int r = e >> lp, c = 4 * (e & (P - 1));
      if (c >= cols) continue;
      const bool in = r < rows;
      tiles::cp_async16_fill(dst + r * ld + c, in ? src + r * stride + c : src, in ? 16 : 0);
    }
  } else {
#pragma unroll 1
    for (int e = threadIdx.x; e < CL * Cols; e += threads) {
      const int r = e >> cols_log2, c = e & (Cols - 1);
      if (c >= cols) continue;
      const bool in = r < rows;
      cp_async_f1(dst + r * ld + c, in ? src + r * stride + c : src, in ? 4 : 0);
    }
  }
}

// One m16n8k8 step of a warp's 16 × 32 strip: fa its A fragment, fb its four n-tiles' B fragments (float32).
template <precision Prec>
__device__ __forceinline__ void strip_step(float (&acc)[4][4], const float (&fa)[4], const float (&fb)[4][2]) {
  std::uint32_t ab[4], as[4];
#pragma unroll
  for (int x = 0; x < 4; ++x) a_operand<Prec>(fa[x], ab[x], as[x]);
#pragma unroll
  for (int j = 0; j < 4; ++j) mma_step<Prec>(acc[j], ab, as, fb[j][0], fb[j][1]);
}

template <precision Prec, bool Decays>
__device__ __noinline__ void direct_product(int M, int N, int Kd, int a, int a_m, int a_k, int b, int ldb,
                                            tile_out out) {
  float* const S = grad_smem;
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, g = lane >> 2, t = lane & 3;
  const int wm = 16 * (warp & 3), wn = 32 * (warp >> 2);  // this warp's 16 × 32 strip of a 64 × 64 tile
  const float* const a0 = S + a + (wm + g) * a_m;  // rows wm + g and wm + g + 8, k at k·a_k
  const float* const a1 = a0 + 8 * a_m;
  __syncthreads();
  for (int n0 = 0; n0 < N; n0 += 64) {
    const float* const bp = S + b + n0 + wn + g;  // B(k, n0 + wn + 8 j + g) at bp[k·ldb + 8 j]
    // k-step kk's fragments (zeros past Kd: the prefetch of the step after the last reads nothing)
    const auto load = [&](int kk, float (&fa)[4], float (&fb)[4][2]) {
      const int k0 = kk + t, k1 = k0 + 4;
      const bool i0 = k0 < Kd, i1 = k1 < Kd;
      fa[0] = i0 ? a0[k0 * a_k] : 0.f, fa[1] = i0 ? a1[k0 * a_k] : 0.f;
      fa[2] = i1 ? a0[k1 * a_k] : 0.f, fa[3] = i1 ? a1[k1 * a_k] : 0.f;
#pragma unroll
      for (int j = 0; j < 4; ++j) fb[j][0] = i0 ? bp[k0 * ldb + 8 * j] : 0.f, fb[j][1] = i1 ? bp[k1 * ldb + 8 * j] : 0.f;
    };
    float acc[4][4] = {}, fa[4], fb[4][2];
    load(0, fa, fb);
#pragma unroll 1
    for (int kk = 0; kk < Kd; kk += 8) {
      float na[4], nb[4][2];
      load(kk + 8, na, nb);  // (in flight while this step's mma run)
      strip_step<Prec>(acc, fa, fb);
#pragma unroll
      for (int x = 0; x < 4; ++x) fa[x] = na[x];
#pragma unroll
      for (int j = 0; j < 4; ++j) fb[j][0] = nb[j][0], fb[j][1] = nb[j][1];
    }
    apply_tile_out<Decays>(out, M, N, wm + g, n0 + wn + 2 * t, acc);
  }
  __syncthreads();
}

// async_copy.hpp's ring_fill with rolled loops (the same copies; one copy of the code per call site, small).
__device__ __forceinline__ void fill_slab(float* dst, const float* src, index_t ld, int rows, int k0, int Kd, bool wide) {
  if (wide) {
    constexpr int P = ring_tk / 4;  // pieces per row: 8; 512 a slab, 2 per thread
#pragma unroll 1
    for (int e = threadIdx.x; e < 64 * P; e += threads) {
      const int r = e / P, c = 4 * (e % P);
      const bool in = r < rows && k0 + c < Kd;
      tiles::cp_async16_fill(dst + r * ring_ld + c, in ? src + r * ld + k0 + c : src, in ? 16 : 0);
    }
  } else {
#pragma unroll 1
    for (int e = threadIdx.x; e < 64 * ring_tk; e += threads) {
      const int r = e / ring_tk, c = e % ring_tk;
      const bool in = r < rows && k0 + c < Kd;
      cp_async_f1(dst + r * ring_ld + c, in ? src + r * ld + k0 + c : src, in ? 4 : 0);
    }
  }
}

// block_gemm_ring's product (async_copy.hpp: Stages = 3, 32-deep cp.async slabs, two in flight), A resident or not
// chosen at run time.
inline constexpr int product_stages = 3;
inline constexpr int product_ring_floats = ring_floats<product_stages, false>;

template <precision Prec, bool Decays>
__device__ __noinline__ void ring_product(int M, int N, int Kd, const float* a, int a_at, index_t lda, const float* b,
                                          index_t ldb, int ring_at, tile_out out) {
  constexpr int Stages = product_stages;
  float* const S = grad_smem;
  float* const ring = S + ring_at;
  const bool resident = a_at >= 0;
  const int SF = resident ? ring_stage_floats<true> : ring_stage_floats<false>, BO = resident ? 0 : gemm_tm * ring_ld;
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, g = lane >> 2, t = lane & 3;
  const int wm = 16 * (warp & 3), wn = 32 * (warp >> 2);  // this warp's 16 × 32 strip of a 64 × 64 tile
  const int jobs = (Kd + ring_tk - 1) / ring_tk * ((N + 63) / 64);  // (n-tile, slab) pairs, slabs innermost
  const auto aligned = [](const float* p, index_t ld) {
    return ld % 4 == 0 && reinterpret_cast<std::uintptr_t>(p) % 16 == 0;
  };
  const bool wide = Kd % 4 == 0 && aligned(b, ldb) && (resident || aligned(a, lda));
  int f_n0 = 0, f_k0 = 0, f_st = 0, filled = 0;  // the fill cursor: the next job's n-tile, slab, stage
  const auto fill_next = [&] {
    if (filled < jobs) {
      float* st = ring + f_st * SF;
      if (!resident) fill_slab(st, a, lda, M, f_k0, Kd, wide);
      fill_slab(st + BO, b + f_n0 * ldb, ldb, N - f_n0, f_k0, Kd, wide);
      ++filled, f_st = f_st + 1 == Stages ? 0 : f_st + 1, f_k0 += ring_tk;
      if (f_k0 >= Kd) f_k0 = 0, f_n0 += 64;
    }
    async_commit();
  };
  __syncthreads();  // (the ring's previous readers are done; a resident A is complete)
#pragma unroll 1
  for (int j = 0; j < Stages - 1; ++j) fill_next();
  float acc[4][4] = {};
  const int ma = wm + g, mb = ma + 8;
  const float* const ar = S + (resident ? a_at : 0) + ma * lda;  // a resident A's rows ma and ma + 8
  int k0 = 0, n0 = 0, st = 0;  // this job's slab, n-tile and stage
#pragma unroll 1
  for (int j = 0; j < jobs; ++j) {
    async_wait<Stages - 2>();  // this thread's pieces of slab j are in
    __syncthreads();           // everyone's are; and slab j − 1's stage has been read by all
    fill_next();
    const float* As = ring + st * SF;
    const float* Bs = As + BO;
    const int steps = (Kd - k0 < ring_tk ? Kd - k0 + 7 : ring_tk) / 8;  // (the slab's zeros past Kd skip)
    const auto load = [&](int kk, float (&fa)[4], float (&fb)[4][2]) {
      const int ka = kk + t, kb = ka + 4;
      if (resident) {  // (A past Kd read as zeros, never from the tile)
        const int ga = k0 + ka, gb = k0 + kb;
        fa[0] = ga < Kd ? ar[ga] : 0.f, fa[1] = ga < Kd ? ar[8 * lda + ga] : 0.f;
        fa[2] = gb < Kd ? ar[gb] : 0.f, fa[3] = gb < Kd ? ar[8 * lda + gb] : 0.f;
      } else {
        fa[0] = As[ma * ring_ld + ka], fa[1] = As[mb * ring_ld + ka];
        fa[2] = As[ma * ring_ld + kb], fa[3] = As[mb * ring_ld + kb];
      }
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const int n = wn + 8 * i + g;
        fb[i][0] = Bs[n * ring_ld + ka], fb[i][1] = Bs[n * ring_ld + kb];
      }
    };
    // step s + 1's fragments load before step s's mma (the same values reach the same mma in the same order)
    float fa[4], fb[4][2];
    load(0, fa, fb);
#pragma unroll 1
    for (int s = 0; s < steps; ++s) {
      float na[4], nb[4][2];
      load(s + 1 < steps ? 8 * (s + 1) : 8 * s, na, nb);  // (the last step reloads its own: inside the slab)
      strip_step<Prec>(acc, fa, fb);
#pragma unroll
      for (int x = 0; x < 4; ++x) fa[x] = na[x];
#pragma unroll
      for (int i = 0; i < 4; ++i) fb[i][0] = nb[i][0], fb[i][1] = nb[i][1];
    }
    st = st + 1 == Stages ? 0 : st + 1;
    k0 += ring_tk;
    if (k0 >= Kd) {  // the n-tile is done
      if (j == jobs - 1) __syncthreads();  // (out may write over the ring: every warp is past its last read)
      apply_tile_out<Decays>(out, M, N, wm + g, n0 + wn + 2 * t, acc);
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int x = 0; x < 4; ++x) acc[i][x] = 0.f;
      k0 = 0, n0 += 64;
    }
  }
  async_wait<0>();  // (only empty groups are left)
  __syncthreads();
}

}  // namespace linea::cuda_detail::bwd
