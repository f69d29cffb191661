// bench/cuda/per_key_prep_v0.hpp — main 16a7383's phase 1 for per-key decays (backward/per_key_prep_kernel.hpp before
// prep9): P and A summed element by element in log space over the key channels for every pair of the chunk. Kept
// only as grad_ab.cu's A/B baseline (-DGRAD_AB_PREP_V0), same arithmetic, renamed (_v0).
#pragma once
#include <linea/backend/cuda/backward/channel_gates.hpp>
#include <linea/backend/cuda/backward/chunk_prep_kernel.hpp>

namespace linea::cuda_detail::bwd {

inline constexpr int LK_v0 = max_kv + 1;  // padded row stride of [CL][K] shared tiles read column-wise

template <bool Erases, bool Channels = false>  // (A, T only for an erasing update; b only for channel gates)
struct per_key_prep_shape_v0 {
  static constexpr int ut_cc = Erases ? CL * CL : 0, b_cl = Channels ? CL * LK_v0 : 0;
  static constexpr int q_at = 0, k_at = q_at + CL * LK_v0, g_at = k_at + CL * LK_v0, a_at = g_at + CL * LK_v0,
                       t_at = a_at + ut_cc, b_at = t_at + ut_cc, p_at = b_at + b_cl, scratch_at = p_at + CL * CL,
                       end = scratch_at + gemm_scratch;
  static constexpr std::size_t bytes = sizeof(float) * end;
};

template <bool Erases, bool Channels, precision Prec>
__global__ void __launch_bounds__(threads) per_key_prep_kernel_v0(const work w, const channel_gates cg = {}) {
  static_assert(Erases || !Channels, "channel gates belong to an erasing update");
  using sh = per_key_prep_shape_v0<Erases, Channels>;
  const index_t c = blockIdx.x, hv = blockIdx.y, h = hv / w.G;
  const chunk_info ci = w.chunk[c];
  const int L = ci.len, K = int(w.K), V = int(w.V), tid = threadIdx.x;
  const index_t tok0 = w.token(ci.bt, ci.t0);
  extern __shared__ __align__(16) float sm[];
  float *sQ = sm + sh::q_at, *sK = sm + sh::k_at, *sG = sm + sh::g_at, *sA = sm + sh::a_at, *sT = sm + sh::t_at,
        *sB = sm + sh::b_at, *sP = sm + sh::p_at, *scratch = sm + sh::scratch_at;

  // the rows (zeros past L and K), loaded in batches (stage_tile), then G_rd = Σ_{i≤r} log α_id scanned in place
  const auto row = [&](const float* x, index_t ld) {
    return [=](int r, int d) { return r < L && d < K ? x[(tok0 + r) * ld + d] : 0.f; };
  };
  stage_tile<CL, max_kv>(sQ, LK_v0, row(w.q + h * w.K, w.H * w.K));
  stage_tile<CL, max_kv>(sK, LK_v0, row(w.k + h * w.K, w.H * w.K));
  if constexpr (Channels) stage_tile<CL, max_kv>(sB, LK_v0, row(cg.b + hv * w.K, w.HV * w.K));
  stage_tile<CL, max_kv>(sG, LK_v0, row(w.log_alpha_k + hv * w.K, w.HV * w.K));
  __syncthreads();
  for (int d = tid; d < K; d += threads) {  // one channel per thread
    float acc = 0;
    for (int r = 0; r < CL; ++r) sG[r * LK_v0 + d] = acc += sG[r * LK_v0 + d];
  }
  __syncthreads();
  const std::size_t ck = w.ch(c, hv) * CL * w.K;
  for (int e = tid; e < L * K; e += threads) {
    const int r = e / K, d = e % K;
    const float g = sG[r * LK_v0 + d];
    w.Gk[ck + e] = g;
    w.Kd[ck + e] = sK[r * LK_v0 + d] * __expf(sG[(L - 1) * LK_v0 + d] - g);
  }
  for (int d = tid; d < K; d += threads) w.gL[w.ch(c, hv) * w.K + d] = __expf(sG[(L - 1) * LK_v0 + d]);

  float* P = w.P + w.ch(c, hv) * CL * CL;
  const float* e_tok = w.erase + tok0 * w.HV + hv;  // row r at r·HV
  const float* w_tok = w.write + tok0 * w.HV + hv;
  for (int e = tid; e < CL * CL; e += threads) {  // the zeros above the diagonal
    const int r = e / CL, s = e % CL;
    if (s <= r) continue;
    if (s < L) P[e] = 0, sP[e] = 0;
    if (Erases) sA[e] = 0;
  }
  // the lower triangle (s ≤ r) in warp tasks of one row and 32 columns: rows r < 32 are one task (columns 0..31),
  // rows r ≥ 32 two, so the 8 warps take 12 tasks each (an element-per-thread walk gave half the warps 16, half 8)
  static_assert(CL == 64 && threads % 32 == 0, "per_key_prep_kernel: tasks of 32 columns in a 64-token chunk");
  for (int task = tid / 32; task < CL / 2 + CL; task += threads / 32) {
    const int r = task < CL / 2 ? task : CL / 2 + (task - CL / 2) / 2;
    const int s = (task < CL / 2 ? 0 : (task - CL / 2) % 2 * 32) + tid % 32;
    if (s > r) continue;
    float p = 0, a = 0;
    if (r < L)
      for (int d = 0; d < K; ++d) {
        const float decay = __expf(sG[r * LK_v0 + d] - sG[s * LK_v0 + d]);
        p = fmaf(sQ[r * LK_v0 + d] * sK[s * LK_v0 + d], decay, p);
        if (Erases) a = fmaf((Channels ? sB[r * LK_v0 + d] : 1.f) * sK[r * LK_v0 + d] * sK[s * LK_v0 + d], decay, a);
      }
    if (r < L) P[r * CL + s] = p, sP[r * CL + s] = p;
    if (Erases) sA[r * CL + s] = s < r && r < L ? (Channels ? 1.f : e_tok[r * w.HV]) * a : 0.f;
  }
  if constexpr (Erases) {
    __syncthreads();
    unit_lower_inverse(sA, sT, scratch);  // (scratch: free between the block_gemms)
    float* Tg = w.Tinv + w.ch(c, hv) * CL * CL;
    for (int e = tid; e < CL * CL; e += threads) Tg[e] = sT[e];
    float* Wg = w.W + w.ch(c, hv) * CL * w.K;
    block_gemm<Prec, 64, walk::k, walk::mn>(
        L, K, L, [&](int r, int s) { return sT[r * CL + s]; },
        [&](int s, int d) {
          return (Channels ? sB[s * LK_v0 + d] : e_tok[s * w.HV]) * __expf(sG[s * LK_v0 + d]) * sK[s * LK_v0 + d];
        },
        [&](int r, int d, float acc) { Wg[r * w.K + d] = acc; }, scratch);
    float* Ug = w.U + w.ch(c, hv) * CL * w.V;
    const float* v = w.v + (tok0 * w.HV + hv) * w.V;
    block_gemm<Prec, 64, walk::k, walk::mn>(
        L, V, L, [&](int r, int s) { return sT[r * CL + s]; },
        [&](int s, int j) {
          return (Channels ? cg.w[((tok0 + s) * w.HV + hv) * w.V + j] : w_tok[s * w.HV]) * v[s * w.HV * w.V + j];
        },
        [&](int r, int j, float acc) { Ug[r * w.V + j] = acc; }, scratch);
  }
  // The reverse state pass's products that do not involve the state (as chunk_prep_kernel's): s Pᵀ dO into dU's
  // workspace and s Qgᵀ dO into dh's. Qg = Q ⊙ exp(G) in q's tile (P and A were its last readers), dO in G's tile
  // (W was its last reader; every loop above ends at a barrier before this one's first read).
  __syncthreads();
  for (int e = tid; e < L * K; e += threads) {
    const int r = e / K, d = e % K;
    sQ[r * LK_v0 + d] *= __expf(sG[r * LK_v0 + d]);
  }
  __syncthreads();
  float* sO = sG;
  const float* dO = w.d_o + (tok0 * w.HV + hv) * w.V;  // row r at r·HV·V
  stage_tile<CL, max_kv>(sO, LK_v0, [&](int r, int j) { return r < L && j < V ? dO[r * w.HV * w.V + j] : 0.f; });
  float* dUg = w.dU + w.ch(c, hv) * CL * w.V;
  float* dhg = w.dh + w.ch(c, hv) * w.K * w.V;
  const float scale = w.scale;
  block_gemm_direct<Prec, 64, direct_unroll<Erases, true>>(
      L, V, L, [&](int s, int r) { return sP[r * CL + s]; }, [&](int r, int j) { return sO[r * LK_v0 + j]; },
      [&](int s, int j, float acc) { dUg[s * w.V + j] = scale * acc; });
  block_gemm_direct<Prec, 64, direct_unroll<Erases, true>>(
      K, V, L, [&](int d, int r) { return sQ[r * LK_v0 + d]; }, [&](int r, int j) { return sO[r * LK_v0 + j]; },
      [&](int d, int j, float acc) { dhg[d * w.V + j] = scale * acc; });
}

}  // namespace linea::cuda_detail::bwd
