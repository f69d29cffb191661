// linea/backend/cuda/backward/state_passes.hpp — phases 2 and 3, the only work sequential over chunks. The
// transition of a chunk acts on the key dimension only, so value columns are independent: one CTA per
// (BV value columns, value head, sequence) walks the chunks of its sequence (docs/math/backward.md §6).
//
//   forward_states:  h_0 = S_0;   U_new = U − W h_c  (erase; V itself otherwise)
//                    h_{c+1} = γ_L h_c + Kdᵀ U_new,   Kd_s = k_s exp(G_L − G_s)        stores h_c, U_new
//   reverse_states:  dh = dS_T;   dU = s Pᵀ dO + Kd dh                                   stores dh (chunk end), dU
//                    dh ← γ_L dh + s (Γ ⊙ Q)ᵀ dO − Wᵀ dU (erase)                         writes dS_0 at the start
// The two are independent of each other (the reverse pass needs no h): both read only phase 1's factors.
// With a scalar decay (chunk_prep_kernel) phase 1 has already put s Pᵀ dO into dU's workspace and s (Γ ⊙ Q)ᵀ dO
// into dh's, the halves that do not involve the state, so the sequential pass keeps two products per chunk.
// Per-key decays (PerKey) read phase 1's decayed operands Kd, Qg, gL instead of forming exp(G) here.
#pragma once
#include "block_gemm.hpp"

namespace linea::cuda_detail::bwd {

// BV value columns per CTA: 32, or 16 where 32 leaves SMs idle (1×32768 with 16 heads: 64 CTAs at 32, 128 at 16).
// The CTAs of one pass should all be resident, since each walks its whole sequence: at 32 columns four per SM (at
// most 64 registers a thread), at 16 two (128 registers), chosen only where that many CTAs fill no more than two
// per SM (phases.hpp).
template <int BV>
inline constexpr int state_ctas_per_sm = BV == 16 ? 2 : 4;

// A pass's shared memory: the state tile (h or dh), U_new or dU, y (the reverse pass's phase-1 slice of
// s (Γ ⊙ Q)ᵀ dO, scalar decays), the decays and block_gemm's slabs. At 16 columns the slabs are 32 deep: half the
// global round trips of 16-deep ones, each behind a barrier (the passes are latency-bound: one CTA per SM at
// 1×32768); at 32 columns, under 64 registers, 32-deep slabs spill their prefetch registers (ptxas: 284 bytes
// in the forward pass), so they stay 16 deep.
template <int BV_, bool Reverse>
struct state_shape {
  static constexpr int BV = BV_, TK = BV == 16 ? 32 : 16;
  static constexpr int s_at = 0, u_at = s_at + max_kv * BV, y_at = u_at + CL * BV,
                       g_at = y_at + (Reverse ? max_kv * BV : 0), f_at = g_at + CL, gam_at = f_at + CL,
                       scratch_at = gam_at + CL, end = scratch_at + gemm_scratch_for<TK>;
  static constexpr std::size_t bytes = sizeof(float) * end;
  static_assert(state_ctas_per_sm<BV> * (bytes + 1024) <= 228 * 1024, "state passes: the CTAs per SM must fit");
};

// The chunk's decays in shared memory: sG = G_r, sF = exp(G_L − G_r), sGam = exp(G_r) (row L − 1 is the last token).
__device__ __forceinline__ void load_decays(const work& w, index_t c, index_t hv, int L, float* sG, float* sF, float* sGam) {
  const float* G = w.Gc + w.ch(c, hv) * CL;
  __syncthreads();
  for (int r = threadIdx.x; r < CL; r += threads) sG[r] = G[r];
  __syncthreads();
  for (int r = threadIdx.x; r < CL; r += threads) {
    sF[r] = r < L ? __expf(sG[L - 1] - sG[r]) : 0.f;
    sGam[r] = __expf(sG[r]);
  }
  __syncthreads();
}

template <int BV_, bool Erases, bool PerKey>
__global__ void __launch_bounds__(threads, state_ctas_per_sm<BV_>) forward_states_kernel(const work w, const view<const float, 4> S0) {
  using sh = state_shape<BV_, false>;
  constexpr int BV = sh::BV;
  const index_t jt = blockIdx.x * BV, hv = blockIdx.y, n = blockIdx.z, h = hv / w.G;
  const int K = int(w.K), bv = int(w.V - jt < BV ? w.V - jt : BV), tid = threadIdx.x;
  const index_t ldq = w.H * w.K;
  extern __shared__ __align__(16) float sm[];
  float *sS = sm + sh::s_at, *sU = sm + sh::u_at, *sG = sm + sh::g_at, *sF = sm + sh::f_at, *sGam = sm + sh::gam_at,
        *scratch = sm + sh::scratch_at;

  for (int e = tid; e < K * BV; e += threads) {
    const int d = e / BV, j = e % BV;
    sS[e] = S0.ptr && j < bv ? S0(n, hv, d, jt + j) : 0.f;
  }
  const seq_chunks sc = w.seqs[n];
  for (index_t c = sc.first; c < sc.first + sc.count; ++c) {
    const chunk_info ci = w.chunk[c];
    const int L = ci.len;
    const index_t tok0 = w.token(ci.bt, ci.t0);
    if constexpr (PerKey) __syncthreads();  // orders the last update of sS before the reads below
    else load_decays(w, c, hv, L, sG, sF, sGam);  // (so do its barriers)
    const float* Kd = w.Kd + w.ch(c, hv) * CL * w.K;  // (per-key decays)
    const float* gLk = w.gL + w.ch(c, hv) * w.K;
    float* hc = w.h + w.ch(c, hv) * w.K * w.V;
    for (int e = tid; e < K * BV; e += threads) {
      const int d = e / BV, j = e % BV;
      if (j < bv) hc[d * w.V + jt + j] = sS[e];
    }
    const float* k = w.k + (tok0 * w.H + h) * w.K;  // row s at s·ldq
    if constexpr (Erases) {  // U_new = U − W h
      const float* Wc = w.W + w.ch(c, hv) * CL * w.K;
      const float* Uc = w.U + w.ch(c, hv) * CL * w.V + jt;
      float* Un = w.U_new + w.ch(c, hv) * CL * w.V + jt;
      block_gemm<BV, walk::k, walk::mn, sh::TK>(
          L, bv, K, [&](int r, int d) { return Wc[r * w.K + d]; }, [&](int d, int j) { return sS[d * BV + j]; },
          [&](int r, int j, float acc) {
            const float x = Uc[r * w.V + j] - acc;
            sU[r * BV + j] = x, Un[r * w.V + j] = x;
          },
          scratch);
    } else {  // U_new = V
      const float* v = w.v + (tok0 * w.HV + hv) * w.V + jt;
      stage_tile<CL, BV, 8>(sU, BV, [&](int r, int j) { return r < L && j < bv ? v[r * w.HV * w.V + j] : 0.f; });
    }
    // h ← γ_L h + Kdᵀ U_new
    const float gL = PerKey ? 0.f : __expf(sG[L - 1]);
    block_gemm<BV, walk::mn, walk::mn, sh::TK>(
        K, bv, L, [&](int d, int s) { return PerKey ? Kd[s * w.K + d] : k[s * ldq + d] * sF[s]; },
        [&](int s, int j) { return sU[s * BV + j]; },
        [&](int d, int j, float acc) { sS[d * BV + j] = fmaf(PerKey ? gLk[d] : gL, sS[d * BV + j], acc); }, scratch);
  }
}

template <int BV_, bool Erases, bool PerKey>
__global__ void __launch_bounds__(threads, state_ctas_per_sm<BV_>) reverse_states_kernel(const work w, const view<const float, 4> dST,
                                                                 const view<float, 4> dS0) {
  using sh = state_shape<BV_, true>;
  constexpr int BV = sh::BV;
  const index_t jt = blockIdx.x * BV, hv = blockIdx.y, n = blockIdx.z, h = hv / w.G;
  const int K = int(w.K), bv = int(w.V - jt < BV ? w.V - jt : BV), tid = threadIdx.x;
  const index_t ldq = w.H * w.K;
  [[maybe_unused]] const index_t ldo = w.HV * w.V;
  extern __shared__ __align__(16) float sm[];
  float *sD = sm + sh::s_at, *sU = sm + sh::u_at, *sY = sm + sh::y_at, *sG = sm + sh::g_at, *sF = sm + sh::f_at,
        *sGam = sm + sh::gam_at, *scratch = sm + sh::scratch_at;

  for (int e = tid; e < K * BV; e += threads) {
    const int d = e / BV, j = e % BV;
    sD[e] = dST.ptr && j < bv ? dST(n, hv, d, jt + j) : 0.f;
  }
  const seq_chunks sc = w.seqs[n];
  for (index_t c = sc.first + sc.count - 1; c >= sc.first; --c) {
    const chunk_info ci = w.chunk[c];
    const int L = ci.len;
    const index_t tok0 = w.token(ci.bt, ci.t0);
    if constexpr (PerKey) __syncthreads();
    else load_decays(w, c, hv, L, sG, sF, sGam);
    const float* Kd = w.Kd + w.ch(c, hv) * CL * w.K;  // (per-key decays)
    const float* Qg = w.Qg + w.ch(c, hv) * CL * w.K;
    const float* gLk = w.gL + w.ch(c, hv) * w.K;
    float* dhc = w.dh + w.ch(c, hv) * w.K * w.V;
    float* dU = w.dU + w.ch(c, hv) * CL * w.V + jt;
    // phase 1's s (Γ ⊙ Q)ᵀ dO, read before this chunk's dh overwrites it (each element by the same thread)
    if constexpr (!PerKey)
      stage_tile<max_kv, BV, 8>(sY, BV, [&](int d, int j) { return d < K && j < bv ? dhc[d * w.V + jt + j] : 0.f; });
    for (int e = tid; e < K * BV; e += threads) {
      const int d = e / BV, j = e % BV;
      if (j < bv) dhc[d * w.V + jt + j] = sD[e];
    }
    [[maybe_unused]] const float* Pc = w.P + w.ch(c, hv) * CL * CL;     // (per-key decays)
    [[maybe_unused]] const float* dO = w.d_o + (tok0 * w.HV + hv) * w.V + jt;  // row r at r·ldo
    [[maybe_unused]] const float scale = w.scale;
    const float* k = w.k + (tok0 * w.H + h) * w.K;  // row s at s·ldq
    // dU = s Pᵀ dO + Kd dh
    if constexpr (PerKey) {
      block_gemm<BV, walk::mn, walk::mn, sh::TK>(
          L, bv, L, [&](int s, int r) { return Pc[r * CL + s]; }, [&](int r, int j) { return dO[r * ldo + j]; },
          [&](int s, int j, float acc) { sU[s * BV + j] = scale * acc; }, scratch);
    } else {
      stage_tile<CL, BV, 8>(sU, BV, [&](int s, int j) { return s < L && j < bv ? dU[s * w.V + j] : 0.f; });  // s Pᵀ dO
    }
    block_gemm<BV, walk::k, walk::mn, sh::TK>(
        L, bv, K, [&](int s, int d) { return PerKey ? Kd[s * w.K + d] : k[s * ldq + d] * sF[s]; },
        [&](int d, int j) { return sD[d * BV + j]; },
        [&](int s, int j, float acc) {
          const float x = sU[s * BV + j] + acc;
          sU[s * BV + j] = x, dU[s * w.V + j] = x;
        },
        scratch);
    // dh ← γ_L dh + s (Γ ⊙ Q)ᵀ dO − Wᵀ dU
    const float gL = PerKey ? 0.f : __expf(sG[L - 1]);
    if constexpr (PerKey) {
      block_gemm<BV, walk::mn, walk::mn, sh::TK>(
          K, bv, L, [&](int d, int r) { return Qg[r * w.K + d]; }, [&](int r, int j) { return dO[r * ldo + j]; },
          [&](int d, int j, float acc) { sD[d * BV + j] = fmaf(gLk[d], sD[d * BV + j], scale * acc); }, scratch);
    } else {
      for (int e = tid; e < K * BV; e += threads) sD[e] = fmaf(gL, sD[e], sY[e]);  // (after dU's barrier)
    }
    if constexpr (Erases) {
      const float* Wc = w.W + w.ch(c, hv) * CL * w.K;
      block_gemm<BV, walk::mn, walk::mn, sh::TK>(
          K, bv, L, [&](int d, int s) { return Wc[s * w.K + d]; }, [&](int s, int j) { return sU[s * BV + j]; },
          [&](int d, int j, float acc) { sD[d * BV + j] -= acc; }, scratch);
    }
  }
  __syncthreads();
  if (dS0.ptr)
    for (int e = tid; e < K * BV; e += threads) {
      const int d = e / BV, j = e % BV;
      if (j < bv) dS0(n, hv, d, jt + j) = sD[e];
    }
}

}  // namespace linea::cuda_detail::bwd
