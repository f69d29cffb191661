// bench/cuda/scalar_chunk_v2.hpp — fwd17's balanced 64-token kernel of the rules that only add (the library's for
// a while on branch fwd17, commit 3f6b451): every warp the same query-side work per phase (O row blocks ra, 3 − ra in
// 16-column quarters, P's 20 tiles dealt 2–3 a warp, Q S and P in one pass). Same outputs as main's bit for bit,
// measured slower (bench/cuda/README.md, fwd17); kept for bench/cuda/fwd17_ab.cu's A/B. Not part of the library.
#pragma once
#include <linea/core/epilogue.hpp>
#include <linea/backend/cuda/causal_strip.hpp>
#include <linea/backend/cuda/chunk_tiles.hpp>

namespace linea::cuda_detail::v2 {

// The rules this kernel computes: no erase, no β, no per-key decay (additive, scalar-gated), main pass.
// (The kernel copies v straight into the operand tiles, so the update must be the plain additive one, w = 1; log α
// comes through the decay's hook.)
template <class Rule, pass P>
inline constexpr bool scalar_chunk_rule_v2 = P == pass::main && std::is_same_v<typename Rule::update, update::additive> &&
                                          Rule::decay::kind != decay_kind::per_key;

struct scalar_chunk_shape_v2 {
  static constexpr int CL = tiles::CL, BV = tiles::BV, LDK = tiles::LDK, LDV = tiles::LD64, LDP = tiles::LD64;
  // the 16-bit tiles, in elements, in the order they are carved
  static constexpr int q_at = 0,                   // q            [CL][LDK]
      k_at = q_at + CL * LDK,                      // k, 2 buffers [2][CL][LDK]
      v_at = k_at + 2 * CL * LDK,                  // v, 2 buffers [2][CL][LDV]
      s_at = v_at + 2 * CL * LDV,                  // Sᵀ           [BV][LDK]
      p_at = s_at + BV * LDK,                      // P            [CL][LDP]
      vd_at = p_at + CL * LDP,                     // V_d          [CL][LDV]
      end = vd_at + CL * LDV;
  // + G (2 buffers); normalize's z_c [KP], q·z_c [CL] and P's row sums per warp of a row block's four [4][CL]
  static constexpr int zs_at = 2 * CL, qz_at = zs_at + tiles::KP, rows_at = qz_at + CL, floats = rows_at + 4 * CL;
  static constexpr std::size_t bytes = 2 * std::size_t(end) + sizeof(float) * floats;
  static_assert(bytes <= 113 * 1024, "two CTAs per SM");
};

// Phase X's products of warp (ra, rb, q), one pass over its two row blocks of Q (A fragments loaded once for all):
//   o[i][j]  += Q(rows of block i) · Sᵀ(16q + 8j ..)ᵀ     i = 0: block ra, 1: block rb; over all K (ST: [column][key])
//   pb[j]    += Q(rb) · K(16q + 8j ..)ᵀ                   PB: rb's P tiles 2q, 2q + 1 (Kt: [token][key])
//   pa[0]    += Q(ra) · K(8q ..)ᵀ                         NA = 1: ra's P tile q
//   pa[0, 1] += Q(ra) · K(16 + 8j ..)ᵀ                    NA = 2: ra's P tiles 2, 3
// Each accumulator sums its k-steps in order, as mma_strip does: the same values as main's strips.
template <class E, bool PB, int NA>
__device__ __forceinline__ void x_products(float (&o)[2][2][4], float (&pb)[2][4], float (&pa)[2][4], const E* Q,
                                           const E* ST, const E* Kt, int ld, int ra, int rb, int q) {
  static_assert(sizeof(E) == 2 && NA >= 0 && NA <= 2, "16-bit operands");
  const int lane = threadIdx.x & 31, l8 = lane & 7, m = lane >> 3;
  // mma_strip's lane addressing (mma.hpp): A [m][k]; B [n][k], two n-tiles an x4; one n-tile an x2 (lanes 0-15)
  const int a_lane = (l8 + 8 * (m & 1)) * ld + 8 * (m >> 1), b_lane = (l8 + 8 * (m >> 1)) * ld + 8 * (m & 1);
  const E *qa = Q + 16 * ra * ld + a_lane, *qb = Q + 16 * rb * ld + a_lane, *st = ST + 16 * q * ld + b_lane;
  const E* kb = Kt + 16 * q * ld + b_lane;
  const E* ka = NA == 2 ? Kt + 16 * ld + b_lane : Kt + (8 * q + l8) * ld + 8 * (m & 1);
#pragma unroll
  for (int s = 0; s < tiles::KP / 16; ++s) {
    std::uint32_t a0[4], a1[4], b[4];
    ldmatrix_x4(a0, qa + 16 * s);
    ldmatrix_x4(a1, qb + 16 * s);
    ldmatrix_x4(b, st + 16 * s);
    {
      const std::uint32_t b0[2] = {b[0], b[1]}, b1[2] = {b[2], b[3]};
      mma_regs<E>(o[0][0], a0, b0), mma_regs<E>(o[0][1], a0, b1);
      mma_regs<E>(o[1][0], a1, b0), mma_regs<E>(o[1][1], a1, b1);
    }
    if constexpr (PB) {
      std::uint32_t c[4];
      ldmatrix_x4(c, kb + 16 * s);
      const std::uint32_t c0[2] = {c[0], c[1]}, c1[2] = {c[2], c[3]};
      mma_regs<E>(pb[0], a1, c0), mma_regs<E>(pb[1], a1, c1);
    }
    if constexpr (NA == 1) {
      std::uint32_t d[2];
      ldmatrix_x2(d, ka + 16 * s);
      mma_regs<E>(pa[0], a0, d);
    } else if constexpr (NA == 2) {
      std::uint32_t d[4];
      ldmatrix_x4(d, ka + 16 * s);
      const std::uint32_t d0[2] = {d[0], d[1]}, d1[2] = {d[2], d[3]};
      mma_regs<E>(pa[0], a0, d0), mma_regs<E>(pa[1], a0, d1);
    }
  }
}

// One 16×8 tile of P (row block R, tokens 8t ..) from its accumulators: the in-chunk decay 2^(G_r − G_s), the causal
// mask, rounded into Pe; its rows' sums (float32, before rounding) added to rows[0] (row 16R + g), rows[1] (+ 8).
template <bool Decays, class E>
__device__ __forceinline__ void p_tile_out(E* Pe, int ldp, const float (&c)[4], int R, int t, const float* Gc,
                                           float (&rows)[2]) {
  const int s = 8 * t + acc_col(0);
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int r = 16 * R + acc_row(2 * h);
    float x0 = c[2 * h], x1 = c[2 * h + 1];
    if constexpr (Decays) {
      const float gr = Gc[r];
      x0 *= tiles::ex2(gr - Gc[s]), x1 *= tiles::ex2(gr - Gc[s + 1]);
    }
    x0 = s <= r ? x0 : 0.f, x1 = s + 1 <= r ? x1 : 0.f;  // a select: what is masked may be inf
    *reinterpret_cast<std::uint32_t*>(Pe + r * ldp + s) = pack2<E>(x0, x1);
    rows[h] += x0 + x1;
  }
}

template <class Rule, class T, class E>
__global__ void __launch_bounds__(tiles::threads, 2) scalar_chunk_kernel_v2(const kernel_args<T> a) {
  using sh = scalar_chunk_shape_v2;
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

  // Warp w: O's row blocks ra, rb (rows 16 ra .., 16 rb ..) in value columns 16 q .. 16 q + 15; P's tiles of rb
  // 2q, 2q + 1 where they reach its diagonal (pb: q ≤ rb), and na of ra's (1: tile q; 2: tiles 2, 3) — every tile
  // on or below the diagonal once: rb = 3 by q = 0..3, ra = 0 by q = 0, 1; rb = 2 by q = 0..2, ra = 1 by q = 0, 1, 3.
  const int ra = warp >> 2, rb = 3 - ra, q = warp & 3;
  const bool pb = q <= rb;
  const int na = q < 2 ? 1 : (ra == 1 && q == 3) ? 2 : 0;
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
    float o[2][2][4] = {}, pbt[2][4] = {}, pat[2][4] = {};
    if (pb && na == 1) x_products<E, true, 1>(o, pbt, pat, Qs, ST, Ks, LDK, ra, rb, q);
    else if (pb) x_products<E, true, 0>(o, pbt, pat, Qs, ST, Ks, LDK, ra, rb, q);
    else x_products<E, false, 2>(o, pbt, pat, Qs, ST, Ks, LDK, ra, rb, q);
    float rows_a[2] = {0.f, 0.f}, rows_b[2] = {0.f, 0.f};  // this thread's part of P's row sums (normalize)
    if (pb) p_tile_out<decays>(Pe, LDP, pbt[0], rb, 2 * q, Gc, rows_b), p_tile_out<decays>(Pe, LDP, pbt[1], rb, 2 * q + 1, Gc, rows_b);
    if (na == 1) p_tile_out<decays>(Pe, LDP, pat[0], ra, q, Gc, rows_a);
    if (na == 2) p_tile_out<decays>(Pe, LDP, pat[0], ra, 2, Gc, rows_a), p_tile_out<decays>(Pe, LDP, pat[1], ra, 3, Gc, rows_a);
    if (norm) {  // P's row sums over this warp's tiles of blocks ra, rb (0 where none) into slot q; q_r·z_c per row
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        float x = rows_a[h], y = rows_b[h];
        x += __shfl_xor_sync(0xffffffffu, x, 1), x += __shfl_xor_sync(0xffffffffu, x, 2);
        y += __shfl_xor_sync(0xffffffffu, y, 1), y += __shfl_xor_sync(0xffffffffu, y, 2);
        if ((lane & 3) == 0) Prow[q * CL + 16 * ra + acc_row(2 * h)] = x, Prow[q * CL + 16 * rb + acc_row(2 * h)] = y;
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
    const int blk[2] = {ra, rb};
    if constexpr (decays) {
#pragma unroll
      for (int i = 0; i < 2; ++i)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const float f = ex2(Gc[16 * blk[i] + acc_row(2 * h)]);
#pragma unroll
          for (int j = 0; j < 2; ++j) o[i][j][2 * h] *= f, o[i][j][2 * h + 1] *= f;
        }
    }
#pragma unroll
    for (int i = 0; i < 2; ++i)  // P is zero past the diagonal: block R needs R + 1 k-steps
      causal_strip<E, 2, true>(o[i], Pe + 16 * blk[i] * LDP, LDP, Vs + 16 * q, LDV, blk[i] + 1);
    // the state's products issued before o's epilogue and stores, which then run under them
    if constexpr (decays) {
      const float f = ex2(Gc[CL - 1]);
#pragma unroll
      for (int nt = 0; nt < BV / 8; ++nt)
#pragma unroll
        for (int e = 0; e < 4; ++e) acc[nt][e] *= f;
    }
    mma_strip<E, BV / 8, true, true>(acc, Ks + 16 * warp, LDK, decays ? Vd : Vs, LDV, CL / 16);
    if (norm) {  // o_r / (s q_r·z_r + 1e-10); then z_c += Σ k of the chunk (rows past L are zero-filled)
#pragma unroll
      for (int i = 0; i < 2; ++i)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const int r = 16 * blk[i] + acc_row(2 * h);
          const float f = 1.f / normaliser_divisor(a.scale * (QZ[r] + Prow[r] + Prow[CL + r] + Prow[2 * CL + r] + Prow[3 * CL + r]));
#pragma unroll
          for (int j = 0; j < 2; ++j) o[i][j][2 * h] *= f, o[i][j][2 * h + 1] *= f;
        }
      if (tid < KP) {
        float z = 0;
#pragma unroll 8
        for (int r = 0; r < CL; ++r) z += to_float(Ks[r * LDK + tid]);
        Zs[tid] += z;  // read again only after the next chunk's first barrier
      }
    }
#pragma unroll
    for (int i = 0; i < 2; ++i) tiles::store_strip(a.o, seq.bt, c0, hv, jt, 16 * blk[i], 16 * q, L, Vw, o[i], a.scale);
    tiles::store_state_t(ST, LDK, acc);  // no warp reads Sᵀ until the next chunk's first barrier
    if (decays && warp == 0 && more) tiles::scan64(gn0, gn1, Gbuf + (buf ^ 1) * CL);
  }
  tiles::save_state(acc, a.final_state, seq.row, hv, jt, a.K, a.V);
}

}  // namespace linea::cuda_detail::v2
