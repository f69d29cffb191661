// linea/backend/cuda/backward/chunk_grad16_kernel.hpp — phase 4's in-chunk remainder for 16-bit inputs and scalar
// decays (issue #14, intra14): what chunk_grad_kernel.hpp's Inter path does after inter_grad_kernel.hpp (the products
// over V: dq's and dk's inter-chunk terms in w.dq / w.dk, dP in w.dP_inter) and, for the erasing rules,
// ut_grad_kernel.hpp (dBv in w.dBv_inter, dBk in w.dW_inter, M in w.M_inter) — the same formulas
// (chunk_grad_kernel.hpp's header, docs/math/backward.md §6):
//
//   dv_r = w_r dBv_r (erase) or dU_r;   dw_r = v_r·dBv_r
//   x = γ ⊙ dBk + M K,  y = Mᵀ (E K):   dk += E x + y;   de_s += k_s·x_s;   dG_s += e_s k_s·x_s − k_s·y_s
//   N = dP ⊙ D (s ≤ r);                  dG_i += Σ_t X_it − Σ_t X_ti,  X = dP ⊙ P (t < i)
//   dq = (its term) + N K;  dk += Nᵀ Q;  dG_r += q_r·(dq's term)_r;  z_s = k_s·(dk's term)_s: dG_s −= z_s, dG_L += z_s
//   (s < L − 1)
//   dG_L += γ_L ⟨h, dh⟩;   dg_t = Σ_{r ≥ t} dG_r
//
// What differs is how: chunk_grad staged every operand as a float32 tile (~200 KB: one CTA an SM, every product
// 3xTF32). Here the four L × K × L products (M K, Mᵀ E K, N K, Nᵀ Q) run on mma.sync m16n8k16 with bf16 operands,
// each split x = hi + lo (both bf16) and multiplied lo·hi + hi·lo + hi·hi (inter_grad_kernel's Terms = 3, ≈ 2⁻¹⁶
// relative per product). The shared memory holds only those operands, in bf16 hi/lo tiles laid out so that every
// mma fragment is one 32-bit load: Kᵀ and Qᵀ ([key][token]), M and Mᵀ E, later N (and, TransN off, Nᵀ)
// ([token][token], formed from the float32 workspace as they are staged) — 110 KB, two CTAs an SM. Everything elementwise (dBk, the dq and
// dk terms, k and q for the row sums, dBv, v) is read from global memory into the mma's accumulator layout, so the
// products' outputs stay in registers: dk accumulates x, y and Nᵀ Q in one register tile and leaves from it, dq
// likewise. The per-row sums (dG, de) are reduced over the four lanes that hold a row's columns, then added to
// shared memory (two warps a row). Each staged tile's loads are all issued before its first store (k's and q's
// together, N's two orientations ahead of the barrier that frees M's tiles): the kernel is latency-bound.
// ⟨h, dh⟩ is read here (128 KB a CTA, 32 loads of each in flight per thread) unless hdh_in_inter
// (inter_grad_kernel.hpp) hands over its key tiles' sums: measured slower overall (bench/cuda/README.md, intra14).
// gd18 (issue #14; each a template option, on by default, bench/cuda/README.md "gd18"): fewer global round trips and
// load instructions — the elementwise operands as float2 pairs (⟨h, dh⟩ as float4) where aligned, the row sums' k and
// q from the staged tiles; Nᵀ read from N's tile by ldmatrix .trans (no transposed copy of N, whose loads were a
// second pass over dP and P); and the products skip the k-steps where their triangular A operand (M, N lower; Mᵀ E,
// Nᵀ upper) is zero. (Two more options measured slower and are off: dq's term loaded during the Nᵀ Q product, Mᵀ E
// formed from M's shared tile.)
// Layouts: the warp w owns the 16 × 64 output strip rows 16 (w mod 4).., columns 64 ⌊w / 4⌋..; its lane (g, t)
// holds rows g, g + 8 and columns 8 nt + 2 t + u (nt < 8, u < 2) of it (the m16n8 accumulator).
// Preconditions: a scalar-decay rule (or none), 16-bit inputs (plan.hpp carved the inter scratch), K, V ≤ max_kv,
// inter_grad_kernel (with Hdh = hdh_in_inter for decaying rules; and, erasing rules, ut_grad_launch) run before on
// the same workspace.
#pragma once
#include <cstdint>
#include <type_traits>

#include <cuda_bf16.h>

#include "../mma.hpp"
#include "direct_grads.hpp"
#include "inter_grad_kernel.hpp"
#include "../source.hpp"

namespace linea::cuda_detail::bwd {

struct grad16_shape {
  static constexpr int ld = CL + 8;  // bf16 row stride (144 bytes ≡ 16 mod 128): conflict-free fragment loads
  static constexpr int key_part = max_kv * ld, cc_part = CL * ld;  // one hi or lo part: [key][token], [token][token]
  // bf16 tiles (hi, then lo a part further): Kᵀ, Qᵀ, A (M, then N), At (Mᵀ E, then Nᵀ)
  static constexpr int kt_at = 0, qt_at = kt_at + 2 * key_part, a_at = qt_at + 2 * key_part, at_at = a_at + 2 * cc_part,
                       tiles = at_at + 2 * cc_part;
  // float rows after the tiles: G, γ, e, dG, de, dw (and two words of the scan)
  static constexpr int g_at = 0, gam_at = CL, e_at = 2 * CL, dg_at = 3 * CL, de_at = 4 * CL, dw_at = 5 * CL,
                       scan_at = 6 * CL, floats = 6 * CL + 4;
  static constexpr std::size_t bytes = sizeof(__nv_bfloat16) * tiles + sizeof(float) * floats;
  static_assert(sizeof(__nv_bfloat16) * tiles % 16 == 0, "chunk_grad16_kernel: aligned rows");
  static_assert(bytes + 1024 <= 228 * 1024 / 2, "chunk_grad16_kernel: two CTAs an SM");
  static constexpr int min_ctas = 2;
  static constexpr int batch = 16;      // loads in flight per thread where dv = dU streams through registers
  static constexpr int hdh_batch = 32;  // and for each of h, dh in ⟨h, dh⟩ (nothing else is live then)
};

namespace grad16_detail {

using sh = grad16_shape;

__device__ __forceinline__ std::uint32_t word(const __nv_bfloat16* p) {
  return *reinterpret_cast<const std::uint32_t*>(p);
}

// Two consecutive elements (x0, x1) of a tile row as hi (at p) and lo (at p + part) bf16 pairs (each pair one
// two-way conversion: the same roundings as two one-way ones).
__device__ __forceinline__ void store_pair(__nv_bfloat16* p, int part, float x0, float x1) {
  const __nv_bfloat162 h = __floats2bfloat162_rn(x0, x1);
  const __nv_bfloat162 l = __floats2bfloat162_rn(x0 - __low2float(h), x1 - __high2float(h));
  *reinterpret_cast<__nv_bfloat162*>(p) = h;
  *reinterpret_cast<__nv_bfloat162*>(p + part) = l;
}

// A tile's values in registers between their loads and their stores, so that the loads of several tiles are in
// flight at once (and ahead of a barrier where the tile is still being read).
//
// transposed_tile<Cols>: dst[c][2p + i] = f(2p + i, c) (i < 2) for c < Cols, p < CL / 2 — a matrix read along its rows
// (tokens), stored transposed. A warp's 32 pairs are 8 columns × 4 token pairs: global reads of 8 consecutive columns
// (a 32-byte sector) and shared stores to 32 distinct banks (a thread's pairs: column (e>>2 & 7) + 8 (e>>8), token
// pair (e & 3) + 4 (e>>5 & 7), e = thread + 256 i). With Sums (Cols = CL), load also calls col(c, Σ_r x(r, c)) for
// every column c, from one lane of the four that hold the pairs of one warp.
template <int Cols>
struct transposed_tile {
  static constexpr int per = Cols * CL / 2 / threads;
  float x[per][2];
  __device__ __forceinline__ static int pair(int i) {
    const int e = threadIdx.x + i * threads;
    return (e & 3) | (((e >> 5) & 7) << 2);
  }
  __device__ __forceinline__ static int column(int i) {
    const int e = threadIdx.x + i * threads;
    return ((e >> 2) & 7) | ((e >> 8) << 3);
  }
  template <bool Sums = false, class F, class X = int, class Col = int>
  __device__ __forceinline__ void load(F f, X x_of = {}, Col col = {}) {
    static_assert(!Sums || Cols == CL, "transposed_tile: column sums of a [CL][CL] matrix");
#pragma unroll
    for (int i = 0; i < per; ++i) {
      const int p = pair(i), c = column(i);
      x[i][0] = f(2 * p, c), x[i][1] = f(2 * p + 1, c);
      if constexpr (Sums) {
        float y = x_of(2 * p, c) + x_of(2 * p + 1, c);
        y += __shfl_xor_sync(0xffffffffu, y, 1), y += __shfl_xor_sync(0xffffffffu, y, 2);
        if ((threadIdx.x & 3) == 0) col(c, y);
      }
    }
  }
  __device__ __forceinline__ void store(__nv_bfloat16* dst, int part) const {
#pragma unroll
    for (int i = 0; i < per; ++i) store_pair(dst + column(i) * sh::ld + 2 * pair(i), part, x[i][0], x[i][1]);
  }
};

// row_tile: dst[r][2p + i] = f(r, 2p + i) for r, 2p + i < CL — a warp a row (r = warp + 8 i), a lane a column pair.
// With Sums, load also calls row(r, Σ_s x(r, s)) for every row, from its warp's lane 0. f and x_of either give one
// element or (returning float2) the pair at columns s, s + 1 (gd18: one 8-byte load where the source is aligned).
struct row_tile {
  static constexpr int per = CL * CL / 2 / threads;
  float x[per][2];
  template <class F>
  __device__ __forceinline__ static float2 pair_of(F f, int r, int s) {
    if constexpr (std::is_same_v<decltype(f(r, s)), float2>) return f(r, s);
    else return make_float2(f(r, s), f(r, s + 1));
  }
  // (Col given: also col(s, Σ of x(r, s) over this thread's rows) for its two columns s — partial column sums)
  template <bool Sums = false, class F, class X = int, class Row = int, class Col = int>
  __device__ __forceinline__ void load(F f, X x_of = {}, Row row = {}, Col col = {}) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    [[maybe_unused]] float c0 = 0.f, c1 = 0.f;
#pragma unroll
    for (int i = 0; i < per; ++i) {
      const int r = warp + i * (threads / 32);
      const float2 v = pair_of(f, r, 2 * lane);
      x[i][0] = v.x, x[i][1] = v.y;
      if constexpr (Sums) {
        const float2 xv = pair_of(x_of, r, 2 * lane);
        if constexpr (!std::is_same_v<Col, int>) c0 += xv.x, c1 += xv.y;
        float y = xv.x + xv.y;
#pragma unroll
        for (int o = 16; o; o >>= 1) y += __shfl_xor_sync(0xffffffffu, y, o);
        if (lane == 0) row(r, y);
      }
    }
    if constexpr (Sums && !std::is_same_v<Col, int>) col(2 * lane, c0), col(2 * lane + 1, c1);
  }
  __device__ __forceinline__ void store(__nv_bfloat16* dst, int part) const {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
#pragma unroll
    for (int i = 0; i < per; ++i) store_pair(dst + (warp + i * (threads / 32)) * sh::ld + 2 * lane, part, x[i][0], x[i][1]);
  }
};

// acc (this warp's 16 × 64 strip at rows m0, columns n0) += A Bᵀ over the 16-deep k-steps s0 ≤ s < s1: A [m][k] at
// a (a part of cc_part), B [n][k] at b (key_part), both hi with lo a part further on (lo·hi + hi·lo + hi·hi).
__device__ __forceinline__ void product(float (&acc)[8][4], const __nv_bfloat16* a, const __nv_bfloat16* b, int m0,
                                        int n0, int s0, int s1, int g, int t) {
  using inter_detail::mma_bf16;
  for (int s = s0; s < s1; ++s) {
    const int k0 = 16 * s;
    const auto frag_a = [&](const __nv_bfloat16* p, std::uint32_t(&f)[4]) {
      f[0] = word(p + (m0 + g) * sh::ld + k0 + 2 * t);
      f[1] = word(p + (m0 + g + 8) * sh::ld + k0 + 2 * t);
      f[2] = word(p + (m0 + g) * sh::ld + k0 + 8 + 2 * t);
      f[3] = word(p + (m0 + g + 8) * sh::ld + k0 + 8 + 2 * t);
    };
    std::uint32_t ah[4], al[4];
    frag_a(a, ah);
    frag_a(a + sh::cc_part, al);
#pragma unroll
    for (int nt = 0; nt < 8; ++nt) {
      const __nv_bfloat16* bh = b + (n0 + 8 * nt + g) * sh::ld + k0 + 2 * t;
      const __nv_bfloat16* bl = bh + sh::key_part;
      const std::uint32_t fh[2] = {word(bh), word(bh + 8)}, fl[2] = {word(bl), word(bl + 8)};
      mma_bf16(acc[nt], al, fh);
      mma_bf16(acc[nt], ah, fl);
      mma_bf16(acc[nt], ah, fh);
    }
  }
}

// The float32 value at [key dd][token r] of a hi/lo tile pair (Kᵀ, Qᵀ): hi + lo, within 2⁻¹⁷ relative of what was
// staged (gd18: the row sums' k and q from here rather than from global memory again).
__device__ __forceinline__ float tile_value(const __nv_bfloat16* tile, int dd, int r) {
  return __bfloat162float(tile[dd * sh::ld + r]) + __bfloat162float(tile[sh::key_part + dd * sh::ld + r]);
}

// The float32 value at [token r][token s] of a hi/lo [CL][CL] tile pair (M's): hi + lo (gd18's TransM).
__device__ __forceinline__ float cc_value(const __nv_bfloat16* tile, int r, int s) {
  return __bfloat162float(tile[r * sh::ld + s]) + __bfloat162float(tile[sh::cc_part + r * sh::ld + s]);
}

// product with A stored transposed ([k][m] at a: A = Nᵀ read from N's tile), its fragments by ldmatrix .trans (gd18's
// TransN: no transposed copy of N staged from global memory).
__device__ __forceinline__ void product_t(float (&acc)[8][4], const __nv_bfloat16* a, const __nv_bfloat16* b, int m0,
                                          int n0, int s0, int s1, int g, int t) {
  using inter_detail::mma_bf16;
  const int lane = threadIdx.x & 31, l8 = lane & 7, mat = lane >> 3;
  // lane l: row l % 8 of 8×8 matrix l / 8 = (m 0-7 k 0-7, m 8-15 k 0-7, m 0-7 k 8-15, m 8-15 k 8-15): mma's a0..a3
  const __nv_bfloat16* pa = a + (l8 + 8 * (mat >> 1)) * sh::ld + m0 + 8 * (mat & 1);
  for (int s = s0; s < s1; ++s) {
    const int k0 = 16 * s;
    std::uint32_t ah[4], al[4];
    ldmatrix_x4<true>(ah, pa + k0 * sh::ld);
    ldmatrix_x4<true>(al, pa + sh::cc_part + k0 * sh::ld);
#pragma unroll
    for (int nt = 0; nt < 8; ++nt) {
      const __nv_bfloat16* bh = b + (n0 + 8 * nt + g) * sh::ld + k0 + 2 * t;
      const __nv_bfloat16* bl = bh + sh::key_part;
      const std::uint32_t fh[2] = {word(bh), word(bh + 8)}, fl[2] = {word(bl), word(bl + 8)};
      mma_bf16(acc[nt], al, fh);
      mma_bf16(acc[nt], ah, fl);
      mma_bf16(acc[nt], ah, fh);
    }
  }
}

// x's two row sums (rows g, g + 8 of the strip) over the four lanes of a row group: every lane gets them.
__device__ __forceinline__ void quad_sum(float (&x)[2]) {
#pragma unroll
  for (int h = 0; h < 2; ++h) x[h] += __shfl_xor_sync(0xffffffffu, x[h], 1), x[h] += __shfl_xor_sync(0xffffffffu, x[h], 2);
}

}  // namespace grad16_detail

// One CTA per (chunk, value head), 256 threads, two CTAs an SM. gd18's options (off = main 5386113's form of that
// step, kept for bench/cuda/cg16_ab.cu's A/B; the library's defaults: all on but EarlyDq and TransM, which measured
// slower, bench/cuda/README.md "gd18"):
// Pairs, the accumulator-layout global accesses (dq, dk terms in and out, γ ⊙ dBk, k) and M's and N's row tiles as
// float2 where aligned, ⟨h, dh⟩'s reads as float4; TileKeys, the row sums' k and q from the staged Kᵀ, Qᵀ tiles
// (hi + lo) instead of global memory; EarlyDq, dq's term read before the Nᵀ Q product (into the accumulators it
// leaves free) rather than after dk's store; SkipZeroSteps, the products' k-steps over the triangular operands' zero
// blocks left out (below); TransN, Nᵀ Q's A operand read from N's tile by ldmatrix .trans instead of a transposed
// copy staged from global memory (dP ⊙ P's column sums then from N's row tile's loads); TransM, Mᵀ E's tile formed
// from M's (shared memory, hi + lo, one barrier more) instead of from global memory again.
template <bool Erases, bool Decays, class T, bool Pairs = true, bool TileKeys = true, bool EarlyDq = false,
          bool SkipZeroSteps = true, bool TransN = true, bool TransM = false>
__global__ void __launch_bounds__(threads, grad16_shape::min_ctas) chunk_grad16_kernel(const work w,
                                                                                      const view<T, 4> dv_out,
                                                                                      const direct_grads<T> out = {}) {
  using sh = grad16_shape;
  namespace d = grad16_detail;
  const index_t c = blockIdx.x, hv = blockIdx.y, h = hv / w.G;
  const chunk_info ci = w.chunk[c];
  const int L = ci.len, K = int(w.K), V = int(w.V), tid = threadIdx.x;
  const index_t tok0 = w.token(ci.bt, ci.t0);
  extern __shared__ __align__(16) unsigned char smem[];
  __nv_bfloat16* tiles = reinterpret_cast<__nv_bfloat16*>(smem);
  __nv_bfloat16 *sKt = tiles + sh::kt_at, *sQt = tiles + sh::qt_at, *sA = tiles + sh::a_at, *sAt = tiles + sh::at_at;
  float* rows = reinterpret_cast<float*>(smem + sizeof(__nv_bfloat16) * sh::tiles);
  float *sG = rows + sh::g_at, *sGam = rows + sh::gam_at, *sE = rows + sh::e_at, *sdG = rows + sh::dg_at,
        *sdE = rows + sh::de_at, *sdW = rows + sh::dw_at, *sScan = rows + sh::scan_at;

  const std::size_t cv = w.ch(c, hv);
  const index_t ldq = w.H * w.K, ldv = w.HV * w.V, ldg = w.HV * w.K, HV = w.HV;
  const float* q = w.q + (tok0 * w.H + h) * w.K;  // row r at r·ldq
  const float* k = w.k + (tok0 * w.H + h) * w.K;
  const float* v = w.v + (tok0 * w.HV + hv) * w.V;  // row r at r·ldv
  const float* gate_e = w.erase + tok0 * w.HV + hv;  // row r at r·HV
  const float* gate_w = w.write + tok0 * w.HV + hv;
  float* dq = w.dq + (tok0 * w.HV + hv) * w.K;  // row r at r·ldg: dq's inter-chunk term in, dq out
  float* dk = w.dk + (tok0 * w.HV + hv) * w.K;  // (dk likewise)
  const float *Gc = w.Gc + cv * CL, *Pc = w.P + cv * CL * CL, *dPc = w.dP_inter + cv * CL * CL;
  const float *Mc = Erases ? w.M_inter + cv * CL * CL : nullptr, *dBk = Erases ? w.dW_inter + cv * CL * w.K : nullptr;
  const float *hc = w.h + cv * w.K * w.V, *dhc = w.dh + cv * w.K * w.V;

  const int warp = tid >> 5, lane = tid & 31, g = lane >> 2, t = lane & 3;
  const int m0 = 16 * (warp & 3), n0 = 64 * (warp >> 2), steps = (L + 15) / 16;
  const bool active = m0 < L && n0 < K;  // (warp-uniform: a strip with no output skips its products)
  // SkipZeroSteps: the k-steps where the strip's A operand is not all zero — M and N are lower triangular (row block
  // m0 / 16 needs k-steps ≤ m0 / 16), Mᵀ E and Nᵀ upper (k-steps ≥ m0 / 16): 10 of 16 k-steps a warp over the four
  // products, the same sums (the skipped products are exact zeros)
  const int lower_steps = SkipZeroSteps ? min(steps, m0 / 16 + 1) : steps, upper_from = SkipZeroSteps ? m0 / 16 : 0;

  // ---- the chunk's rows, Kᵀ and Qᵀ (zeros past L and K), and (erase) M and Mᵀ E ----
  if (tid < CL) {
    const int r = tid;
    sG[r] = Gc[r], sGam[r] = __expf(Gc[r]), sE[r] = Erases && r < L ? gate_e[r * HV] : 0.f;
    sdG[r] = 0, sdE[r] = 0, sdW[r] = 0;
  }
  const auto key = [&](const float* x) {
    return [=](int r, int dd) { return r < L && dd < K ? x[r * ldq + dd] : 0.f; };
  };
  {  // (k's and q's loads in flight together)
    d::transposed_tile<max_kv> tk, tq;
    tk.load(key(k));
    tq.load(key(q));
    tk.store(sKt, sh::key_part);
    tq.store(sQt, sh::key_part);
  }
  __syncthreads();  // (the rows: sE before Mᵀ E)
  if constexpr (Erases) {
    const auto m = [&](int r, int s) { return s < r && r < L ? Mc[r * CL + s] : 0.f; };
    d::row_tile a;
    d::transposed_tile<CL> at;
    if (Pairs && reinterpret_cast<std::uintptr_t>(Mc) % 8 == 0) {  // (the row tile's pairs as one load each)
      a.load([&](int r, int s) {
        const float2 x = r < L ? *reinterpret_cast<const float2*>(Mc + r * CL + s) : make_float2(0.f, 0.f);
        return make_float2(s < r ? x.x : 0.f, s + 1 < r ? x.y : 0.f);
      });
    } else {
      a.load(m);
    }
    if constexpr (TransM) {  // Mᵀ E from M's tile (hi + lo) once it is stored, not from global memory again
      a.store(sA, sh::cc_part);
      __syncthreads();
      at.load([&](int r, int s) { return d::cc_value(sA, r, s) * sE[r]; });
    } else {
      at.load([&](int r, int s) { return m(r, s) * sE[r]; });
      a.store(sA, sh::cc_part);
    }
    at.store(sAt, sh::cc_part);
  }

  // ---- dv (and, erase, dw_r = v_r·dBv_r): a row per warp, every row's loads before the first store ----
  if constexpr (Erases) {
    const float* dBv = w.dBv_inter + cv * CL * w.V;
    constexpr int per = CL / (threads / 32) / 2, cols = max_kv / 32;  // (two rounds of four rows: registers)
    for (int i0 = 0; i0 < 2 * per; i0 += per) {
      float vr[per][cols], br[per][cols], wr[per];
#pragma unroll
      for (int i = 0; i < per; ++i) {
        const int r = warp + (i0 + i) * (threads / 32);
        wr[i] = r < L ? gate_w[r * HV] : 0.f;
#pragma unroll
        for (int cc = 0; cc < cols; ++cc) {
          const int j = lane + 32 * cc;
          const bool in = r < L && j < V;
          vr[i][cc] = in ? v[r * ldv + j] : 0.f, br[i][cc] = in ? dBv[r * w.V + j] : 0.f;
        }
      }
#pragma unroll
      for (int i = 0; i < per; ++i) {
        const int r = warp + (i0 + i) * (threads / 32);
        float x = 0;
#pragma unroll
        for (int cc = 0; cc < cols; ++cc) {
          const int j = lane + 32 * cc;
          x = fmaf(vr[i][cc], br[i][cc], x);
          if (dv_out.ptr && r < L && j < V) dv_out(ci.bt, ci.t0 + r, hv, j) = from_float<T>(wr[i] * br[i][cc]);
        }
#pragma unroll
        for (int o = 16; o; o >>= 1) x += __shfl_xor_sync(0xffffffffu, x, o);
        if (lane == 0 && r < L) sdW[r] = x;
      }
    }
  } else if (dv_out.ptr) {  // dv = dU, through registers in batches
    const float* dU = w.dU + cv * CL * w.V;
    for (int e0 = 0; e0 < L * V; e0 += sh::batch * threads) {
      float x[sh::batch];
#pragma unroll
      for (int i = 0; i < sh::batch; ++i) {
        const int e = e0 + tid + i * threads;
        x[i] = e < L * V ? dU[(e / V) * w.V + e % V] : 0.f;
      }
#pragma unroll
      for (int i = 0; i < sh::batch; ++i) {
        const int e = e0 + tid + i * threads;
        if (e < L * V) dv_out(ci.bt, ci.t0 + e / V, hv, e % V) = from_float<T>(x[i]);
      }
    }
  }
  __syncthreads();  // (the tiles staged; sdG, sdE zeroed before the row sums' atomics)

  // The strip's elements: (row, column pair) of accumulator entries [nt][2 half + u] (u < 2), and whether they are
  // in the chunk (the pair's first column is even: with K even both or neither are).
  const auto row_of = [&](int half) { return m0 + g + 8 * half; };
  const auto col_of = [&](int nt) { return n0 + 8 * nt + 2 * t; };
  const auto inside = [&](int r, int dd) { return r < L && dd < K; };
  // Pairs: every row-major float32 operand read or written in the accumulator layout is 8-byte aligned at every
  // column pair (K and the row strides even, the bases 8-byte aligned: plan.hpp starts every workspace slot 16-byte
  // aligned, so the test fails only for odd K or strides; it stays as a guard).
  const auto aligned8 = [](const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 8 == 0; };
  const bool pairs = Pairs && K % 2 == 0 && ldq % 2 == 0 && ldg % 2 == 0 && aligned8(q) && aligned8(k) &&
                     aligned8(dq) && aligned8(dk) && (!Erases || aligned8(dBk));
  // (x(r, dd), x(r, dd + 1)) of a row-major matrix at p (row stride ld); zeros outside the chunk
  const auto pair_in = [&](const float* p, index_t ld, int r, int dd) {
    if (!inside(r, dd)) return make_float2(0.f, 0.f);
    const float* x = p + r * ld + dd;
    if (pairs) return *reinterpret_cast<const float2*>(x);
    return make_float2(x[0], dd + 1 < K ? x[1] : 0.f);
  };
  // dq's or dk's pair out: into the workspace's row-major p (row stride ldg), or with out.on into the caller's tensor
  // in the input type (no one reads the workspace's copy then)
  const auto pair_out = [&](float* p, const view<T, 4>& caller, int r, int dd, float x0, float x1) {
    if (!inside(r, dd)) return;
    if (out.on) {
      if (caller.ptr) store_grad_pair(caller, ci.bt, ci.t0 + r, h, dd, K, x0, x1);  // (h = hv: G = 1)
      return;
    }
    float* x = p + r * ldg + dd;
    if (pairs) {
      *reinterpret_cast<float2*>(x) = make_float2(x0, x1);
    } else {
      x[0] = x0;
      if (dd + 1 < K) x[1] = x1;
    }
  };
  // k's or q's pair at (r, dd) for the row sums: TileKeys from the staged tile (zeros past L and K already), else from
  // global memory
  const auto key_pair = [&](const __nv_bfloat16* tile, const float* x, int r, int dd) {
    if constexpr (TileKeys) return make_float2(d::tile_value(tile, dd, r), d::tile_value(tile, dd + 1, r));
    else return pair_in(x, ldq, r, dd);
  };
  // Adds a row pair's sums (after quad_sum) to shared memory: done(row, sum) from the lane t = 0 of its rows.
  const auto rows_done = [&](float(&x)[2], auto done) {
    d::quad_sum(x);
#pragma unroll
    for (int half = 0; half < 2; ++half)
      if (t == 0 && row_of(half) < L) done(row_of(half), x[half]);
  };

  // ---- dk = dk's term (z_s = k_s·term_s: dG_s −= z_s, dG_L += z_s but for the last row, chunk_grad_kernel.hpp) ----
  // (erase: x's product accumulates onto γ ⊙ dBk, loaded beside dk's term)
  float dkr[8][4], acc[8][4];
  {
    float z[2] = {0.f, 0.f};
#pragma unroll
    for (int nt = 0; nt < 8; ++nt)
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        const int r = row_of(half), dd = col_of(nt);
        const float2 x = pair_in(dk, ldg, r, dd);
        dkr[nt][2 * half] = x.x, dkr[nt][2 * half + 1] = x.y;
        if constexpr (Erases) {
          const float2 b = pair_in(dBk, w.K, r, dd);
          const float gm = r < L ? sGam[r] : 0.f;
          acc[nt][2 * half] = gm * b.x, acc[nt][2 * half + 1] = gm * b.y;
        }
        if constexpr (Decays) {
          const float2 kk = key_pair(sKt, k, r, dd);
          z[half] = fmaf(kk.y, x.y, fmaf(kk.x, x.x, z[half]));
        }
      }
    if constexpr (Decays) rows_done(z, [&](int r, float x) {
        if (r < L - 1) atomicAdd(&sdG[r], -x), atomicAdd(&sdG[L - 1], x);
      });
  }
  if constexpr (Erases) {
    // x = γ ⊙ dBk + M K: dk += E x;  de_s += k_s·x_s, e_s times that into dG_s (x is zero outside the chunk: M's
    // rows past L and Kᵀ's columns past K are)
    if (active) d::product(acc, sA, sKt, m0, n0, 0, lower_steps, g, t);
    float z[2] = {0.f, 0.f};
#pragma unroll
    for (int nt = 0; nt < 8; ++nt)
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        const int r = row_of(half), dd = col_of(nt);
        const float e = sE[r];  // (0 past L)
        const float2 kk = key_pair(sKt, k, r, dd), x = make_float2(acc[nt][2 * half], acc[nt][2 * half + 1]);
        dkr[nt][2 * half] += e * x.x, dkr[nt][2 * half + 1] += e * x.y;
        z[half] = fmaf(kk.y, x.y, fmaf(kk.x, x.x, z[half]));
      }
    rows_done(z, [&](int r, float x) {
      atomicAdd(&sdE[r], x);
      if (Decays) atomicAdd(&sdG[r], sE[r] * x);
    });
    // y = Mᵀ E K: dk += y;  dG_s −= k_s·y_s
#pragma unroll
    for (int nt = 0; nt < 8; ++nt)
#pragma unroll
      for (int x = 0; x < 4; ++x) acc[nt][x] = 0.f;
    if (active) d::product(acc, sAt, sKt, m0, n0, upper_from, steps, g, t);
    float y[2] = {0.f, 0.f};
#pragma unroll
    for (int nt = 0; nt < 8; ++nt)
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        const int r = row_of(half), dd = col_of(nt);
        dkr[nt][2 * half] += acc[nt][2 * half], dkr[nt][2 * half + 1] += acc[nt][2 * half + 1];
        if constexpr (Decays) {
          const float2 kk = key_pair(sKt, k, r, dd);
          y[half] = fmaf(kk.y, acc[nt][2 * half + 1], fmaf(kk.x, acc[nt][2 * half], y[half]));
        }
      }
    if constexpr (Decays) rows_done(y, [&](int r, float x) { atomicAdd(&sdG[r], -x); });
  }

  // ---- N = dP ⊙ D (s ≤ r) into A, Nᵀ into At (after M's last reads); dP ⊙ P's row sums into dG, column sums out ----
  {
    const auto n = [&](int r, int s) {  // (D past the diagonal may overflow: masked before the product)
      return s <= r && r < L ? dPc[r * CL + s] * (Decays ? __expf(sG[r] - sG[s]) : 1.f) : 0.f;
    };
    d::row_tile a;  // (both tiles' loads ahead of the barrier after which M's tiles may be overwritten)
    d::transposed_tile<CL> at;
    // the row tile's pairs as one load each (Pairs, the sources 8-byte aligned); the transposed tile's one by one
    const bool cc_pairs = Pairs && (reinterpret_cast<std::uintptr_t>(dPc) | reinterpret_cast<std::uintptr_t>(Pc)) % 8 == 0;
    const auto ld2 = [&](const float* p, int r, int s) {
      return r < L ? *reinterpret_cast<const float2*>(p + r * CL + s) : make_float2(0.f, 0.f);
    };
    const auto n2 = [&](int r, int s) {
      const float2 x = ld2(dPc, r, s);
      return make_float2(s <= r ? x.x * (Decays ? __expf(sG[r] - sG[s]) : 1.f) : 0.f,
                         s + 1 <= r ? x.y * (Decays ? __expf(sG[r] - sG[s + 1]) : 1.f) : 0.f);
    };
    if constexpr (Decays) {  // X = dP ⊙ P (t < i): dG_i += Σ_t X_it − Σ_t X_ti
      const auto x = [&](int r, int s) { return s < r && r < L ? dPc[r * CL + s] * Pc[r * CL + s] : 0.f; };
      const auto x2 = [&](int r, int s) {
        const float2 dp = ld2(dPc, r, s), pp = ld2(Pc, r, s);
        return make_float2(s < r ? dp.x * pp.x : 0.f, s + 1 < r ? dp.y * pp.y : 0.f);
      };
      const auto row_sum = [&](int r, float y) { atomicAdd(&sdG[r], y); };
      const auto col_sum = [&](int s, float y) { atomicAdd(&sdG[s], -y); };
      if constexpr (TransN) {  // (the column sums from the row tile's values: each thread's 8 rows, then shared)
        if (cc_pairs) a.load<true>(n2, x2, row_sum, col_sum);
        else a.load<true>(n, x, row_sum, col_sum);
      } else {
        if (cc_pairs) a.load<true>(n2, x2, row_sum);
        else a.load<true>(n, x, row_sum);
        at.load<true>(n, x, col_sum);
      }
    } else {
      if (cc_pairs) a.load(n2);
      else a.load(n);
      if constexpr (!TransN) at.load(n);
    }
    __syncthreads();
    a.store(sA, sh::cc_part);
    if constexpr (!TransN) at.store(sAt, sh::cc_part);
  }
  __syncthreads();
  // ---- dk += Nᵀ Q, out; dq = dq's term + N K (dG_r += q_r·term_r), out. EarlyDq: dq's term is read into acc (free
  // until N K) before the Nᵀ Q product, so that its loads are in flight during that product ----
  const auto dq_term = [&] {
    float z[2] = {0.f, 0.f};
#pragma unroll
    for (int nt = 0; nt < 8; ++nt)
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        const int r = row_of(half), dd = col_of(nt);
        const float2 x = pair_in(dq, ldg, r, dd);
        acc[nt][2 * half] = x.x, acc[nt][2 * half + 1] = x.y;
        if constexpr (Decays) {
          const float2 qq = key_pair(sQt, q, r, dd);
          z[half] = fmaf(qq.y, x.y, fmaf(qq.x, x.x, z[half]));
        }
      }
    if constexpr (Decays) rows_done(z, [&](int r, float x) { atomicAdd(&sdG[r], x); });
  };
  if constexpr (EarlyDq) dq_term();
  if (active) {
    if constexpr (TransN) d::product_t(dkr, sA, sQt, m0, n0, upper_from, steps, g, t);
    else d::product(dkr, sAt, sQt, m0, n0, upper_from, steps, g, t);
  }
#pragma unroll
  for (int nt = 0; nt < 8; ++nt)
#pragma unroll
    for (int half = 0; half < 2; ++half)
      pair_out(dk, out.dk, row_of(half), col_of(nt), dkr[nt][2 * half], dkr[nt][2 * half + 1]);
  if constexpr (!EarlyDq) dq_term();
  if (active) d::product(acc, sA, sKt, m0, n0, 0, lower_steps, g, t);
#pragma unroll
  for (int nt = 0; nt < 8; ++nt)
#pragma unroll
    for (int half = 0; half < 2; ++half)
      pair_out(dq, out.dq, row_of(half), col_of(nt), acc[nt][2 * half], acc[nt][2 * half + 1]);
  // ---- the decay of the state across the chunk: dG_L += γ_L ⟨h, dh⟩ (or inter_grad_kernel's key tiles' sums) ----
  if constexpr (Decays && hdh_in_inter) {
    if (tid == 0) {
      const float hdh = dPc[hdh_slot(0)] + (K > inter_shape<inter_terms>::tile ? dPc[hdh_slot(1)] : 0.f);
      atomicAdd(&sdG[L - 1], sGam[L - 1] * hdh);
    }
  } else if constexpr (Decays) {
    float hdh = 0;
    const int n = K * V;
    if (Pairs && n % 4 == 0 && (reinterpret_cast<std::uintptr_t>(hc) | reinterpret_cast<std::uintptr_t>(dhc)) % 16 == 0) {
      constexpr int batch = sh::hdh_batch / 4;  // float4s of each in flight per thread
      const float4 *h4 = reinterpret_cast<const float4*>(hc), *dh4 = reinterpret_cast<const float4*>(dhc);
      for (int e0 = 0; e0 < n / 4; e0 += batch * threads) {
        float4 x[batch], y[batch];
#pragma unroll
        for (int i = 0; i < batch; ++i) {
          const int e = e0 + tid + i * threads;
          const bool in = e < n / 4;
          x[i] = in ? h4[e] : make_float4(0.f, 0.f, 0.f, 0.f), y[i] = in ? dh4[e] : make_float4(0.f, 0.f, 0.f, 0.f);
        }
#pragma unroll
        for (int i = 0; i < batch; ++i)
          hdh = fmaf(x[i].x, y[i].x, fmaf(x[i].y, y[i].y, fmaf(x[i].z, y[i].z, fmaf(x[i].w, y[i].w, hdh))));
      }
    } else {
      for (int e0 = 0; e0 < n; e0 += sh::hdh_batch * threads) {
        float x[sh::hdh_batch], y[sh::hdh_batch];
#pragma unroll
        for (int i = 0; i < sh::hdh_batch; ++i) {
          const int e = e0 + tid + i * threads;
          x[i] = e < n ? hc[e] : 0.f, y[i] = e < n ? dhc[e] : 0.f;
        }
#pragma unroll
        for (int i = 0; i < sh::hdh_batch; ++i) hdh = fmaf(x[i], y[i], hdh);
      }
    }
#pragma unroll
    for (int o = 16; o; o >>= 1) hdh += __shfl_xor_sync(0xffffffffu, hdh, o);
    if (lane == 0) atomicAdd(&sdG[L - 1], sGam[L - 1] * hdh);
  }
  __syncthreads();
  // dg_t = Σ_{r≥t} dG_r: a suffix scan in each of two warps, then warp 0 adds warp 1's total
  float dg = tid < L ? sdG[tid] : 0.f;
  if (tid < CL) {
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
      const float y = __shfl_down_sync(0xffffffffu, dg, o);
      if (lane + o < 32) dg += y;
    }
    if (lane == 0) sScan[tid >> 5] = dg;
  }
  __syncthreads();
  if (tid < L) {
    const float dlog_alpha = dg + (tid < 32 ? sScan[1] : 0.f), derase = Erases ? sdE[tid] + sdW[tid] : 0.f;
    if (out.on) {  // (dg = d log α, dβ = d(e = w = β): no activation between)
      if (out.dg.ptr) out.dg(ci.bt, ci.t0 + tid, hv) = from_float<T>(dlog_alpha);
      if (Erases && out.dbeta.ptr) out.dbeta(ci.bt, ci.t0 + tid, hv) = from_float<T>(derase);
    } else {
      w.dlog_alpha[(tok0 + tid) * w.HV + hv] = dlog_alpha;
      if (Erases) w.derase[(tok0 + tid) * w.HV + hv] = derase;
    }
  }
}

}  // namespace linea::cuda_detail::bwd
