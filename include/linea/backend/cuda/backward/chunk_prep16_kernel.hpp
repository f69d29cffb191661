// linea/backend/cuda/backward/chunk_prep16_kernel.hpp — phase 1 for scalar (or no) decays and 16-bit inputs
// (bf16, fp16): chunk_prep_kernel.hpp's outputs, in the same float32 workspace, from bf16 operands on tensor cores
// (mma.sync m16n8k16, fp32 accumulation; ../mma.hpp's ldmatrix + mma_strip) instead of float32 tiles in 3xTF32:
//   G      the in-chunk cumulative log decay (a warp scan)
//   S, P   K Kᵀ and Q Kᵀ: A = Diag(e) (S ⊙ D) strictly lower, P = (Q Kᵀ) ⊙ D causal, D_rs = exp(G_r − G_s)
//   T      (I + A)⁻¹ in float32 (triangular_inverse.hpp, A kept float32: fp32 accumulators of the bf16 product)
//   W, U   (T Diag(e ⊙ Γ)) K and (T Diag(w)) V: the gates fold into T's columns, so k and v tiles stay as read;
//          T's factor split hi + lo (two bf16 products, Terms = 2; kone16): the state passes form the chunk's
//          transition from W as γ_L I − Kdᵀ W, a cancellation to ~0 where the transition is nearly singular (a key
//          channel with e k² ≈ 1; K = 1 with unit keys: Π (1 − β) ~ 1e-20 a chunk), so W's rounding is what remains
//          of the transition there, multiplied by the adjoint of the whole sequence after it: 2⁻⁹ of a bf16 product
//          put the delta rule's dβ, dq and dS_0 at K = 1 over SPEC §6's bound; hi + lo leave ≈ 2⁻¹⁶ as the passes do
//   dU, Y  s Pᵀ dO and s (Γ ⊙ Q)ᵀ dO as one product: [Pᵀ; (Γ ⊙ Q)ᵀ] dO, rows 0..63 dU, rows 64.. Y (dh's slot)
// Operand roundings (bf16 for both input types: P and unnormalised q, k need bf16's range, not fp16's): q, k (the
// L2-normalised float32 workspace values), Γ ⊙ q, P once each, T ⊙ (e Γ), T ⊙ w to hi + lo (Terms = 1: once, main
// before kone16, kept for bench/cuda/grad_ab.cu's A/B); v and dO are exact for bf16 inputs. (k's one rounding also
// enters W: exact for bf16 keys, 2⁻⁹ where the L2 norm runs in the kernel — not split, see bench/cuda/README.md.)
// Every 16-bit tile is stored with rows padded by 16 bytes (row stride ≡ 16 mod 128 bytes: conflict-free ldmatrix,
// .trans for operands stored [k][m] or [k][n]) and zero past L rows and K / V columns up to the tile's width, so the
// products run whole 16-steps with no bounds checks; outputs are masked to r < L, d < K, j < V as chunk_prep does
// (T: all CL × CL, identity past L). One CTA per (chunk, value head), two CTAs an SM (prep16_shape).
#pragma once
#include <cstdint>

#include "../mma.hpp"
#include "triangular_inverse.hpp"
#include "work.hpp"

namespace linea::cuda_detail::bwd {

using half16 = __nv_bfloat16;  // the operand type of phase 1 for 16-bit inputs

// Shared memory, bytes. Erasing updates: q's tile holds T in float32 once P is formed, then dO; A's (float32, for
// the inverse) then holds T ⊙ (eΓ) and T ⊙ w in 16 bits. The additive family has dO in a tile of its own.
#ifdef LINEA_BWD_PREP16_TERMS
inline constexpr int prep16_terms = LINEA_BWD_PREP16_TERMS;  // bench/cuda/grad_ab.cu's A/B builds, not a user option
#else
inline constexpr int prep16_terms = 2;
#endif

template <bool Erases>
struct prep16_shape {
  static constexpr int ld_row = max_kv + 8;     // [CL][≤ 128] 16-bit tiles (272 bytes a row)
  static constexpr int ld_cc = CL + 8;          // [CL][CL] 16-bit tiles (144 bytes)
  static constexpr int ld_x = CL + max_kv + 8;  // [CL][CL + K]: P | Γ ⊙ Q (400 bytes)
  static constexpr int row_tile = CL * ld_row * 2, t_bytes = CL * CL * 4, x_bytes = CL * ld_x * 2;
  static constexpr int a_bytes = Erases ? (t_bytes > 2 * CL * ld_cc * 2 ? t_bytes : 2 * CL * ld_cc * 2) : 0;
  static constexpr int q_at = 0, k_at = q_at + (row_tile > t_bytes ? row_tile : t_bytes), v_at = k_at + row_tile,
                       o_at = Erases ? q_at : v_at,  // dO: q's tile (erasing: after T is read), else its own
                       a_at = v_at + row_tile, x_at = a_at + a_bytes, scratch_at = x_at + x_bytes,
                       gates_at = scratch_at + (Erases ? inverse_scratch * 4 : 0), tel_at = gates_at + 4 * CL * 4,
                       end = tel_at + (Erases ? CL * ld_cc * 2 : 0);  // tel: T ⊙ (eΓ)'s lo part
  // (T ⊙ w's lo part lies over q's tile: free between the hi parts' barrier and dO's store)
  static constexpr std::size_t bytes = end;
  static constexpr int ctas_per_sm = 2;
  static_assert(ctas_per_sm * (bytes + 1024) <= 228 * 1024, "chunk_prep16: two CTAs an SM must fit");
  static_assert(q_at % 16 == 0 && k_at % 16 == 0 && v_at % 16 == 0 && a_at % 16 == 0 && x_at % 16 == 0 &&
                    scratch_at % 16 == 0 && gates_at % 16 == 0 && tel_at % 16 == 0,
                "chunk_prep16: 16-byte aligned tiles (ldmatrix rows, float4)");
};

// Two floats as a packed bf16 pair (round to nearest; NaN stays NaN).
__device__ __forceinline__ std::uint32_t pack_half16(float lo, float hi) { return pack2<half16>(lo, hi); }

// This thread's quads (4 consecutive columns) of a [CL][max_kv] tile read from a float32 row-major source: row r at
// src + r·lds, zeros for r ≥ L or columns ≥ C. Quad e = tid + i·threads is (row e / 32, columns 4 (e % 32) ..).
// All loads are issued before any is used (load_quads, then put_quads: the caller may do other work between).
// N, At: quads At .. At + N − 1 of the thread's 8 (a tile in parts, fewer registers held at once).
template <int N = 8>
struct quads {
  static constexpr int per = N;
  float4 x[N];
};
template <int At = 0, int N>
__device__ __forceinline__ void load_quads(quads<N>& b, const float* src, index_t lds, int L, int C) {
  constexpr int per_row = max_kv / 4;
  static_assert(At + N <= CL * max_kv / 4 / threads, "load_quads: 8 quads a thread");
  const bool wide = C % 4 == 0 && lds % 4 == 0 && reinterpret_cast<std::uintptr_t>(src) % 16 == 0;
#pragma unroll
  for (int i = 0; i < N; ++i) {
    const int e = threadIdx.x + (At + i) * threads, r = e / per_row, c = 4 * (e % per_row);
    const float* p = src + r * lds + c;
    float4 x = make_float4(0.f, 0.f, 0.f, 0.f);
    if (r < L && c < C) {
      if (wide) {
        x = *reinterpret_cast<const float4*>(p);
      } else {
        x.x = p[0];
        if (c + 1 < C) x.y = p[1];
        if (c + 2 < C) x.z = p[2];
        if (c + 3 < C) x.w = p[3];
      }
    }
    b.x[i] = x;
  }
}
// put(r, c, x): this thread's quads, in load_quads' order.
template <int At = 0, int N, class Put>
__device__ __forceinline__ void put_quads(const quads<N>& b, Put put) {
  constexpr int per_row = max_kv / 4;
#pragma unroll
  for (int i = 0; i < N; ++i) {
    const int e = threadIdx.x + (At + i) * threads;
    put(e / per_row, 4 * (e % per_row), b.x[i]);
  }
}
// Four floats (times f) as four bf16 at dst (8-byte aligned).
__device__ __forceinline__ void store_quad16(half16* dst, float4 x, float f = 1.f) {
  *reinterpret_cast<uint2*>(dst) = make_uint2(pack_half16(f * x.x, f * x.y), pack_half16(f * x.z, f * x.w));
}

// Two adjacent outputs (columns c, c + 1 of a row with n columns) to global memory: one 8-byte store where both
// exist and `even` (the tensor's base 8-byte aligned and its rows of even length; c is even), else 4-byte ones.
// (carve() starts the workspace's tensors 16-byte aligned, plan.hpp; the test stays for rows of odd length.)
__device__ __forceinline__ void store_pair(float* row, int c, int n, bool even, float a, float b) {
  if (c + 1 < n && even) {
    *reinterpret_cast<float2*>(row + c) = make_float2(a, b);
  } else {
    if (c < n) row[c] = a;
    if (c + 1 < n) row[c + 1] = b;
  }
}

// out(r, c, x0, x1) over a warp strip's accumulators (rows m0 + g, m0 + g + 8; column pairs n0 + 8j + 2t).
template <int NT, class Out>
__device__ __forceinline__ void strip_out(const float (&acc)[NT][4], int m0, int n0, Out out) {
  const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
#pragma unroll
  for (int j = 0; j < NT; ++j) {
    const int c = n0 + 8 * j + 2 * t;
    out(m0 + g, c, acc[j][0], acc[j][1]);
    out(m0 + g + 8, c, acc[j][2], acc[j][3]);
  }
}

template <bool Erases, int Terms = prep16_terms>
__global__ void __launch_bounds__(threads, prep16_shape<Erases>::ctas_per_sm) chunk_prep16_kernel(const work w) {
  static_assert(Terms == 1 || Terms == 2, "chunk_prep16: T's factor in one or two bf16 parts");
  using sh = prep16_shape<Erases>;
  constexpr int ldr = sh::ld_row, ldc = sh::ld_cc, ldx = sh::ld_x;
  const index_t c = blockIdx.x, hv = blockIdx.y, h = hv / w.G;
  const chunk_info ci = w.chunk[c];
  const int L = ci.len, K = int(w.K), V = int(w.V), tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  const int K16 = (K + 15) & ~15, L16 = (L + 15) & ~15;  // the products' extents in whole 16-steps
  const index_t tok0 = w.token(ci.bt, ci.t0);
  extern __shared__ __align__(16) unsigned char smem[];
  half16 *sQ = reinterpret_cast<half16*>(smem + sh::q_at), *sK = reinterpret_cast<half16*>(smem + sh::k_at),
         *sV = reinterpret_cast<half16*>(smem + sh::v_at), *sO = reinterpret_cast<half16*>(smem + sh::o_at),
         *sX = reinterpret_cast<half16*>(smem + sh::x_at);
  float* sA = reinterpret_cast<float*>(smem + sh::a_at);    // A (float32, erasing)
  float* sT = reinterpret_cast<float*>(smem + sh::q_at);    // T (float32, in q's tile after P)
  half16* sTe = reinterpret_cast<half16*>(smem + sh::a_at);  // T ⊙ (e Γ), after the inverse
  half16* sTw = sTe + CL * ldc;                              // T ⊙ w
  half16* sTel = reinterpret_cast<half16*>(smem + sh::tel_at);  // the lo parts (Terms = 2): T ⊙ (e Γ)'s,
  half16* sTwl = reinterpret_cast<half16*>(smem + sh::q_at);    // T ⊙ w's (over q's tile once T is read)
  float* scratch = reinterpret_cast<float*>(smem + sh::scratch_at);
  float *sG = reinterpret_cast<float*>(smem + sh::gates_at), *sE = sG + CL, *sEG = sE + CL, *sWw = sEG + CL;

  // ---- gates and G (one warp: a scan of pairs) ----
  if (warp == 0) {
    const float* la = w.log_alpha + tok0 * w.HV + hv;  // row r at r·HV
    const float a = 2 * lane < L ? la[2 * lane * w.HV] : 0.f, b = 2 * lane + 1 < L ? la[(2 * lane + 1) * w.HV] : 0.f;
    float s = a + b;
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
      const float y = __shfl_up_sync(0xffffffffu, s, o);
      if (lane >= o) s += y;
    }
    sG[2 * lane] = s - b, sG[2 * lane + 1] = s;
  }
  __syncthreads();
  if (tid < CL) {
    w.Gc[w.ch(c, hv) * CL + tid] = sG[tid];
    if constexpr (Erases) {
      const float e = tid < L ? w.erase[(tok0 + tid) * w.HV + hv] : 0.f;
      sE[tid] = e, sEG[tid] = e * __expf(sG[tid]), sWw[tid] = tid < L ? w.write[(tok0 + tid) * w.HV + hv] : 0.f;
    }
  }

  // ---- operand tiles: q (and Γ ⊙ q into X's right half), k, v (erasing), dO (the additive family: now) ----
  const index_t ldq = w.H * w.K, ldv = w.HV * w.V;
  {
    quads<> b;
    load_quads(b, w.q + (tok0 * w.H + h) * w.K, ldq, L, K);
    put_quads(b, [&](int r, int c4, float4 x) {
      store_quad16(sQ + r * ldr + c4, x);
      store_quad16(sX + r * ldx + CL + c4, x, __expf(sG[r]));  // (sG: written before the barrier above)
    });
    load_quads(b, w.k + (tok0 * w.H + h) * w.K, ldq, L, K);
    put_quads(b, [&](int r, int c4, float4 x) { store_quad16(sK + r * ldr + c4, x); });
    if constexpr (Erases) {
      load_quads(b, w.v + (tok0 * w.HV + hv) * w.V, ldv, L, V);
      put_quads(b, [&](int r, int c4, float4 x) { store_quad16(sV + r * ldr + c4, x); });
    } else {
      load_quads(b, w.d_o + (tok0 * w.HV + hv) * w.V, ldv, L, V);
      put_quads(b, [&](int r, int c4, float4 x) { store_quad16(sO + r * ldr + c4, x); });
    }
  }
  __syncthreads();

  // ---- S = K Kᵀ → A (erasing) and P = Q Kᵀ: warp strips of 16 rows × 32 columns (row block i, column half hf);
  // the strips wholly above the diagonal (columns 32.. of rows ..31) are zero and skip their mma ----
  float* Pg = w.P + w.ch(c, hv) * CL * CL;
  const auto even = [](const float* base, int n) { return n % 2 == 0 && reinterpret_cast<std::uintptr_t>(base) % 8 == 0; };
  const bool p_even = even(w.P, CL), w_even = even(w.W, K), u_even = even(w.U, V), du_even = even(w.dU, V),
             dh_even = even(w.dh, V) && K * V % 2 == 0;
  {
    const int i = warp & 3, hf = warp >> 2, m0 = 16 * i, n0 = 32 * hf;
    const bool live = n0 <= m0 + 15;
    if constexpr (Erases) {
      float acc[4][4] = {};
      if (live) mma_strip<half16, 4>(acc, sK + m0 * ldr, ldr, sK + n0 * ldr, ldr, K16 / 16);
      strip_out(acc, m0, n0, [&](int r, int s, float x0, float x1) {
        const float er = sE[r], gr = sG[r];
        const float a0 = s < r ? er * x0 * __expf(gr - sG[s]) : 0.f, a1 = s + 1 < r ? er * x1 * __expf(gr - sG[s + 1]) : 0.f;
        *reinterpret_cast<float2*>(sA + r * CL + s) = make_float2(a0, a1);
      });
    }
    float acc[4][4] = {};
    if (live) mma_strip<half16, 4>(acc, sQ + m0 * ldr, ldr, sK + n0 * ldr, ldr, K16 / 16);
    strip_out(acc, m0, n0, [&](int r, int s, float x0, float x1) {
      const float gr = sG[r];
      const float p0 = s <= r ? x0 * __expf(gr - sG[s]) : 0.f, p1 = s + 1 <= r ? x1 * __expf(gr - sG[s + 1]) : 0.f;
      if (r < L) store_pair(Pg + r * CL, s, L, p_even, p0, p1);
      *reinterpret_cast<std::uint32_t*>(sX + r * ldx + s) = pack_half16(p0, p1);
    });
  }

  const float scale = w.scale;
  float* dUg = w.dU + w.ch(c, hv) * CL * w.V;
  float* dhg = w.dh + w.ch(c, hv) * w.K * w.V;
  if constexpr (Erases) {
    // ---- T = (I + A)⁻¹ in float32, over q's tile (q's last reader, P, is behind the inverse's first barrier) ----
    unit_lower_inverse(sA, sT, scratch);
    float* Tg = w.Tinv + w.ch(c, hv) * CL * CL;
    const bool t_wide = reinterpret_cast<std::uintptr_t>(w.Tinv) % 16 == 0;
    constexpr int per = CL * CL / 4 / threads;  // T's quads a thread
    static_assert(per * threads * 4 == CL * CL, "chunk_prep16: T in whole quads a thread");
    uint2 tw_lo[per];  // T ⊙ w's lo parts, stored over T once every thread has read it
    // x (four floats) as bf16 hi (returned) and its remainder's bf16 (lo)
    const auto split4 = [](float4 x, uint2& lo) {
      const uint2 hi = make_uint2(pack_half16(x.x, x.y), pack_half16(x.z, x.w));
      const __nv_bfloat162 h0 = *reinterpret_cast<const __nv_bfloat162*>(&hi.x),
                           h1 = *reinterpret_cast<const __nv_bfloat162*>(&hi.y);
      lo = make_uint2(pack_half16(x.x - __low2float(h0), x.y - __high2float(h0)),
                      pack_half16(x.z - __low2float(h1), x.w - __high2float(h1)));
      return hi;
    };
#pragma unroll
    for (int i = 0; i < per; ++i) {  // T to memory; T ⊙ (eΓ), T ⊙ w over A's tile (A is dead)
      const int e = tid + i * threads, r = e / (CL / 4), s = 4 * (e % (CL / 4));
      const float4 t = *reinterpret_cast<const float4*>(sT + r * CL + s);
      float* tg = Tg + r * CL + s;
      if (t_wide) *reinterpret_cast<float4*>(tg) = t;
      else tg[0] = t.x, tg[1] = t.y, tg[2] = t.z, tg[3] = t.w;
      const float4 te = make_float4(t.x * sEG[s], t.y * sEG[s + 1], t.z * sEG[s + 2], t.w * sEG[s + 3]),
                   tw = make_float4(t.x * sWw[s], t.y * sWw[s + 1], t.z * sWw[s + 2], t.w * sWw[s + 3]);
      uint2 te_lo;
      *reinterpret_cast<uint2*>(sTe + r * ldc + s) = split4(te, te_lo);
      *reinterpret_cast<uint2*>(sTw + r * ldc + s) = split4(tw, tw_lo[i]);
      if constexpr (Terms == 2) *reinterpret_cast<uint2*>(sTel + r * ldc + s) = te_lo;
    }
    if constexpr (Terms == 2) {
      __syncthreads();  // (every thread past its reads of T)
#pragma unroll
      for (int i = 0; i < per; ++i) {
        const int e = tid + i * threads, r = e / (CL / 4), s = 4 * (e % (CL / 4));
        *reinterpret_cast<uint2*>(sTwl + r * ldc + s) = tw_lo[i];
      }
    }
    // dO: half of its loads in flight during W and U (all of them spilled registers), stored over T once every
    // thread is past T's reads
    const float* dO = w.d_o + (tok0 * w.HV + hv) * w.V;
    quads<4> o;
    load_quads<0>(o, dO, ldv, L, V);
    __syncthreads();
    // ---- W = (T ⊙ eΓ) K, U = (T ⊙ w) V: warp strips of 16 rows × 32 columns (narrow: dO's quads are in registers
    // meanwhile). T is lower triangular, so row block i needs k-steps ≤ i: each warp takes row blocks i and 3 − i of
    // both products (5 k-steps each), column quarter qc ----
    {
      const int i0 = warp & 3, qc = (warp >> 2) + 2 * (i0 >= 2), n0 = 32 * qc;
      float* Wg = w.W + w.ch(c, hv) * CL * w.K;
      float* Ug = w.U + w.ch(c, hv) * CL * w.V;
#pragma unroll 1
      for (int k = 0; k < 4; ++k) {
        const bool is_w = k < 2;
        const int i = k & 1 ? 3 - i0 : i0, m0 = 16 * i, steps = (L16 / 16 < i + 1 ? L16 / 16 : i + 1);
        if (n0 >= (is_w ? K : V)) continue;
        float acc[4][4] = {};
        const half16* B = (is_w ? sK : sV) + n0;
        if constexpr (Terms == 2)  // the lo part first (the smaller terms into the accumulator first)
          mma_strip<half16, 4, false, true>(acc, (is_w ? sTel : sTwl) + m0 * ldc, ldc, B, ldr, steps);
        mma_strip<half16, 4, false, true>(acc, (is_w ? sTe : sTw) + m0 * ldc, ldc, B, ldr, steps);
        if (is_w)
          strip_out(acc, m0, n0, [&](int r, int d, float x0, float x1) {
            if (r < L) store_pair(Wg + r * K, d, K, w_even, x0, x1);
          });
        else
          strip_out(acc, m0, n0, [&](int r, int j, float x0, float x1) {
            if (r < L) store_pair(Ug + r * V, j, V, u_even, x0, x1);
          });
      }
    }
    const auto put_o = [&](int r, int c4, float4 x) { store_quad16(sO + r * ldr + c4, x); };
    if constexpr (Terms == 2) __syncthreads();  // (T ⊙ w's lo part, under dO's tile, read)
    put_quads<0>(o, put_o);
    load_quads<4>(o, dO, ldv, L, V);
    put_quads<4>(o, put_o);
  }
  __syncthreads();

  // ---- [dU; Y] = s [Pᵀ; (Γ ⊙ Q)ᵀ] dO: rows 0..63 of the stacked A operand are Pᵀ (X's left half read transposed;
  // Pᵀ upper triangular: row block i needs k-steps ≥ i), rows 64.. are (Γ ⊙ Q)ᵀ; strips of 16 rows × 64 columns ----
  const int blocks = CL / 16 + K16 / 16, halves = V > 64 ? 2 : 1;
  for (int tile = warp; tile < blocks * halves; tile += threads / 32) {
    const int ib = tile / halves, hf = tile % halves, n0 = 64 * hf;
    const int k0 = ib < CL / 16 ? ib : 0, steps = L16 / 16 - k0;
    float acc[8][4] = {};
    if (steps > 0) mma_strip<half16, 8, true, true>(acc, sX + 16 * k0 * ldx + 16 * ib, ldx, sO + 16 * k0 * ldr + n0, ldr, steps);
    if (ib < CL / 16) {
      strip_out(acc, 16 * ib, n0, [&](int s, int j, float x0, float x1) {
        if (s < L) store_pair(dUg + s * V, j, V, du_even, scale * x0, scale * x1);
      });
    } else {
      strip_out(acc, 16 * ib - CL, n0, [&](int d, int j, float x0, float x1) {
        if (d < K) store_pair(dhg + d * V, j, V, dh_even, scale * x0, scale * x1);
      });
    }
  }
}

}  // namespace linea::cuda_detail::bwd
