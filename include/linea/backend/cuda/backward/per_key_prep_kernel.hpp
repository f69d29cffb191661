// linea/backend/cuda/backward/per_key_prep_kernel.hpp — phase 1 for per-key decays (gla, kda): G is one number per
// token and key channel, so the decayed products cannot be factored into a plain Q Kᵀ (SPEC §4). With
// D_rsd = exp(G_rd − G_sd) (s ≤ r: exponent ≤ 0):
//   P_rs = Σ_d q_rd k_sd D_rsd                  A_rs = e_r Σ_d k_rd k_sd D_rsd  (s < r)
// by 16 × 16 blocks (per_key_blocks.hpp): the six below the diagonal on tensor cores through a reference row
// between their rows and columns, the four on it in log space (no exp(−G) alone ever); then as for scalar decays
// T = (I + A)⁻¹, W = T (e ⊙ exp(G) ⊙ K), U = T (w ⊙ V); and the state passes' operands Kd, Qg, gL (work.hpp).
// With Channels (GDN-2, channel_gates.hpp) the erase gate e_r is b_r per key channel and the write gate w per value
// channel: A_rs = Σ_d b_rd k_rd k_sd D_rsd, W = T (b ⊙ exp(G) ⊙ K), U = T (w ⊙ V).
// It also writes the state-free products of the reverse state pass, s Pᵀ dO and s Qgᵀ dO (staged_state_passes.hpp).
// One CTA per (chunk, value head), three tiles of [CL][ld_kv] floats (q, k, G), every product reading its operands in
// place (block_gemm_direct); the tiles are reused as their readers finish, so that every rule fits two CTAs an SM:
// A goes through global memory like P (T's workspace, which T then overwrites) and comes back into G's tile, widened
// to A, T and the solve's scratch, once G is spent; P is read back into G's tile for s Pᵀ dO.
//   1  stage q, k, log α; G by a scan per key channel; Gk, Kd, gL out
//   2  P (and A) by blocks; zeros above the diagonal. With Channels A's rows are b ⊙ k: b is read from global
//      memory (the float32 workspace copy, L1/L2) inside the blocks, where a fourth tile would leave one CTA an SM
//   3  Qg = q ⊙ exp(G) in q's tile, W's operand (b | e) ⊙ exp(G) ⊙ k in k's; A back into G's tile, T = (I + A)⁻¹;
//      W; w ⊙ V in k's tile; U
//   4  dO (k's tile) and P (G's) staged;  s Pᵀ dO, s Qgᵀ dO
#pragma once
#include "channel_gates.hpp"
#include "chunk_prep_kernel.hpp"
#include "per_key_blocks.hpp"

namespace linea::cuda_detail::bwd {

// Shared memory: q, k, G tiles; for an erasing update G's tile is widened to hold A, T (ld_cc) and the solve's scratch
// (9 216 floats > CL · ld_kv): gla 101 376 B, kda and gdn2 104 448 B.
template <bool Erases>
struct per_key_prep_shape {
  static constexpr int ut = CL * CL + CL * ld_cc + inverse_scratch;  // A, T, scratch in G's tile
  static constexpr int g_len = Erases && ut > CL * ld_kv ? ut : CL * ld_kv;
  static constexpr int q_at = 0, k_at = q_at + CL * ld_kv, g_at = k_at + CL * ld_kv, a_at = g_at,
                       t_at = a_at + CL * CL, scratch_at = t_at + CL * ld_cc, end = g_at + g_len;
  static constexpr std::size_t bytes = sizeof(float) * end;
  static_assert(q_at % 4 == 0 && k_at % 4 == 0 && g_at % 4 == 0 && ld_kv % 4 == 0, "16-byte rows (diagonal_rows' reads)");
  static_assert(bytes + 1024 <= 228 * 1024 / 2, "two CTAs an SM (Hopper: 228 KB an SM, 1 KB reserved a CTA)");
};

// (two CTAs an SM: at most 128 registers a thread)
template <bool Erases, bool Channels, precision Prec>
__global__ void __launch_bounds__(threads, 2) per_key_prep_kernel(const work w, const channel_gates cg = {}) {
  static_assert(Erases || !Channels, "channel gates belong to an erasing update");
  static_assert(CL == 4 * diag_block && threads == 8 * 32 && threads == 2 * max_kv,
                "per_key_prep_kernel: four 16-row blocks, eight warps, two threads a key channel");
  using sh = per_key_prep_shape<Erases>;
  constexpr int LD = ld_kv;
  const index_t c = blockIdx.x, hv = blockIdx.y, h = hv / w.G;
  const chunk_info ci = w.chunk[c];
  const int L = ci.len, K = int(w.K), V = int(w.V), tid = threadIdx.x, warp = tid >> 5;
  const index_t tok0 = w.token(ci.bt, ci.t0);
  extern __shared__ __align__(16) float sm[];
  float *sQ = sm + sh::q_at, *sK = sm + sh::k_at, *sG = sm + sh::g_at, *sA = sm + sh::a_at, *sT = sm + sh::t_at,
        *scratch = sm + sh::scratch_at;

  // ---- 1: the rows (zeros past L and K), loaded in batches (stage_tile); G_rd = Σ_{i≤r} log α_id in place ----------
  const auto row = [&](const float* x, index_t ld) {
    return [=](int r, int d) { return r < L && d < K ? x[(tok0 + r) * ld + d] : 0.f; };
  };
  stage_tile<CL, max_kv>(sQ, LD, row(w.q + h * w.K, w.H * w.K));
  stage_tile<CL, max_kv>(sK, LD, row(w.k + h * w.K, w.H * w.K));
  stage_tile<CL, max_kv>(sG, LD, row(w.log_alpha_k + hv * w.K, w.HV * w.K));
  __syncthreads();
  {  // two threads a channel: each scans half the rows, then the second half adds the first's total
    const int d = tid % max_kv, half = tid / max_kv;
    float acc = 0;
    for (int r = half * CL / 2; r < (half + 1) * CL / 2; ++r) sG[r * LD + d] = acc += sG[r * LD + d];
    __syncthreads();
    if (half) {
      const float first = sG[(CL / 2 - 1) * LD + d];
#pragma unroll 8
      for (int r = CL / 2; r < CL; ++r) sG[r * LD + d] += first;
    }
    __syncthreads();
  }
  const std::size_t ck = w.ch(c, hv) * CL * w.K;
  for (int e = tid; e < L * K; e += threads) {
    const int r = e / K, d = e % K;
    const float g = sG[r * LD + d];
    w.Gk[ck + e] = g;
    w.Kd[ck + e] = sK[r * LD + d] * __expf(sG[(L - 1) * LD + d] - g);
  }
  for (int d = tid; d < K; d += threads) w.gL[w.ch(c, hv) * w.K + d] = __expf(sG[(L - 1) * LD + d]);

  // ---- 2: P into global memory (rows < L), A into T's workspace (zero rows past L) ---------------------------------
  float* P = w.P + w.ch(c, hv) * CL * CL;
  float* Tg = w.Tinv + w.ch(c, hv) * CL * CL;
  const float* e_tok = w.erase + tok0 * w.HV + hv;  // row r at r·HV
  const float* w_tok = w.write + tok0 * w.HV + hv;
  const auto put_p = [&](int r, int s, float x) {
    if (r < L) P[r * CL + s] = x;
  };
  const auto put_a = [&](int r, int s, float x) {  // (kda: A's row r scaled by e_r)
    if constexpr (Erases) Tg[r * CL + s] = Channels ? x : r < L ? e_tok[r * w.HV] * x : 0.f;
  };
  for (int e = tid; e < CL * CL; e += threads) {  // the zeros on (A) and above the diagonal
    const int r = e / CL, s = e % CL;
    if (s > r && r < L && s < L) P[e] = 0;
    if (Erases && s >= r) Tg[e] = 0;
  }
  // warp w: half of diagonal block w / 2 (rows split for equal work: one row of P and A a pass, or two of P), and
  // off-diagonal block w (w < 6)
  {
    const auto b_at = [&](int r, int d) {  // GDN-2's b_rd (zero past L and K, as the tiles)
      return r < L && d < K ? cg.b[((tok0 + r) * w.HV + hv) * w.K + d] : 0.f;
    };
    const int I = warp < 1 ? 1 : warp < 3 ? 2 : 3, J = warp - I * (I - 1) / 2;  // (1,0) (2,0) (2,1) (3,0) (3,1) (3,2)
    const int blk = warp / 2, split = Erases ? 11 : 12;
    diagonal_rows<Erases, Channels>(diag_block * blk, warp % 2 ? split : 0, warp % 2 ? diag_block : split, sQ, sK,
                                    b_at, sG, put_p, put_a);
    if (warp < 6) off_diagonal_block<Erases, Channels, Prec>(I, J, K, sQ, sK, b_at, sG, put_p, put_a);
  }
  __syncthreads();

  // ---- 3: Qg = Q ⊙ exp(G) in q's tile (P and A were its last readers), W's operand (b | e) ⊙ exp(G) ⊙ K in k's --------
  for (int e = tid; e < CL * max_kv; e += threads) {
    const int r = e / max_kv, d = e % max_kv;
    const float gamma = __expf(sG[r * LD + d]);
    sQ[r * LD + d] *= gamma;
    if constexpr (Channels) sK[r * LD + d] *= (r < L && d < K ? cg.b[((tok0 + r) * w.HV + hv) * w.K + d] : 0.f) * gamma;
    else if constexpr (Erases) sK[r * LD + d] *= (r < L ? e_tok[r * w.HV] : 0.f) * gamma;
  }
  const float* dO = w.d_o + (tok0 * w.HV + hv) * w.V;  // row r at r·HV·V
  if constexpr (Erases) {
    __syncthreads();  // A back from global memory into G's tile (G's last reader: the pass above)
    stage_tile<CL, CL>(sA, CL, [&](int r, int s) { return Tg[r * CL + s]; });
    unit_lower_inverse<ld_cc>(sA, sT, scratch);  // (starts and ends with a barrier)
    for (int e = tid; e < CL * CL; e += threads) Tg[e] = sT[(e / CL) * ld_cc + e % CL];
    const float* v = w.v + (tok0 * w.HV + hv) * w.V;
    // W = T (b|e ⊙ exp(G) ⊙ K), U = T (w ⊙ V)   (T is lower triangular: its zeros do the masking)
    float* Wg = w.W + w.ch(c, hv) * CL * w.K;
    block_gemm_direct<Prec, 64, direct_unroll<Erases, true>>(
        L, K, L, [&](int r, int s) { return sT[r * ld_cc + s]; }, [&](int s, int d) { return sK[s * LD + d]; },
        [&](int r, int d, float acc) { Wg[r * w.K + d] = acc; });
    // U's operand w ⊙ V in k's tile (W, its last reader, ended at a barrier)
    stage_tile<CL, max_kv>(sK, LD, [&](int s, int j) {
      if (s >= L || j >= V) return 0.f;
      return (Channels ? cg.w[((tok0 + s) * w.HV + hv) * w.V + j] : w_tok[s * w.HV]) * v[s * w.HV * w.V + j];
    });
    float* Ug = w.U + w.ch(c, hv) * CL * w.V;
    block_gemm_direct<Prec, 64, direct_unroll<Erases, true>>(
        L, V, L, [&](int r, int s) { return sT[r * ld_cc + s]; }, [&](int s, int j) { return sK[s * LD + j]; },
        [&](int r, int j, float acc) { Ug[r * w.V + j] = acc; });
  }
  // ---- 4: the reverse state pass's products that do not involve the state (as chunk_prep_kernel's): s Pᵀ dO into
  // dU's workspace and s Qgᵀ dO into dh's. dO in k's tile (its last reader, P or U, ended at a barrier), P read back
  // into G's tile (its last reader, Qg's pass or U, too: gla's one barrier below) — global writes of this CTA, seen
  // after the barrier.
  float* sO = sK;
  stage_tile<CL, max_kv>(sO, LD, [&](int r, int j) { return r < L && j < V ? dO[r * w.HV * w.V + j] : 0.f; });
  if constexpr (!Erases) __syncthreads();
  float* sP = sG;
  stage_tile<CL, CL>(sP, ld_cc, [&](int r, int s) { return r < L && s < L ? P[r * CL + s] : 0.f; });
  float* dUg = w.dU + w.ch(c, hv) * CL * w.V;
  float* dhg = w.dh + w.ch(c, hv) * w.K * w.V;
  const float scale = w.scale;
  block_gemm_direct<Prec, 64, direct_unroll<Erases, true>>(
      L, V, L, [&](int s, int r) { return sP[r * ld_cc + s]; }, [&](int r, int j) { return sO[r * LD + j]; },
      [&](int s, int j, float acc) { dUg[s * w.V + j] = scale * acc; });
  block_gemm_direct<Prec, 64, direct_unroll<Erases, true>>(
      K, V, L, [&](int d, int r) { return sQ[r * LD + d]; }, [&](int r, int j) { return sO[r * LD + j]; },
      [&](int d, int j, float acc) { dhg[d * w.V + j] = scale * acc; });
}

}  // namespace linea::cuda_detail::bwd
