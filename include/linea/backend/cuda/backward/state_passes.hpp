// linea/backend/cuda/backward/state_passes.hpp — phases 2 and 3, the only work sequential over chunks. The
// transition of a chunk acts on the key dimension only, so value columns are independent: one CTA per
// (BV value columns, value head, sequence) walks the chunks of its sequence (docs/math/backward.md §6).
//
//   forward_states:  h_0 = S_0;   U_new = U − W h_c  (erase; V itself otherwise)
//                    h_{c+1} = γ_L h_c + Kdᵀ U_new,   Kd_s = k_s exp(G_L − G_s)        stores h_c, U_new
//   reverse_states:  dh = dS_T;   dU = s Pᵀ dO + Kd dh                                   stores dh (chunk end), dU
//                    dh ← γ_L dh + s (Γ ⊙ Q)ᵀ dO − Wᵀ dU (erase)                         writes dS_0 at the start
// The two are independent of each other (the reverse pass needs no h): both read only phase 1's factors.
#pragma once
#include "work.hpp"

namespace linea::cuda_detail::bwd {

struct state_shape {
  static constexpr int BV = 32;  // value columns per CTA
  static constexpr int s_at = 0, u_at = s_at + max_kv * BV, g_at = u_at + CL * BV, f_at = g_at + CL, end = f_at + CL;
  static constexpr std::size_t bytes = sizeof(float) * end;
};

// The chunk's decays in shared memory: sG = G_r, sF = exp(G_L − G_r) (row L − 1 is the chunk's last token).
__device__ __forceinline__ void load_decays(const work& w, index_t c, index_t hv, int L, float* sG, float* sF) {
  const float* G = w.Gc + w.ch(c, hv) * CL;
  for (int r = threadIdx.x; r < CL; r += threads) sG[r] = G[r];
  __syncthreads();
  for (int r = threadIdx.x; r < CL; r += threads) sF[r] = r < L ? __expf(sG[L - 1] - sG[r]) : 0.f;
  __syncthreads();
}

template <bool Erases>
__global__ void __launch_bounds__(threads) forward_states_kernel(const work w, const view<const float, 4> S0) {
  using sh = state_shape;
  constexpr int BV = sh::BV;
  const index_t jt = blockIdx.x * BV, hv = blockIdx.y, n = blockIdx.z, h = hv / w.G;
  const int K = int(w.K), bv = int(w.V - jt < BV ? w.V - jt : BV), tid = threadIdx.x;
  extern __shared__ __align__(16) float sm[];
  float *sS = sm + sh::s_at, *sU = sm + sh::u_at, *sG = sm + sh::g_at, *sF = sm + sh::f_at;

  for (int e = tid; e < K * BV; e += threads) {
    const int d = e / BV, j = e % BV;
    sS[e] = S0.ptr && j < bv ? S0(n, hv, d, jt + j) : 0.f;
  }
  const seq_chunks sc = w.seqs[n];
  for (index_t c = sc.first; c < sc.first + sc.count; ++c) {
    const chunk_info ci = w.chunk[c];
    const int L = ci.len;
    const index_t tok0 = w.token(ci.bt, ci.t0);
    load_decays(w, c, hv, L, sG, sF);  // (its barrier also orders the last update of sS before the reads below)
    float* hc = w.h + w.ch(c, hv) * w.K * w.V;
    for (int e = tid; e < K * BV; e += threads) {
      const int d = e / BV, j = e % BV;
      if (j < bv) hc[d * w.V + jt + j] = sS[e];
    }
    const float* Wc = w.W + w.ch(c, hv) * CL * w.K;
    const float* Uc = w.U + w.ch(c, hv) * CL * w.V;
    float* Un = w.U_new + w.ch(c, hv) * CL * w.V;
    for (int e = tid; e < CL * BV; e += threads) {
      const int r = e / BV, j = e % BV;
      float x = 0;
      if (r < L && j < bv) {
        if constexpr (Erases) {
          x = Uc[r * w.V + jt + j];
          for (int d = 0; d < K; ++d) x = fmaf(-Wc[r * w.K + d], sS[d * BV + j], x);
        } else {
          x = w.v[((tok0 + r) * w.HV + hv) * w.V + jt + j];
        }
      }
      sU[e] = x;
      if (Erases && j < bv) Un[r * w.V + jt + j] = x;
    }
    __syncthreads();
    const float gL = __expf(sG[L - 1]);
    for (int e = tid; e < K * BV; e += threads) {
      const int d = e / BV, j = e % BV;
      float x = gL * sS[e];
      for (int s = 0; s < L; ++s) x = fmaf(w.k[((tok0 + s) * w.H + h) * w.K + d] * sF[s], sU[s * BV + j], x);
      sS[e] = x;
    }
    __syncthreads();
  }
}

template <bool Erases>
__global__ void __launch_bounds__(threads) reverse_states_kernel(const work w, const view<const float, 4> dST,
                                                                 const view<float, 4> dS0) {
  using sh = state_shape;
  constexpr int BV = sh::BV;
  const index_t jt = blockIdx.x * BV, hv = blockIdx.y, n = blockIdx.z, h = hv / w.G;
  const int K = int(w.K), bv = int(w.V - jt < BV ? w.V - jt : BV), tid = threadIdx.x;
  extern __shared__ __align__(16) float sm[];
  float *sD = sm + sh::s_at, *sU = sm + sh::u_at, *sG = sm + sh::g_at, *sF = sm + sh::f_at;

  for (int e = tid; e < K * BV; e += threads) {
    const int d = e / BV, j = e % BV;
    sD[e] = dST.ptr && j < bv ? dST(n, hv, d, jt + j) : 0.f;
  }
  const seq_chunks sc = w.seqs[n];
  for (index_t c = sc.first + sc.count - 1; c >= sc.first; --c) {
    const chunk_info ci = w.chunk[c];
    const int L = ci.len;
    const index_t tok0 = w.token(ci.bt, ci.t0);
    load_decays(w, c, hv, L, sG, sF);
    float* dhc = w.dh + w.ch(c, hv) * w.K * w.V;
    for (int e = tid; e < K * BV; e += threads) {
      const int d = e / BV, j = e % BV;
      if (j < bv) dhc[d * w.V + jt + j] = sD[e];
    }
    const float* Pc = w.P + w.ch(c, hv) * CL * CL;
    float* dU = w.dU + w.ch(c, hv) * CL * w.V;
    const float* dO = w.d_o + (tok0 * w.HV + hv) * w.V + jt;  // row r at r·HV·V
    const index_t ldo = w.HV * w.V;
    for (int e = tid; e < CL * BV; e += threads) {
      const int s = e / BV, j = e % BV;
      float x = 0;
      if (s < L && j < bv) {
        for (int r = s; r < L; ++r) x = fmaf(Pc[r * CL + s], dO[r * ldo + j], x);
        x *= w.scale;
        float y = 0;
        for (int d = 0; d < K; ++d) y = fmaf(w.k[((tok0 + s) * w.H + h) * w.K + d], sD[d * BV + j], y);
        x = fmaf(sF[s], y, x);
      }
      sU[e] = x;
      if (j < bv) dU[s * w.V + jt + j] = x;
    }
    __syncthreads();
    const float gL = __expf(sG[L - 1]);
    const float* Wc = w.W + w.ch(c, hv) * CL * w.K;
    for (int e = tid; e < K * BV; e += threads) {
      const int d = e / BV, j = e % BV;
      float read = 0;
      if (j < bv)
        for (int r = 0; r < L; ++r) read = fmaf(__expf(sG[r]) * w.q[((tok0 + r) * w.H + h) * w.K + d], dO[r * ldo + j], read);
      float x = fmaf(w.scale, read, gL * sD[e]);
      if constexpr (Erases)
        for (int s = 0; s < L; ++s) x = fmaf(-Wc[s * w.K + d], sU[s * BV + j], x);
      sD[e] = x;
    }
    __syncthreads();
  }
  if (dS0.ptr)
    for (int e = tid; e < K * BV; e += threads) {
      const int d = e / BV, j = e % BV;
      if (j < bv) dS0(n, hv, d, jt + j) = sD[e];
    }
}

}  // namespace linea::cuda_detail::bwd
