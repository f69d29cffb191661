// linea/backend/cuda/scalar_chunk_kernel.hpp — the chunkwise forward of the rules that only add, on tensor cores:
//   S_t = γ_t S_{t-1} + k_t v_tᵀ,  o_t = s S_tᵀ q_t      (additive: γ = 1; scalar-gated: γ_t = exp g_t)
//
// Per chunk of CL = 64 tokens, with G_r = Σ_{s ≤ r} log₂ γ_s inside the chunk and C its last row (SPEC §4):
//   P = (Q Kᵀ) ⊙ 2^(G_r − G_s) for s ≤ r, else 0
//   O = s [Diag(2^G) Q S + P V]
//   S ← 2^(G_C) S + Kᵀ V_d,   V_d = Diag(2^(G_C − G)) V        (every factor ≤ 1: no overflow)
// Nothing inside a chunk is serial (no solve), so a chunk is two phases between two barriers:
//   X: Q S and P (tensor cores, one pass over Q's fragments where a warp forms both); V_d
//   Y: O += P V, written out; S updated in registers; Sᵀ to shared memory for the next chunk's Q S
// One CTA per (sequence, value head, 64 value columns), 8 warps, two CTAs per SM; the 128×64 state tile lives in
// registers (fp32 mma accumulators, warp w owns key rows 16w..16w+15). q, k, v land by cp.async straight into
// the operand tiles — k and v double-buffered, q refilled during Y, when nothing reads it — and Kᵀ and V are
// read token-major through ldmatrix .trans, so no tile is rewritten or transposed on the way.
//
// It takes what tiles::inputs_fit accepts (16-bit inputs, aligned rows, K ≤ 128; in-kernel L2 norms on the q, k
// tiles in place); everything else (float inputs, other strides, the CCQ passes) runs the general chunk kernel
// (chunk_kernel.hpp).
// `normalize` (additive only; a run-time flag, no instance of its own): o_r ← o_r / (s q_r·z_r + 1e-10) with
// z_r = z_c + Σ_{s≤r} k_s, z_c the key sum before the chunk, kept in shared memory like Sᵀ. So q_r·z_r =
// q_r·z_c + Σ_s P_rs: P's row sums (float32, before P is rounded) plus one dot per row, both formed in X; z_c
// grows by the chunk's Σ k in Y.
#pragma once
#include "../../core/epilogue.hpp"
#include "causal_strip.hpp"
#include "chunk_tiles.hpp"

namespace linea::cuda_detail {

// The rules this kernel computes: no erase, no β, no per-key decay (additive, scalar-gated), main pass.
// (The kernel copies v straight into the operand tiles, so the update must be the plain additive one, w = 1; log α
// comes through the decay's hook.)
template <class Rule, pass P>
inline constexpr bool scalar_chunk_rule = P == pass::main && std::is_same_v<typename Rule::update, update::additive> &&
                                          Rule::decay::kind != decay_kind::per_key;

struct scalar_chunk_shape {
  static constexpr int CL = tiles::CL, BV = tiles::BV, LDK = tiles::LDK, LDV = tiles::LD64, LDP = tiles::LD64;
  // the 16-bit tiles, in elements, in the order they are carved
  static constexpr int q_at = 0,                   // q            [CL][LDK]
      k_at = q_at + CL * LDK,                      // k, 2 buffers [2][CL][LDK]
      v_at = k_at + 2 * CL * LDK,                  // v, 2 buffers [2][CL][LDV]
      s_at = v_at + 2 * CL * LDV,                  // Sᵀ           [BV][LDK]
      p_at = s_at + BV * LDK,                      // P            [CL][LDP]
      vd_at = p_at + CL * LDP,                     // V_d          [CL][LDV]
      end = vd_at + CL * LDV;
  // + G (2 buffers); normalize's z_c [KP], q·z_c [CL] and P's row sums per half of the columns [2][CL]
  static constexpr int zs_at = 2 * CL, qz_at = zs_at + tiles::KP, rows_at = qz_at + CL, floats = rows_at + 2 * CL;
  static constexpr std::size_t bytes = 2 * std::size_t(end) + sizeof(float) * floats;
  static_assert(bytes <= 113 * 1024, "two CTAs per SM");
};

// Phase X's two products of a warp's strip in one pass over its 16 rows of Q, each A fragment loaded once for both:
// o[t] += Q · Sᵀ(8t ..)ᵀ (ST: [value column][key]) and p[t] += Q · K(8t ..)ᵀ (Kt: [token][key]) over all K. Each
// accumulator sums its k-steps in order, as mma_strip does: the same values. (fwd17: the kernel waits mostly on
// operand latency and its L1 pipe is its busiest unit; this cut shared-memory wavefronts 6.6 % and the time 2–3.7 %
// on the H200, bench/cuda/README.md.)
template <class E>
__device__ __forceinline__ void qs_and_qk(float (&o)[4][4], float (&p)[4][4], const E* Q, const E* ST, const E* Kt,
                                          int ld) {
  static_assert(sizeof(E) == 2, "16-bit operands");
  const int lane = threadIdx.x & 31, l8 = lane & 7, m = lane >> 3;
  // mma_strip's lane addressing (mma.hpp): A [m][k], B [n][k], two n-tiles an x4
  const E* pa = Q + (l8 + 8 * (m & 1)) * ld + 8 * (m >> 1);
  const int b_lane = (l8 + 8 * (m >> 1)) * ld + 8 * (m & 1);
  const E *ps = ST + b_lane, *pk = Kt + b_lane;
#pragma unroll
  for (int s = 0; s < tiles::KP / 16; ++s) {
    std::uint32_t a[4];
    ldmatrix_x4(a, pa + 16 * s);
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      std::uint32_t b[4], c[4];
      ldmatrix_x4(b, ps + 16 * s + h * 16 * ld);
      ldmatrix_x4(c, pk + 16 * s + h * 16 * ld);
      const std::uint32_t b0[2] = {b[0], b[1]}, b1[2] = {b[2], b[3]}, c0[2] = {c[0], c[1]}, c1[2] = {c[2], c[3]};
      mma_regs<E>(o[2 * h], a, b0);
      mma_regs<E>(o[2 * h + 1], a, b1);
      mma_regs<E>(p[2 * h], a, c0);
      mma_regs<E>(p[2 * h + 1], a, c1);
    }
  }
}

// Store: how the o strip goes to global memory (tiles::strip_store; pko2, issue #15).
template <class Rule, class T, class E, tiles::strip_store Store = tiles::strip_store::sectors>
__global__ void __launch_bounds__(tiles::threads, 2) scalar_chunk_kernel(const kernel_args<T> a) {
  using sh = scalar_chunk_shape;
  using tiles::ex2;
  constexpr int CL = sh::CL, KP = tiles::KP, BV = sh::BV, LDK = sh::LDK, LDV = sh::LDV, LDP = sh::LDP;
  constexpr bool decays = Rule::decay::kind == decay_kind::scalar;
  const source<T> src{a};
  const tiles::site<T> cta{a};
  const index_t hv = cta.hv, jt = cta.jt;
  const seq_range& seq = cta.seq;
  const int Vw = cta.Vw;
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;

  extern __shared__ __align__(16) unsigned char smem_raw[];
  E* base = reinterpret_cast<E*>(smem_raw);
  E *Qs = base + sh::q_at, *ST = base + sh::s_at, *Pe = base + sh::p_at, *Vd = base + sh::vd_at;
  float* Gbuf = reinterpret_cast<float*>(base + sh::end);  // [2][CL]
  float *Zs = Gbuf + sh::zs_at, *QZ = Gbuf + sh::qz_at, *Prow = Gbuf + sh::rows_at;  // normalize
  const bool norm = !decays && a.normalize;
  if (norm)
    for (int i = tid; i < KP; i += tiles::threads) Zs[i] = 0.f;  // z_0 = 0 per sequence (before the first barrier)
  auto Kbuf = [&](int b) { return base + sh::k_at + b * CL * LDK; };
  auto Vbuf = [&](int b) { return base + sh::v_at + b * CL * LDV; };

  auto raw_g = [&](index_t c0, int L, int r) { return r < L ? tiles::clamped_log2_decay(src.template token_log_alpha<Rule>(seq.bt, c0 + r, hv) * tiles::log2e) : 0.f; };

  // the state: acc[nt][e] = S(16 warp + acc_row(e), jt + 8 nt + acc_col(e))
  float acc[BV / 8][4];
  tiles::load_state(acc, a.initial_state, seq.row, hv, jt, a.K, a.V);
  if (seq.t0 < seq.t1) {
    const int L = cta.rows_in(seq.t0);
    cta.fetch_q(Qs, a, seq.t0, L), cta.fetch_k(Kbuf(0), a, seq.t0, L), cta.fetch_v(Vbuf(0), a, seq.t0, L);
    if (decays && warp == 0) tiles::scan64(raw_g(seq.t0, L, lane), raw_g(seq.t0, L, lane + 32), Gbuf);
  }
  tiles::store_state_t(ST, LDK, acc);

  // Warp w: rows r0 .. r0 + 15 of P and O, columns c0w .. c0w + 31 (tokens of P, value columns of O).
  const int r0 = 16 * (warp >> 1), c0w = 32 * (warp & 1);
  int buf = 0;
  for (index_t c0 = seq.t0; c0 < seq.t1; c0 += CL, buf ^= 1) {
    const int L = cta.rows_in(c0);
    const bool more = c0 + CL < seq.t1;
    const int Ln = more ? cta.rows_in(c0 + CL) : 0;
    const E *Ks = Kbuf(buf), *Vs = Vbuf(buf);
    const float* Gc = Gbuf + buf * CL;
    tiles::cp_async_wait_all();
    __syncthreads();  // this chunk's q, k, v, G and the state's Sᵀ are in; last chunk's P, V_d are read
    if (more) {       // the next chunk's k, v and G: land during this chunk
      cta.fetch_k(Kbuf(buf ^ 1), a, c0 + CL, Ln), cta.fetch_v(Vbuf(buf ^ 1), a, c0 + CL, Ln);
    }
    if (a.l2q || a.l2k) {  // the in-kernel L2 norm, on the tiles in place
      if (a.l2q) tiles::l2norm_rows<tiles::threads>(Qs, LDK, tid);
      if (a.l2k) tiles::l2norm_rows<tiles::threads>(Kbuf(buf), LDK, tid);
      __syncthreads();
    }
    float gn0 = 0, gn1 = 0;
    if (decays && warp == 0 && more) gn0 = raw_g(c0 + CL, Ln, lane), gn1 = raw_g(c0 + CL, Ln, lane + 32);

    // ---- X: Q S and P; V_d -------------------------------------------------------------------------------------
    float o[4][4] = {};
    float prow[2] = {0.f, 0.f};  // normalize: this thread's part of P's row sums (rows r0 + acc_row(0 | 2))
    if (c0w > r0 + 15) {  // no entry of P on or below the diagonal in this strip (it is never read): Q S alone
      mma_strip<E, 4, false, false>(o, Qs + r0 * LDK, LDK, ST + c0w * LDK, LDK, KP / 16);
    } else {
      float p[4][4] = {};
      qs_and_qk(o, p, Qs + r0 * LDK, ST + c0w * LDK, Ks + c0w * LDK, LDK);
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int r = r0 + acc_row(2 * h);
        const float gr = decays ? Gc[r] : 0.f;
#pragma unroll
        for (int t = 0; t < 4; ++t) {
          const int s = c0w + 8 * t + acc_col(0);
          float x0 = p[t][2 * h], x1 = p[t][2 * h + 1];
          if constexpr (decays) x0 *= ex2(gr - Gc[s]), x1 *= ex2(gr - Gc[s + 1]);
          x0 = s <= r ? x0 : 0.f, x1 = s + 1 <= r ? x1 : 0.f;  // a select: what is masked may be inf
          *reinterpret_cast<std::uint32_t*>(Pe + r * LDP + s) = pack2<E>(x0, x1);
          prow[h] += x0 + x1;
        }
      }
    }
    if (norm) {  // P's row sums over this warp's 32 columns (zero above the diagonal); q_r·z_c for every row
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        float x = prow[h];
        x += __shfl_xor_sync(0xffffffffu, x, 1), x += __shfl_xor_sync(0xffffffffu, x, 2);
        if ((lane & 3) == 0) Prow[(warp & 1) * CL + r0 + acc_row(2 * h)] = x;
      }
      const int r = tid >> 2, c = 32 * (tid & 3);
      float x = 0;
#pragma unroll 8
      for (int i = 0; i < 32; ++i) x += to_float(Qs[r * LDK + c + i]) * Zs[c + i];
      x += __shfl_xor_sync(0xffffffffu, x, 1), x += __shfl_xor_sync(0xffffffffu, x, 2);
      if ((tid & 3) == 0) QZ[r] = x;
    }
    {  // thread: 16 values of row tid / 4 — V_d = 2^(G_C − G_r) v_r, and the residual u_r = v_r when asked for
      const int r = tid >> 2, c = 16 * (tid & 3);
      uint4 raw[2];
      raw[0] = *reinterpret_cast<const uint4*>(Vs + r * LDV + c);
      raw[1] = *reinterpret_cast<const uint4*>(Vs + r * LDV + c + 8);
      if constexpr (decays) {
        const float f = ex2(Gc[CL - 1] - Gc[r]);
        uint4 d[2] = {raw[0], raw[1]};
        E* e = reinterpret_cast<E*>(d);
#pragma unroll
        for (int u = 0; u < 16; ++u) e[u] = from_float<E>(to_float(e[u]) * f);
        *reinterpret_cast<uint4*>(Vd + r * LDV + c) = d[0];
        *reinterpret_cast<uint4*>(Vd + r * LDV + c + 8) = d[1];
      }
      if (a.residual.ptr && r < L) {
        T* row = a.residual.row(seq.bt, c0 + r, hv);
        const index_t inner = a.residual.str[3];
        const T* x = reinterpret_cast<const T*>(raw);
        for (int u = 0; u < 16; ++u)
          if (c + u < Vw) row[(jt + c + u) * inner] = x[u];
      }
    }
    __syncthreads();  // P, V_d in; every read of q and Sᵀ done
    if (more) cta.fetch_q(Qs, a, c0 + CL, Ln);

    // ---- Y: O += P V, out; S ← 2^(G_C) S + Kᵀ V_d; Sᵀ for the next chunk ---------------------------------------------
    if constexpr (decays) {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const float f = ex2(Gc[r0 + acc_row(2 * h)]);
#pragma unroll
        for (int t = 0; t < 4; ++t) o[t][2 * h] *= f, o[t][2 * h + 1] *= f;
      }
    }
    causal_strip<E, 4, true>(o, Pe + r0 * LDP, LDP, Vs + c0w, LDV, r0 / 16 + 1);  // P is zero past the diagonal
    if (norm) {  // o_r / (s q_r·z_r + 1e-10); then z_c += Σ k of the chunk (rows past L are zero-filled)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int r = r0 + acc_row(2 * h);
        const float f = 1.f / normaliser_divisor(a.scale * (QZ[r] + Prow[r] + Prow[CL + r]));
#pragma unroll
        for (int t = 0; t < 4; ++t) o[t][2 * h] *= f, o[t][2 * h + 1] *= f;
      }
      if (tid < KP) {
        float z = 0;
#pragma unroll 8
        for (int r = 0; r < CL; ++r) z += to_float(Ks[r * LDK + tid]);
        Zs[tid] += z;  // read again only after the next chunk's first barrier
      }
    }
    tiles::store_strip<Store>(a.o, seq.bt, c0, hv, jt, r0, c0w, L, Vw, o, a.scale);
    if constexpr (decays) {
      const float f = ex2(Gc[CL - 1]);
#pragma unroll
      for (int nt = 0; nt < BV / 8; ++nt)
#pragma unroll
        for (int e = 0; e < 4; ++e) acc[nt][e] *= f;
    }
    mma_strip<E, BV / 8, true, true>(acc, Ks + 16 * warp, LDK, decays ? Vd : Vs, LDV, CL / 16);
    tiles::store_state_t(ST, LDK, acc);  // no warp reads Sᵀ until the next chunk's first barrier
    if (decays && warp == 0 && more) tiles::scan64(gn0, gn1, Gbuf + (buf ^ 1) * CL);
  }
  tiles::save_state(acc, a.final_state, seq.row, hv, jt, a.K, a.V);
}

}  // namespace linea::cuda_detail
