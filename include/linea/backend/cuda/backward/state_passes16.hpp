// linea/backend/cuda/backward/state_passes16.hpp — phases 2 and 3 (staged_state_passes.hpp's two passes, the same
// chunk recurrences, the same workspace in and out) for 16-bit inputs and scalar decays, in the forward kernel's
// style (delta_pipeline_kernel.hpp): bf16 operands on mma.sync m16n8k16 with fp32 accumulation, the running state in
// fp32 accumulator registers, a bf16 copy of it in shared memory as the next product's operand.
//
//   forward   h_c → w.h;  h ← γ_L h
//     product 1   U_new = U − W h                        (erasing updates; U_new = V otherwise)
//     product 2   h += Kᵀ (F ⊙ U_new)                    (F_s = exp(G_L − G_s) folded into U_new's bf16 copy)
//   reverse   Y_c (phase 1's, in dh's slot) read; dh_c → w.dh;  dh ← γ_L dh + Y
//     product 1   dU = s Pᵀ dO + F ⊙ (K dh_c)             (F folded into the epilogue, a factor per row)
//     product 2   dh += Wᵀ (−dU)                          (erasing updates; −dU's bf16 copy)
//
// Ownership: product 2's accumulators are the state. Warp w owns key rows 16w .. 16w + 15 and every value column of
// the tile (NT2 = BV / 8 n-tiles: 4 · NT2 floats a thread, 64 at BV = 128), so the state never leaves registers; after
// product 2 each owner writes its elements' bf16 copy (hi and lo, below) for product 1 of the next chunk, and h_c / dh_c
// to the workspace from the same registers. Product 1 (64 rows × BV) runs on 4 × 2 warps, 16 rows × BV/2 each.
//
// Precision (Terms): each operand x = hi + lo, both bf16 (lo = bf16(x − hi)); Terms = 3 (the default) multiplies
// lo·hi + hi·lo + hi·hi (≈ 2⁻¹⁶ relative, inter_grad_kernel.hpp's choice for the same reason: the decay gradients'
// cancellations keep float32-level inputs), Terms = 2 drops the A operand's lo (the workspace's W and k rounded to
// bf16 once), Terms = 1 is one bf16 product. The B operands (the state, U_new's and dU's copies) are ours: their hi
// and lo are stored once in shared memory (ldmatrix). The A operands (W, k: float32 in the workspace) are read as
// float32 from the cp.async tiles and split in registers as the fragments are formed (cp.async cannot convert, and a
// conversion pass would put another barrier on the chain). bf16, not fp16, for fp16 inputs too: the state and U_new
// are unnormalised sums (β up to 2, no decay for delta) and e^−20 gates make tiny ones; bf16 has float32's range,
// and the split restores the mantissa fp16 would have added.
//
// Per-key decays (PerKey: kda, gdn2, gla): phase 1's Kd_s = k_s ⊙ exp(G_L − G_s) takes k's place as the A operand
// (F is in it, so U_new's copy and product 1's epilogue take F = 1) and the state's rows d are carried by gL_d =
// exp(G_L,d) instead of γ_L (staged_state_passes.hpp's per-key form, the same recurrences): `chunk_decays` and
// `key_rows` below are the only places the two kinds differ.
//
// Pipelining (as staged_state_passes.hpp): a chunk's float32 operands are two cp.async groups, A (G, the product-1
// operand, U / V / s Pᵀ dO) issued during product 2 of the chunk before, B (the product-2 operand: k forward, W
// reverse) during product 1. Three barriers a chunk: A landed; product 1's output written (and B landed); product 2
// done (B's buffer free).
// Shared-memory rows: float32 tiles read row-wise as float2 pairs ≡ 8 (mod 32) floats, read transposed ≡ 4; bf16
// tiles BV + 8 elements (rows 16 bytes apart modulo 128: conflict-free ldmatrix).
#pragma once
#include <cuda_bf16.h>

#include <cstdint>

#include "../mma.hpp"
#include "async_copy.hpp"

namespace linea::cuda_detail::bwd {

#ifdef LINEA_BWD_STATE16_TERMS
inline constexpr int state16_terms = LINEA_BWD_STATE16_TERMS;  // bench/cuda/grad_ab.cu's A/B builds, not a user option
#else
inline constexpr int state16_terms = 3;
#endif

// A chunk's decay operand in shared memory: G_c (CL log decays) for scalar decays, gL_c (K factors) for per-key ones.
template <bool PerKey>
inline constexpr int decay_floats = PerKey ? max_kv : CL;

template <int BV_, int Terms_, bool PerKey = false>
struct state16_shape {
  static constexpr int BV = BV_, Terms = Terms_;
  static_assert(BV == 16 || BV == 32 || BV == 64 || BV == 128, "state16: 16, 32, 64 or 128 value columns");
  static_assert(Terms >= 1 && Terms <= 3, "state16: 1, 2 or 3 bf16 products a step");
  static constexpr int NT1 = BV / 16, NT2 = BV / 8;  // n-tiles of 8 a warp: product 1 (4 × 2 warps), product 2
  static constexpr int ld_row = max_kv + 8, ld_col = max_kv + 4, ld_in = BV + 8, ldb = BV + 8;
  static constexpr int lo = Terms >= 2 ? 1 : 0;  // (bf16 lo copies of the B operands)
  // float32, in floats: the [CL][K] tile read row-wise, the one read transposed, the [CL][BV] input, G twice
  static constexpr int row_at = 0, col_at = row_at + CL * ld_row, in_at = col_at + CL * ld_col,
                       g_at = in_at + CL * ld_in, f32_end = g_at + 2 * decay_floats<PerKey>;
  // bf16, in elements from f32_end: the state's copy [K][ldb] (hi, lo), product 1's output [CL][ldb] (hi, lo)
  static constexpr int h_at = 0, hl_at = h_at + max_kv * ldb, u_at = hl_at + lo * max_kv * ldb, ul_at = u_at + CL * ldb,
                       b16_end = ul_at + lo * CL * ldb;
  static constexpr std::size_t bytes = sizeof(float) * f32_end + 2 * std::size_t(b16_end);
  static constexpr int ctas_per_sm = 2 * (bytes + 1024) <= 228 * 1024 ? 2 : 1;
  static_assert(bytes + 1024 <= 228 * 1024, "state16: one CTA must fit");
  static_assert(f32_end % 4 == 0 && (max_kv * ldb) % 8 == 0 && (CL * ldb) % 8 == 0, "state16: 16-byte aligned tiles");
};

namespace state16_detail {

__device__ __forceinline__ std::uint32_t bits(__nv_bfloat162 p) { return *reinterpret_cast<std::uint32_t*>(&p); }

// (x0, x1) as a bf16 pair hi, and lo = their remainders rounded to bf16 (Lo: else lo is left alone).
template <bool Lo>
__device__ __forceinline__ void split2(float x0, float x1, std::uint32_t& hi, std::uint32_t& lo) {
  const __nv_bfloat162 h = __floats2bfloat162_rn(x0, x1);
  hi = bits(h);
  if constexpr (Lo) lo = bits(__floats2bfloat162_rn(x0 - __low2float(h), x1 - __high2float(h)));
}

// A fragment (16 rows from m0, k from k0) of a float32 tile: RowWise A(m, k) = t[m·ld + k] (float2 pairs), else
// A(m, k) = t[k·ld + m]. Lo: also the lo parts.
template <bool RowWise, bool Lo>
__device__ __forceinline__ void a_frag(std::uint32_t (&hi)[4], std::uint32_t (&lo)[4], const float* t, int ld, int m0,
                                       int k0) {
  const int lane = threadIdx.x & 31, g = lane >> 2, q = lane & 3;
  const int m = m0 + g, k = k0 + 2 * q;
  float x[8];  // (m, k), (m, k+1), (m+8, k), (m+8, k+1), (m, k+8), (m, k+9), (m+8, k+8), (m+8, k+9)
  if constexpr (RowWise) {
    const float2 p0 = *reinterpret_cast<const float2*>(t + m * ld + k);
    const float2 p1 = *reinterpret_cast<const float2*>(t + (m + 8) * ld + k);
    const float2 p2 = *reinterpret_cast<const float2*>(t + m * ld + k + 8);
    const float2 p3 = *reinterpret_cast<const float2*>(t + (m + 8) * ld + k + 8);
    x[0] = p0.x, x[1] = p0.y, x[2] = p1.x, x[3] = p1.y, x[4] = p2.x, x[5] = p2.y, x[6] = p3.x, x[7] = p3.y;
  } else {
    x[0] = t[k * ld + m], x[1] = t[(k + 1) * ld + m], x[2] = t[k * ld + m + 8], x[3] = t[(k + 1) * ld + m + 8];
    x[4] = t[(k + 8) * ld + m], x[5] = t[(k + 9) * ld + m], x[6] = t[(k + 8) * ld + m + 8],
    x[7] = t[(k + 9) * ld + m + 8];
  }
#pragma unroll
  for (int i = 0; i < 4; ++i) split2<Lo>(x[2 * i], x[2 * i + 1], hi[i], lo[i]);
}

__device__ __forceinline__ void ldmatrix_x2_trans(std::uint32_t (&r)[2], const void* row) {
  const std::uint32_t s = static_cast<std::uint32_t>(__cvta_generic_to_shared(row));
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0,%1}, [%2];\n" : "=r"(r[0]), "=r"(r[1]) : "r"(s));
}

// B fragments of NT n-tiles (columns n0 ..) at k0 .. k0 + 15 of a bf16 tile stored [k][n] (ldmatrix .trans: lane l
// gives row k0 + l % 8 + 8·((l / 8) % 2) of the 8 columns 8·(l / 16) past the pair's first).
template <int NT>
__device__ __forceinline__ void b_frags(std::uint32_t (&b)[NT][2], const __nv_bfloat16* t, int ld, int k0, int n0) {
  const int lane = threadIdx.x & 31, l8 = lane & 7, m = lane >> 3;
  const __nv_bfloat16* p = t + (k0 + l8 + 8 * (m & 1)) * ld + n0 + 8 * (m >> 1);
#pragma unroll
  for (int h = 0; h < NT / 2; ++h) {
    std::uint32_t r[4];
    ldmatrix_x4<true>(r, p + 16 * h);
    b[2 * h][0] = r[0], b[2 * h][1] = r[1], b[2 * h + 1][0] = r[2], b[2 * h + 1][1] = r[3];
  }
  if constexpr (NT % 2) {
    std::uint32_t r[2];
    ldmatrix_x2_trans(r, t + (k0 + l8 + 8 * (m & 1)) * ld + n0 + 16 * (NT / 2));
    b[NT - 1][0] = r[0], b[NT - 1][1] = r[1];
  }
}

// c[NT] += A · B over one k-step of 16 at Terms products (the small ones first).
template <int Terms, int NT>
__device__ __forceinline__ void mma_terms(float (&c)[NT][4], const std::uint32_t (&ahi)[4], const std::uint32_t (&alo)[4],
                                          const std::uint32_t (&bhi)[NT][2], const std::uint32_t (&blo)[NT][2]) {
#pragma unroll
  for (int i = 0; i < NT; ++i) {
    if constexpr (Terms >= 3) mma_regs<__nv_bfloat16>(c[i], alo, bhi[i]);
    if constexpr (Terms >= 2) mma_regs<__nv_bfloat16>(c[i], ahi, blo[i]);
    mma_regs<__nv_bfloat16>(c[i], ahi, bhi[i]);
  }
}

// How a chunk's decays enter the passes, from its decay operand in shared memory (G: decay_floats<PerKey> floats):
//   state(d)  the factor that carries the state's key row d across the chunk: γ_L = exp(G_L), or gL_d (per key)
//   write(r)  the factor of the chunk's row r in the state update (F_r = exp(G_L − G_r); 1 per key, where phase 1
//             folded it into Kd); 0 past the chunk's L rows
template <bool PerKey>
struct chunk_decays {
  const float* G;
  int L;
  float GL = 0.f, gamma = 0.f;
  __device__ __forceinline__ chunk_decays(const float* G_, int L_) : G(G_), L(L_) {
    if constexpr (!PerKey) GL = G[L - 1], gamma = __expf(GL);
  }
  __device__ __forceinline__ float state(int d) const {
    if constexpr (PerKey) return G[d];
    else return gamma;
  }
  __device__ __forceinline__ float write(int r) const {
    if constexpr (PerKey) return r < L ? 1.f : 0.f;
    else return r < L ? __expf(GL - G[r]) : 0.f;
  }
};

// The chunk's key operand of the passes' products, a [CL][K] float32 tile in global memory: k_c (the float32 keys,
// token-major, row stride H·K) for scalar decays, phase 1's Kd_c (chunk-major, row stride K) for per-key ones.
struct key_rows {
  const float* p;
  index_t stride;
};
template <bool PerKey>
__device__ __forceinline__ key_rows chunk_keys(const work& w, index_t c, const chunk_info& ci, index_t hv, index_t h) {
  if constexpr (PerKey) return {w.Kd + w.ch(c, hv) * CL * w.K, w.K};
  else return {w.k + (w.token(ci.bt, ci.t0) * w.H + h) * w.K, w.H * w.K};
}
// The chunk's decay operand into dst (decay_floats<PerKey> floats): G_c, or gL_c.
template <bool PerKey>
__device__ __forceinline__ void fetch_decays(float* dst, const work& w, index_t c, index_t hv) {
  if constexpr (PerKey) async_tile<1, max_kv>(dst, max_kv, w.gL + w.ch(c, hv) * w.K, 0, 1, int(w.K));
  else async_tile<1, CL>(dst, CL, w.Gc + w.ch(c, hv) * CL, 0, 1, CL);
}

// c[NT] += A(m0 .., k) · B(k, n0 ..) for k < 16·ksteps: A a float32 tile (RowWise or transposed), B bf16 [k][n]
// (hi, and lo where Terms ≥ 2). Narrow strips (NT ≤ 4: the 16- and 32-column tiles of long sequences, whose chain of
// chunks is latency-bound) give the lo products accumulators of their own, added at the end, so that a k-step's
// Terms mma do not wait on each other; wide strips keep one chain (registers: the state is 4·NT of them).
template <int Terms, int NT, bool RowWise>
__device__ __forceinline__ void warp_product(float (&c)[NT][4], const float* a, int lda, int m0, const __nv_bfloat16* bh,
                                             const __nv_bfloat16* bl, int ldb, int n0, int ksteps) {
  constexpr bool split = Terms >= 2 && NT <= 4;
  float cl[split ? NT : 1][4] = {};
  for (int s = 0; s < ksteps; ++s) {
    std::uint32_t ahi[4], alo[4] = {}, bhi[NT][2], blo[NT][2];
    a_frag<RowWise, Terms >= 3>(ahi, alo, a, lda, m0, 16 * s);
    b_frags<NT>(bhi, bh, ldb, 16 * s, n0);
    if constexpr (Terms >= 2) b_frags<NT>(blo, bl, ldb, 16 * s, n0);
    if constexpr (split) {
#pragma unroll
      for (int i = 0; i < NT; ++i) {
        if constexpr (Terms >= 3) mma_regs<__nv_bfloat16>(cl[i], alo, bhi[i]);
        mma_regs<__nv_bfloat16>(cl[i], ahi, blo[i]);
        mma_regs<__nv_bfloat16>(c[i], ahi, bhi[i]);
      }
    } else {
      mma_terms<Terms>(c, ahi, alo, bhi, blo);
    }
  }
  if constexpr (split)
#pragma unroll
    for (int i = 0; i < NT; ++i)
#pragma unroll
      for (int x = 0; x < 4; ++x) c[i][x] += cl[i][x];
}

// The bf16 copy (hi, lo) of the state's accumulators (rows d0, d0 + 8; columns 8i + 2q, + 1) into [K][ldb] tiles.
template <int Terms, int NT>
__device__ __forceinline__ void store_state(const float (&c)[NT][4], __nv_bfloat16* hi, __nv_bfloat16* lo, int ld,
                                            int d0) {
  const int q = threadIdx.x & 3;
#pragma unroll
  for (int i = 0; i < NT; ++i)
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      std::uint32_t h, l;
      split2<Terms >= 2>(c[i][2 * half], c[i][2 * half + 1], h, l);
      const int e = (d0 + 8 * half) * ld + 8 * i + 2 * q;
      *reinterpret_cast<std::uint32_t*>(hi + e) = h;
      if constexpr (Terms >= 2) *reinterpret_cast<std::uint32_t*>(lo + e) = l;
    }
}

// A pass's starting state (S_0 forward, dL/dS_T reverse; zeros where absent) into the state's accumulators: rows d0,
// d0 + 8; columns 8i + 2q, + 1 of the tile at value column jt (bv of them valid).
template <int NT>
__device__ __forceinline__ void load_state(float (&c)[NT][4], const view<const float, 4>& S, index_t n, index_t hv,
                                           index_t jt, int K, int bv, int d0) {
  const int q = threadIdx.x & 3;
#pragma unroll
  for (int i = 0; i < NT; ++i)
#pragma unroll
    for (int x = 0; x < 4; ++x) {
      const int d = d0 + 8 * (x >> 1), j = 8 * i + 2 * q + (x & 1);
      c[i][x] = S.ptr && d < K && j < bv ? S(n, hv, d, jt + j) : 0.f;
    }
}

// The reverse pass's dS_0 (dL/d(initial state)) from the accumulators, where it is asked for: load_state's layout.
template <int NT>
__device__ __forceinline__ void store_initial_gradient(const float (&c)[NT][4], const view<float, 4>& dS0, index_t n,
                                                       index_t hv, index_t jt, int K, int bv, int d0) {
  const int q = threadIdx.x & 3;
  if (dS0.ptr)
#pragma unroll
    for (int i = 0; i < NT; ++i)
#pragma unroll
      for (int x = 0; x < 4; ++x) {
        const int d = d0 + 8 * (x >> 1), j = 8 * i + 2 * q + (x & 1);
        if (d < K && j < bv) dS0(n, hv, d, jt + j) = c[i][x];
      }
}

// The state across chunk c, both kernel forms (Store: the state at the chunk's end goes to the workspace slab at p
// from here; else the caller stored it): forward h_c → w.h, then h ← γ_L h (per key: gL ⊙ h); reverse (Y: Y_c, phase
// 1's s (Γ ⊙ Q)ᵀ dO) dh_c → w.dh, then dh ← γ_L dh + Y.
template <bool Store, int NT, bool PerKey>
__device__ __forceinline__ void carry_state(float (&c)[NT][4], float* p, index_t V, int K, int bv, int d0,
                                            const chunk_decays<PerKey>& dec) {
  const int q = threadIdx.x & 3;
#pragma unroll
  for (int i = 0; i < NT; ++i)
#pragma unroll
    for (int x = 0; x < 4; ++x) {
      const int d = d0 + 8 * (x >> 1), j = 8 * i + 2 * q + (x & 1);
      if (Store && d < K && j < bv) p[d * V + j] = c[i][x];
      c[i][x] *= dec.state(d);
    }
}
template <bool Store, int NT, bool PerKey>
__device__ __forceinline__ void carry_adjoint(float (&c)[NT][4], const float (&y)[NT][4], float* p, index_t V, int K,
                                              int bv, int d0, const chunk_decays<PerKey>& dec) {
  const int q = threadIdx.x & 3;
#pragma unroll
  for (int i = 0; i < NT; ++i)
#pragma unroll
    for (int x = 0; x < 4; ++x) {
      const int d = d0 + 8 * (x >> 1), j = 8 * i + 2 * q + (x & 1);
      if (Store && d < K && j < bv) p[d * V + j] = c[i][x];
      c[i][x] = fmaf(dec.state(d), c[i][x], y[i][x]);
    }
}

// Product 1 of both passes over the chunk's L rows, P = A · (the state's bf16 copy sH, sHl), with A the pass's
// float32 tile sA (Sh: the kernel's shape; this warp's 16 × BV/2 strip), and its epilogue: per entry, with u the
// sIn tile's entry and F the row's decay factor, x = value(F, p, u) is stored at out for phase 4, and where Copy its
// bf16 copy copy_of(F, x) (hi sU, lo sUl) is written as product 2's operand.
template <class Sh, bool Copy, bool PerKey, class Value, class CopyOf>
__device__ __forceinline__ void product1(const float* sA, const float* sIn, const __nv_bfloat16* sH,
                                         const __nv_bfloat16* sHl, __nv_bfloat16* sU, __nv_bfloat16* sUl, float* out,
                                         index_t V, int L, int bv, int ksK, const chunk_decays<PerKey>& dec,
                                         Value value, CopyOf copy_of) {
  constexpr int NT1 = Sh::NT1, LDB = Sh::ldb, BV = Sh::BV, Terms = Sh::Terms;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, q = lane & 3;
  const int wm = 16 * (warp & 3), wn = (BV / 2) * (warp >> 2);  // this warp's 16 × BV/2 strip
  float p[NT1][4] = {};
  if (wm < L) warp_product<Terms, NT1, true>(p, sA, Sh::ld_row, wm, sH, sHl, LDB, wn, ksK);
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    const int r = wm + g + 8 * half;
    const float F = dec.write(r);
#pragma unroll
    for (int i = 0; i < NT1; ++i) {
      const int j = wn + 8 * i + 2 * q;
      const float2 u = *reinterpret_cast<const float2*>(sIn + r * Sh::ld_in + j);
      const float x0 = value(F, p[i][2 * half], u.x), x1 = value(F, p[i][2 * half + 1], u.y);
      if (r < L && j < bv) out[r * V + j] = x0;
      if (r < L && j + 1 < bv) out[r * V + j + 1] = x1;
      if constexpr (Copy) {
        std::uint32_t hi, lo;
        split2<Terms >= 2>(copy_of(F, x0), copy_of(F, x1), hi, lo);
        *reinterpret_cast<std::uint32_t*>(sU + r * LDB + j) = hi;
        if constexpr (Terms >= 2) *reinterpret_cast<std::uint32_t*>(sUl + r * LDB + j) = lo;
      }
    }
  }
}

// The forward pass's product 1 and its output's bf16 copy (hi sU, lo sUl), product 2's operand: erasing updates
// U_new = U − W h (sW, sIn = U), stored at Un for phase 4, and the copy F ⊙ U_new; otherwise U_new = V (sIn) and
// the copy F ⊙ V.
template <class Sh, bool Erases, bool PerKey>
__device__ __forceinline__ void forward_new_values(const float* sW, const float* sIn, const __nv_bfloat16* sH,
                                                   const __nv_bfloat16* sHl, __nv_bfloat16* sU, __nv_bfloat16* sUl,
                                                   float* Un, index_t V, int L, int bv, int ksK,
                                                   const chunk_decays<PerKey>& dec) {
  constexpr int LDB = Sh::ldb, BV = Sh::BV, Terms = Sh::Terms;
  if constexpr (Erases) {
    product1<Sh, true>(sW, sIn, sH, sHl, sU, sUl, Un, V, L, bv, ksK, dec,
                       [](float, float p, float u) { return u - p; }, [](float F, float x) { return F * x; });
  } else {
    for (int e = threadIdx.x; e < CL * BV / 2; e += threads) {
      const int r = e / (BV / 2), j = 2 * (e % (BV / 2));
      const float F = dec.write(r);
      std::uint32_t hi, lo;
      split2<Terms >= 2>(F * sIn[r * Sh::ld_in + j], F * sIn[r * Sh::ld_in + j + 1], hi, lo);
      *reinterpret_cast<std::uint32_t*>(sU + r * LDB + j) = hi;
      if constexpr (Terms >= 2) *reinterpret_cast<std::uint32_t*>(sUl + r * LDB + j) = lo;
    }
  }
}

// The reverse pass's product 1: dU = s Pᵀ dO (phase 1's, the sIn tile) + F ⊙ (K dh) (per key: Kd dh; sK the key
// tile, sH, sHl dh's bf16 copy), stored at dU for phase 4; for erasing updates also −dU's bf16 copy (hi sU, lo sUl),
// product 2's operand.
template <class Sh, bool Erases, bool PerKey>
__device__ __forceinline__ void reverse_value_adjoints(const float* sK, const float* sIn, const __nv_bfloat16* sH,
                                                       const __nv_bfloat16* sHl, __nv_bfloat16* sU,
                                                       __nv_bfloat16* sUl, float* dU, index_t V, int L, int bv, int ksK,
                                                       const chunk_decays<PerKey>& dec) {
  product1<Sh, Erases>(sK, sIn, sH, sHl, sU, sUl, dU, V, L, bv, ksK, dec,
                       [](float F, float p, float u) { return fmaf(F, p, u); }, [](float, float x) { return -x; });
}

}  // namespace state16_detail

template <int BV, bool Erases, int Terms, bool PerKey = false>
__global__ void __launch_bounds__(threads, state16_shape<BV, Terms, PerKey>::ctas_per_sm)
    state16_forward_kernel(const work w, const view<const float, 4> S0) {
  namespace sd = state16_detail;
  using sh = state16_shape<BV, Terms, PerKey>;
  constexpr int NT2 = sh::NT2, LDB = sh::ldb;
  const index_t jt = index_t(blockIdx.x) * BV, hv = blockIdx.y, n = blockIdx.z, h = hv / w.G;
  const int K = int(w.K), bv = int(w.V - jt < BV ? w.V - jt : BV), tid = threadIdx.x, warp = tid >> 5,
            g = (tid & 31) >> 2;
  extern __shared__ __align__(16) float sm[];
  float *sW = sm + sh::row_at, *sK = sm + sh::col_at, *sIn = sm + sh::in_at, *sG = sm + sh::g_at;
  __nv_bfloat16* b16 = reinterpret_cast<__nv_bfloat16*>(sm + sh::f32_end);
  __nv_bfloat16 *sH = b16 + sh::h_at, *sHl = b16 + sh::hl_at, *sU = b16 + sh::u_at, *sUl = b16 + sh::ul_at;
  const seq_chunks sc = w.seqs[n];
  const index_t end = sc.first + sc.count;
  const auto fetch_a = [&](index_t c, const chunk_info& ci) {  // G_c (gL_c); W_c and U_c, or V_c
    if (c < end) {
      sd::fetch_decays<PerKey>(sG + (c & 1) * decay_floats<PerKey>, w, c, hv);
      if constexpr (Erases) {
        async_tile<CL, max_kv>(sW, sh::ld_row, w.W + w.ch(c, hv) * CL * w.K, w.K, ci.len, K);
        async_tile<CL, BV>(sIn, sh::ld_in, w.U + w.ch(c, hv) * CL * w.V + jt, w.V, ci.len, bv);
      } else {
        async_tile<CL, BV>(sIn, sh::ld_in, w.v + (w.token(ci.bt, ci.t0) * w.HV + hv) * w.V + jt, w.HV * w.V, ci.len,
                           bv);
      }
    }
    async_commit();
  };
  const auto fetch_b = [&](index_t c, const chunk_info& ci) {  // k_c (Kd_c)
    if (c < end) {
      const sd::key_rows kr = sd::chunk_keys<PerKey>(w, c, ci, hv, h);
      async_tile<CL, max_kv>(sK, sh::ld_col, kr.p, kr.stride, ci.len, K);
    }
    async_commit();
  };
  // (the copies never write columns past K or V: zeros, once)
  for (int e = tid; e < sh::f32_end; e += threads) sm[e] = 0.f;
  const int d0 = 16 * warp + g;  // this thread's state rows d0, d0 + 8; columns 8i + 2q, + 1
  float acc[NT2][4];
  sd::load_state(acc, S0, n, hv, jt, K, bv, d0);
  sd::store_state<Terms>(acc, sH, sHl, LDB, d0);
  __syncthreads();  // (the zeros before any copy lands)
  chunk_info cur{};
  if (sc.count) cur = w.chunk[sc.first];
  fetch_a(sc.first, cur);
  fetch_b(sc.first, cur);
  const int ksK = (K + 15) / 16;
  for (index_t c = sc.first; c < end; ++c) {
    const chunk_info next = c + 1 < end ? w.chunk[c + 1] : chunk_info{};
    const int L = cur.len;
    async_wait<1>();  // A(c)
    __syncthreads();  // (and the state's copy)
    const sd::chunk_decays<PerKey> dec(sG + (c & 1) * decay_floats<PerKey>, L);
    sd::carry_state<true>(acc, w.h + w.ch(c, hv) * w.K * w.V + jt, w.V, K, bv, d0, dec);  // h_c; γ_L h (gL ⊙ h)
    // product 1: U_new = U − W h (stored for phase 4), U_new's copy F ⊙ U_new; or V's copy F ⊙ V
    sd::forward_new_values<sh, Erases>(sW, sIn, sH, sHl, sU, sUl, Erases ? w.U_new + w.ch(c, hv) * CL * w.V + jt : nullptr,
                                       w.V, L, bv, ksK, dec);
    async_wait<0>();  // B(c)
    __syncthreads();  // (U_new's copy; W, U, V and the other G buffer are free)
    fetch_a(c + 1, next);
    // product 2: h += Kᵀ (F ⊙ U_new)   (per key: Kdᵀ U_new)
    if (16 * warp < K) sd::warp_product<Terms, NT2, false>(acc, sK, sh::ld_col, 16 * warp, sU, sUl, LDB, 0, (L + 15) / 16);
    __syncthreads();  // (k and U_new's copy read)
    sd::store_state<Terms>(acc, sH, sHl, LDB, d0);
    fetch_b(c + 1, next);
    cur = next;
  }
  async_wait<0>();
}

template <int BV, bool Erases, int Terms, bool PerKey = false>
__global__ void __launch_bounds__(threads, state16_shape<BV, Terms, PerKey>::ctas_per_sm)
    state16_reverse_kernel(const work w, const view<const float, 4> dST, const view<float, 4> dS0) {
  namespace sd = state16_detail;
  using sh = state16_shape<BV, Terms, PerKey>;
  constexpr int NT2 = sh::NT2, LDB = sh::ldb;
  const index_t jt = index_t(blockIdx.x) * BV, hv = blockIdx.y, n = blockIdx.z, h = hv / w.G;
  const int K = int(w.K), bv = int(w.V - jt < BV ? w.V - jt : BV), tid = threadIdx.x, warp = tid >> 5,
            lane = tid & 31, g = lane >> 2, q = lane & 3;
  extern __shared__ __align__(16) float sm[];
  float *sK = sm + sh::row_at, *sW = sm + sh::col_at, *sIn = sm + sh::in_at, *sG = sm + sh::g_at;
  __nv_bfloat16* b16 = reinterpret_cast<__nv_bfloat16*>(sm + sh::f32_end);
  __nv_bfloat16 *sH = b16 + sh::h_at, *sHl = b16 + sh::hl_at, *sU = b16 + sh::u_at, *sUl = b16 + sh::ul_at;
  const seq_chunks sc = w.seqs[n];
  const index_t first = sc.first;
  const auto fetch_a = [&](index_t c, const chunk_info& ci) {  // G_c, k_c (gL_c, Kd_c), and phase 1's s Pᵀ dO
    if (c >= first) {
      sd::fetch_decays<PerKey>(sG + (c & 1) * decay_floats<PerKey>, w, c, hv);
      const sd::key_rows kr = sd::chunk_keys<PerKey>(w, c, ci, hv, h);
      async_tile<CL, max_kv>(sK, sh::ld_row, kr.p, kr.stride, ci.len, K);
      async_tile<CL, BV>(sIn, sh::ld_in, w.dU + w.ch(c, hv) * CL * w.V + jt, w.V, ci.len, bv);
    }
    async_commit();
  };
  const auto fetch_b = [&](index_t c, const chunk_info& ci) {  // W_c
    if (Erases && c >= first) async_tile<CL, max_kv>(sW, sh::ld_col, w.W + w.ch(c, hv) * CL * w.K, w.K, ci.len, K);
    async_commit();
  };
  for (int e = tid; e < sh::f32_end; e += threads) sm[e] = 0.f;
  const int d0 = 16 * warp + g;  // this thread's dh rows d0, d0 + 8; columns 8i + 2q, + 1
  float acc[NT2][4];
  sd::load_state(acc, dST, n, hv, jt, K, bv, d0);
  sd::store_state<Terms>(acc, sH, sHl, LDB, d0);
  __syncthreads();
  const index_t last = sc.first + sc.count - 1;
  chunk_info cur{};
  if (sc.count) cur = w.chunk[last];
  fetch_a(last, cur);
  fetch_b(last, cur);
  const int ksK = (K + 15) / 16;
  for (index_t c = last; c >= first; --c) {
    const chunk_info prev = c > first ? w.chunk[c - 1] : chunk_info{};
    const int L = cur.len;
    float* dhc = w.dh + w.ch(c, hv) * w.K * w.V + jt;
    float y[NT2][4];  // Y = s (Γ ⊙ Q)ᵀ dO, phase 1's, in dh's slot: read before this thread stores dh over it
#pragma unroll
    for (int i = 0; i < NT2; ++i)
#pragma unroll
      for (int x = 0; x < 4; ++x) {
        const int d = d0 + 8 * (x >> 1), j = 8 * i + 2 * q + (x & 1);
        y[i][x] = d < K && j < bv ? dhc[d * w.V + j] : 0.f;
      }
    async_wait<1>();  // A(c)
    __syncthreads();  // (and dh's copy)
    const sd::chunk_decays<PerKey> dec(sG + (c & 1) * decay_floats<PerKey>, L);
    sd::carry_adjoint<true>(acc, y, dhc, w.V, K, bv, d0, dec);  // dh at the chunk's end for phase 4, then γ_L dh + Y
    // product 1: dU = s Pᵀ dO + F ⊙ (K dh) (per key: Kd dh); −dU's copy
    sd::reverse_value_adjoints<sh, Erases>(sK, sIn, sH, sHl, sU, sUl, w.dU + w.ch(c, hv) * CL * w.V + jt, w.V, L, bv,
                                           ksK, dec);
    async_wait<0>();  // B(c)
    __syncthreads();  // (−dU's copy; k, s Pᵀ dO and the other G buffer are free; dh's copy read)
    fetch_a(c - 1, prev);
    if constexpr (Erases) {  // product 2: dh += Wᵀ (−dU)
      if (16 * warp < K)
        sd::warp_product<Terms, NT2, false>(acc, sW, sh::ld_col, 16 * warp, sU, sUl, LDB, 0, (L + 15) / 16);
      __syncthreads();  // (W read)
    }
    sd::store_state<Terms>(acc, sH, sHl, LDB, d0);
    fetch_b(c - 1, prev);
    cur = prev;
  }
  async_wait<0>();
  sd::store_initial_gradient(acc, dS0, n, hv, jt, K, bv, d0);
}

}  // namespace linea::cuda_detail::bwd
