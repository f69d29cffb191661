// linea/backend/cuda/delta_chunk_kernel.hpp — the chunkwise forward of the delta rules with a scalar (or no)
// decay, on tensor cores:
//   S_t = γ_t (I − β_t k_t k_tᵀ) S_{t-1} + β_t k_t v_tᵀ,  o_t = s S_tᵀ q_t   (DeltaNet: γ = 1; Gated DeltaNet)
//
// Per chunk of CL = 64 tokens, G_r = Σ_{s ≤ r} log₂ γ_s inside the chunk, C its last row (SPEC §4, UT form):
//   A = Diag(β) (K Kᵀ) ⊙ 2^(G_r − G_s), s < r          T = (I + A)⁻¹  (unit lower triangular)
//   U = T Z,  Z = Diag(β) (V − Diag(2^G) K S)           (the write residual u)
//   O = s [Diag(2^G) Q S + P U],  P = (Q Kᵀ) ⊙ 2^(G_r − G_s), s ≤ r
//   S ← 2^(G_C) S + Kᵀ U_d,  U_d = Diag(2^(G_C − G)) U
// T comes from A blockwise on tensor cores, in 16×16 blocks: the four diagonal blocks by forward substitution in
// fp32 (a lane per column), then block column j by one warp, T_ij = −T_ii Σ_{j ≤ k < i} A_ik T_kj. A chunk runs
//   X: Q S, K S → Z (in place of V); P and A            T: the diagonal blocks | the block columns
//   U: U = T Z, U_d (and the residual)                   Y: O += P U, out; S in registers, Sᵀ for the next chunk
// with a barrier after each. Same CTA shape, loads and state tile as scalar_chunk_kernel.hpp; shared memory is
// reused phase by phase to keep two CTAs per SM: T in the Sᵀ tile (free from X to Y), U in A's tile, U_d in the
// fp32 diagonal blocks', Z in V's (so v is single-buffered and refilled during Y).
#pragma once
#include "chunk_tiles.hpp"
#include "ut_blocks.hpp"

namespace linea::cuda_detail {

// The rules this kernel computes: erase with β, scalar or no decay (delta, gated_delta), main pass.
template <class Rule, pass P>
inline constexpr bool delta_chunk_rule = P == pass::main && Rule::update::erases && Rule::update::uses_beta &&
                                         !Rule::update::uses_channel_gates && !Rule::decay::key_gate;

struct delta_chunk_shape {
  static constexpr int CL = tiles::CL, BV = tiles::BV, LDK = tiles::LDK, LD = tiles::LD64, LDX = tiles::ut_scratch_ld;
  // the 16-bit tiles, in elements, in the order they are carved (second name: what reuses the tile later)
  static constexpr int q_at = 0,        // q                                   [CL][LDK]
      k_at = q_at + CL * LDK,           // k, 2 buffers                        [2][CL][LDK]
      v_at = k_at + 2 * CL * LDK,       // v, then Z                           [CL][LD]
      s_at = v_at + CL * LD,            // Sᵀ [BV][LDK], T [CL][LD] from X to Y
      p_at = s_at + BV * LDK,           // P                                   [CL][LD]
      a_at = p_at + CL * LD,            // A, then U                           [CL][LD]
      d_at = a_at + CL * LD,            // fp32 diagonal blocks of A [4][16][17] and 3 warps' [16][LDX] scratch,
      end = d_at + CL * LD;             //   then U_d [CL][LD]
  static constexpr int ad_bytes = 4 * 16 * 17 * 4;
  static_assert(ad_bytes % 16 == 0 && ad_bytes + 3 * 16 * LDX * 2 <= CL * LD * 2, "A's diagonal blocks and scratch fit U_d");
  static constexpr std::size_t bytes = 2 * std::size_t(end) + sizeof(float) * 4 * CL;  // + G, β: 2 buffers each
  static_assert(bytes <= 113 * 1024, "two CTAs per SM");
};

template <class Rule, class T, class E>
__global__ void __launch_bounds__(tiles::threads, 2) delta_chunk_kernel(const kernel_args<T> a) {
  using sh = delta_chunk_shape;
  using tiles::ex2;
  constexpr int CL = sh::CL, KP = tiles::KP, BV = sh::BV, LDK = sh::LDK, LD = sh::LD, LDX = sh::LDX;
  constexpr bool decays = Rule::decay::scalar_gate;
  const source<T> src{a};
  const tiles::site<T> cta{a};
  const index_t hv = cta.hv, jt = cta.jt;
  const seq_range& seq = cta.seq;
  const int Vw = cta.Vw;
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;

  extern __shared__ __align__(16) unsigned char smem_raw[];
  E* base = reinterpret_cast<E*>(smem_raw);
  E *Qs = base + sh::q_at, *Zs = base + sh::v_at, *ST = base + sh::s_at, *Ts = base + sh::s_at, *Pe = base + sh::p_at;
  E *As = base + sh::a_at, *Us = base + sh::a_at, *Ud = base + sh::d_at;
  float* Ad = reinterpret_cast<float*>(base + sh::d_at);                             // [4][16][17]
  E* scratch = reinterpret_cast<E*>(reinterpret_cast<unsigned char*>(Ad) + sh::ad_bytes);  // [3][16][LDX]
  float* Gbuf = reinterpret_cast<float*>(base + sh::end);  // [2][CL]
  float* Bbuf = Gbuf + 2 * CL;                             // β [2][CL]
  auto Kbuf = [&](int b) { return base + sh::k_at + b * CL * LDK; };

  auto raw_g = [&](index_t c0, int L, int r) {
    if constexpr (decays) return r < L ? src.g(seq.bt, c0 + r, hv) * tiles::log2e : 0.f;
    else return 0.f;
  };
  auto raw_beta = [&](index_t c0, int L, int r) { return r < L ? src.beta(seq.bt, c0 + r, hv) : 0.f; };
  auto put_scalars = [&](float g0, float g1, float b0, float b1, int b) {  // one warp
    if constexpr (decays) tiles::scan64(g0, g1, Gbuf + b * CL);
    Bbuf[b * CL + lane] = b0, Bbuf[b * CL + lane + 32] = b1;
  };

  float acc[BV / 8][4];
  tiles::load_state(acc, a.initial_state, seq.row, hv, jt, a.K, a.V);
  if (seq.t0 < seq.t1) {
    const int L = cta.rows_in(seq.t0);
    cta.fetch_q(Qs, a, seq.t0, L), cta.fetch_k(Kbuf(0), a, seq.t0, L), cta.fetch_v(Zs, a, seq.t0, L);
    if (warp == 0)
      put_scalars(raw_g(seq.t0, L, lane), raw_g(seq.t0, L, lane + 32), raw_beta(seq.t0, L, lane),
                  raw_beta(seq.t0, L, lane + 32), 0);
  }
  tiles::store_state_t(ST, LDK, acc);

  // Warp w: rows r0 .. r0 + 15 of P, A, Z, U and O; columns c0w .. c0w + 31 (tokens of P and A, value columns else).
  const int rb = warp >> 1, r0 = 16 * rb, c0w = 32 * (warp & 1);
  int buf = 0;
  for (index_t c0 = seq.t0; c0 < seq.t1; c0 += CL, buf ^= 1) {
    const int L = cta.rows_in(c0);
    const bool more = c0 + CL < seq.t1;
    const int Ln = more ? cta.rows_in(c0 + CL) : 0;
    const E* Ks = Kbuf(buf);
    const float *Gc = Gbuf + buf * CL, *Bc = Bbuf + buf * CL;
    auto G = [&](int r) { return decays ? Gc[r] : 0.f; };
    tiles::cp_async_wait_all();
    __syncthreads();  // this chunk's q, k, v, G, β and Sᵀ are in; the last chunk's tiles are read
    if (more) cta.fetch_k(Kbuf(buf ^ 1), a, c0 + CL, Ln);

    // ---- X: Q S; Z = Diag(β) (V − Diag(2^G) K S) in place of V; P and A ---------------------------------------------
    float o[4][4] = {};
    mma_strip<E, 4, false, false>(o, Qs + r0 * LDK, LDK, ST + c0w * LDK, LDK, KP / 16);
    {
      float z[4][4] = {};
      mma_strip<E, 4, false, false>(z, Ks + r0 * LDK, LDK, ST + c0w * LDK, LDK, KP / 16);
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int r = r0 + acc_row(2 * h);
        const float beta = Bc[r], f = decays ? ex2(G(r)) : 1.f;
#pragma unroll
        for (int t = 0; t < 4; ++t) {
          E* at = Zs + r * LD + c0w + 8 * t + acc_col(0);  // this lane's own two values: in place is safe
          const float v0 = to_float(at[0]), v1 = to_float(at[1]);
          *reinterpret_cast<std::uint32_t*>(at) = pack2<E>(beta * (v0 - f * z[t][2 * h]), beta * (v1 - f * z[t][2 * h + 1]));
        }
      }
    }
    if (c0w <= r0 + 15) {  // P and A strips with entries on or below the diagonal (the others are never read)
      float p[4][4] = {}, x[4][4] = {};
      mma_strip<E, 4, false, false>(p, Qs + r0 * LDK, LDK, Ks + c0w * LDK, LDK, KP / 16);
      mma_strip<E, 4, false, false>(x, Ks + r0 * LDK, LDK, Ks + c0w * LDK, LDK, KP / 16);
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int r = r0 + acc_row(2 * h);
        const float gr = G(r), beta = Bc[r];
#pragma unroll
        for (int t = 0; t < 4; ++t) {
          const int s = c0w + 8 * t + acc_col(0);
          float d0 = 1.f, d1 = 1.f;
          if constexpr (decays) d0 = ex2(gr - Gc[s]), d1 = ex2(gr - Gc[s + 1]);
          // selects: what is masked may be inf
          const float p0 = s <= r ? p[t][2 * h] * d0 : 0.f, p1 = s + 1 <= r ? p[t][2 * h + 1] * d1 : 0.f;
          const float a0 = s < r ? beta * x[t][2 * h] * d0 : 0.f, a1 = s + 1 < r ? beta * x[t][2 * h + 1] * d1 : 0.f;
          *reinterpret_cast<std::uint32_t*>(Pe + r * LD + s) = pack2<E>(p0, p1);
          *reinterpret_cast<std::uint32_t*>(As + r * LD + s) = pack2<E>(a0, a1);
          if (s >= r0 && s < r0 + 16) {  // the diagonal block, in fp32 for the substitution
            float* d = Ad + (rb * 16 + r - r0) * 17 + s - r0;
            d[0] = a0, d[1] = a1;
          }
        }
      }
    }
    __syncthreads();  // Z, P, A in; every read of q and Sᵀ done
    if (more) cta.fetch_q(Qs, a, c0 + CL, Ln);

    // ---- T = (I + A)⁻¹: the diagonal blocks (warps 0, 1), then the block columns (warps 0 .. 2) -------------------------
    if (warp < 2) tiles::invert_diagonal_blocks(Ad, Ts, LD, warp);
    __syncthreads();
    if (warp < 3) tiles::fill_block_column(As, Ts, LD, scratch + warp * 16 * LDX, warp);
    __syncthreads();  // T in; A's tiles are free

    // ---- U = T Z (T is zero past the diagonal block); U_d; the residual ------------------------------------------------
    {
      float u[4][4] = {};
      mma_strip<E, 4, false, true>(u, Ts + r0 * LD, LD, Zs + c0w, LD, rb + 1);
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int r = r0 + acc_row(2 * h);
        const float f = decays ? ex2(Gc[CL - 1] - Gc[r]) : 1.f;
#pragma unroll
        for (int t = 0; t < 4; ++t) {
          const int j = c0w + 8 * t + acc_col(0);
          *reinterpret_cast<std::uint32_t*>(Us + r * LD + j) = pack2<E>(u[t][2 * h], u[t][2 * h + 1]);
          *reinterpret_cast<std::uint32_t*>(Ud + r * LD + j) = pack2<E>(f * u[t][2 * h], f * u[t][2 * h + 1]);
        }
      }
      if (a.residual.ptr) tiles::store_strip(a.residual, seq.bt, c0, hv, jt, r0, c0w, L, Vw, u, 1.f);
    }
    __syncthreads();  // U, U_d in; Z and T are read
    // the next chunk's g and β: read here, not at the top, so that they hold no registers through X (the peak)
    float gn0 = 0, gn1 = 0, bn0 = 0, bn1 = 0;
    if (warp == 0 && more) {
      gn0 = raw_g(c0 + CL, Ln, lane), gn1 = raw_g(c0 + CL, Ln, lane + 32);
      bn0 = raw_beta(c0 + CL, Ln, lane), bn1 = raw_beta(c0 + CL, Ln, lane + 32);
    }
    if (more) cta.fetch_v(Zs, a, c0 + CL, Ln);

    // ---- Y: O += P U, out; S ← 2^(G_C) S + Kᵀ U_d; Sᵀ for the next chunk ----------------------------------------------
    if constexpr (decays) {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const float f = ex2(Gc[r0 + acc_row(2 * h)]);
#pragma unroll
        for (int t = 0; t < 4; ++t) o[t][2 * h] *= f, o[t][2 * h + 1] *= f;
      }
    }
    mma_strip<E, 4, false, true>(o, Pe + r0 * LD, LD, Us + c0w, LD, rb + 1);  // P is zero past the diagonal
    tiles::store_strip(a.o, seq.bt, c0, hv, jt, r0, c0w, L, Vw, o, a.scale);
    if constexpr (decays) {
      const float f = ex2(Gc[CL - 1]);
#pragma unroll
      for (int nt = 0; nt < BV / 8; ++nt)
#pragma unroll
        for (int e = 0; e < 4; ++e) acc[nt][e] *= f;
    }
    mma_strip<E, BV / 8, true, true>(acc, Ks + 16 * warp, LDK, Ud, LD, CL / 16);
    tiles::store_state_t(ST, LDK, acc);  // T (in the same tile) was last read before the barrier above
    if (warp == 0 && more) put_scalars(gn0, gn1, bn0, bn1, buf ^ 1);
  }
  tiles::save_state(acc, a.final_state, seq.row, hv, jt, a.K, a.V);
}

}  // namespace linea::cuda_detail
