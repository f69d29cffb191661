// linea/backend/cuda/backward/chunk_prep_kernel.hpp — phase 1, every chunk at once: the chunk's own factors,
// recomputed from the inputs (docs/math/backward.md §6):
//   G_r = Σ_{i≤r} log α_i                      (in-chunk cumulative log decay)
//   P_rs = (q_r·k_s) exp(G_r − G_s), s ≤ r     (decayed causal Q Kᵀ, without the read scale)
// and for an erasing update (the UT transform, chunkwise.md §5):
//   A_rs = e_r (k_r·k_s) exp(G_r − G_s), s < r;   T = (I + A)⁻¹ by forward substitution
//   W = T (e ⊙ Γ ⊙ K),   U = T (w ⊙ V)
// Only exponents ≤ 0 are formed (s ≤ r). Of a partial chunk only rows and columns < L are written (nothing reads
// past them). Every product reads its operands in place from shared memory (block_gemm_direct: q and k rows padded
// to ld_kv, conflict-free fragments): w ⊙ V and dO are staged in k's tile once its readers are done, P stays in A's
// tile (it once streamed v and P from global memory through block_gemm's slabs, a barrier-bound round trip per
// slab); the solve goes by 16 × 16 blocks (triangular_inverse.hpp). It also computes the state-free half of the
// reverse state pass (s Pᵀ dO and s (Γ ⊙ Q)ᵀ dO, see staged_state_passes.hpp). One CTA per (chunk, value head),
// float32 throughout. (For bf16 / fp16 inputs phases.hpp launches chunk_prep16_kernel.hpp instead: the same outputs
// from bf16 operands, two CTAs an SM.)
#pragma once
#include "block_gemm.hpp"
#include "triangular_inverse.hpp"

namespace linea::cuda_detail::bwd {

template <bool Erases>  // (T only for an erasing update; A's tile holds P once T is formed)
struct prep_shape {
  static constexpr int ut_cc = Erases ? CL * CL : 0;
  static constexpr int q_at = 0, k_at = q_at + CL * ld_kv, a_at = k_at + CL * ld_kv, t_at = a_at + CL * CL,
                       g_at = t_at + ut_cc, ew_at = g_at + CL, ww_at = ew_at + CL, scratch_at = ww_at + CL,
                       end = scratch_at + gemm_scratch;
  static constexpr std::size_t bytes = sizeof(float) * end;
};

template <bool Erases, precision Prec>
__global__ void __launch_bounds__(threads) chunk_prep_kernel(const work w) {
  using sh = prep_shape<Erases>;
  const index_t c = blockIdx.x, hv = blockIdx.y, h = hv / w.G;
  const chunk_info ci = w.chunk[c];
  const int L = ci.len, K = int(w.K), V = int(w.V), tid = threadIdx.x;
  const index_t tok0 = w.token(ci.bt, ci.t0);
  extern __shared__ __align__(16) float sm[];
  float *sQ = sm + sh::q_at, *sK = sm + sh::k_at, *sA = sm + sh::a_at, *sP = sA, *sT = sm + sh::t_at, *sG = sm + sh::g_at,
        *sEG = sm + sh::ew_at, *sWw = sm + sh::ww_at, *scratch = sm + sh::scratch_at;

  const float* q = w.q + (tok0 * w.H + h) * w.K;  // row r at r·H·K
  const float* k = w.k + (tok0 * w.H + h) * w.K;
  const index_t ldq = w.H * w.K;
  stage_tile<CL, max_kv>(sQ, ld_kv, [&](int r, int d) { return r < L && d < K ? q[r * ldq + d] : 0.f; });
  stage_tile<CL, max_kv>(sK, ld_kv, [&](int r, int d) { return r < L && d < K ? k[r * ldq + d] : 0.f; });
  const float* e_tok = w.erase + tok0 * w.HV + hv;  // row r at r·HV
  const float* w_tok = w.write + tok0 * w.HV + hv;
  if (tid < CL) {  // the log decays and gates, loaded at once (the scan below reads shared memory only)
    sG[tid] = tid < L ? w.log_alpha[(tok0 + tid) * w.HV + hv] : 0.f;
    if (Erases) sEG[tid] = tid < L ? e_tok[tid * w.HV] : 0.f, sWw[tid] = tid < L ? w_tok[tid * w.HV] : 0.f;
  }
  __syncthreads();
  if (tid == 0)
    for (int r = 1; r < CL; ++r) sG[r] += sG[r - 1];
  __syncthreads();
  float* G = w.Gc + w.ch(c, hv) * CL;
  if (tid < CL) G[tid] = sG[tid];

  float* P = w.P + w.ch(c, hv) * CL * CL;
  if constexpr (Erases) {
    for (int e = tid; e < CL * CL; e += threads) sA[e] = 0.f;  // rows and columns past L stay 0
    block_gemm_direct<Prec, 64, direct_unroll<Erases, false>>(
        L, L, K, [&](int r, int d) { return sK[r * ld_kv + d]; }, [&](int d, int s) { return sK[s * ld_kv + d]; },
        [&](int r, int s, float acc) { sA[r * CL + s] = s < r ? sEG[r] * acc * __expf(sG[r] - sG[s]) : 0.f; });
    if (tid < CL) sEG[tid] *= __expf(sG[tid]);  // e ⊙ Γ (after A's last read of e: its barrier)
    // T = (I + A)⁻¹, unit lower triangular
    unit_lower_inverse(sA, sT, scratch);  // (scratch: free between the products)
    float* Tg = w.Tinv + w.ch(c, hv) * CL * CL;
    for (int e = tid; e < CL * CL; e += threads) Tg[e] = sT[e];
    // W = T (e ⊙ Γ ⊙ K)   (T is lower triangular: its zeros do the masking)
    float* Wg = w.W + w.ch(c, hv) * CL * w.K;
    block_gemm_direct<Prec, 64, direct_unroll<Erases, false>>(
        L, K, L, [&](int r, int s) { return sT[r * CL + s]; }, [&](int s, int d) { return sEG[s] * sK[s * ld_kv + d]; },
        [&](int r, int d, float acc) { Wg[r * w.K + d] = acc; });
  }
  // P, into global memory for phase 4 and into sP for s Pᵀ dO below (A's tile: free once T is formed)
  block_gemm_direct<Prec, 64, direct_unroll<Erases, false>>(
      L, L, K, [&](int r, int d) { return sQ[r * ld_kv + d]; }, [&](int d, int s) { return sK[s * ld_kv + d]; },
      [&](int r, int s, float acc) {
        const float x = s <= r ? acc * __expf(sG[r] - sG[s]) : 0.f;
        P[r * CL + s] = x, sP[r * CL + s] = x;
      });
  const float* dO = w.d_o + (tok0 * w.HV + hv) * w.V;  // row r at r·HV·V
  if constexpr (Erases) {
    // U = T (w ⊙ V), with w ⊙ V staged in k's tile (k's last reader, P, ended with a barrier)
    const float* v = w.v + (tok0 * w.HV + hv) * w.V;
    stage_tile<CL, max_kv>(sK, ld_kv, [&](int r, int j) { return r < L && j < V ? sWw[r] * v[r * w.HV * w.V + j] : 0.f; });
    float* Ug = w.U + w.ch(c, hv) * CL * w.V;
    block_gemm_direct<Prec, 64, direct_unroll<Erases, false>>(
        L, V, L, [&](int r, int s) { return sT[r * CL + s]; }, [&](int s, int j) { return sK[s * ld_kv + j]; },
        [&](int r, int j, float acc) { Ug[r * w.V + j] = acc; });
  }
  // The reverse state pass's products that do not involve the state, here where every chunk runs at once:
  // dU ← s Pᵀ dO into dU's workspace (the pass adds Kd dh) and s (Γ ⊙ Q)ᵀ dO into dh's (until the pass stores dh
  // there). dO goes to k's tile (its last reader, P or U, ended with a barrier).
  float* sO = sK;
  stage_tile<CL, max_kv>(sO, ld_kv, [&](int r, int j) { return r < L && j < V ? dO[r * w.HV * w.V + j] : 0.f; });
  float* dUg = w.dU + w.ch(c, hv) * CL * w.V;
  float* dhg = w.dh + w.ch(c, hv) * w.K * w.V;
  const float scale = w.scale;
  block_gemm_direct<Prec, 64, direct_unroll<Erases, false>>(
      L, V, L, [&](int s, int r) { return sP[r * CL + s]; }, [&](int r, int j) { return sO[r * ld_kv + j]; },
      [&](int s, int j, float acc) { dUg[s * w.V + j] = scale * acc; });
  block_gemm_direct<Prec, 64, direct_unroll<Erases, false>>(
      K, V, L, [&](int d, int r) { return __expf(sG[r]) * sQ[r * ld_kv + d]; }, [&](int r, int j) { return sO[r * ld_kv + j]; },
      [&](int d, int j, float acc) { dhg[d * w.V + j] = scale * acc; });
}

}  // namespace linea::cuda_detail::bwd
