// linea/backend/cuda/backward/chunk_grad_kernel.hpp — phase 4, every chunk at once: the gradients of the chunk's
// tokens from h (state before the chunk), dh (dL/d state after it), dU = dL/dU_new and phase 1's factors
// (docs/math/backward.md §6). With D_rs = exp(G_r − G_s) (s ≤ r), F_s = exp(G_L − G_s), γ_r = exp(G_r):
//
//   UT transform (erase):  dW = −dU hᵀ,  dBv = Tᵀ dU,  dBk = Tᵀ dW,  dA = −(dBv Uᵀ + dBk Wᵀ) (strictly lower)
//   read:                  dP = s dO U_newᵀ (s ≤ r);   N = dP ⊙ D;   M = dA ⊙ D
//   dq_r = γ_r s (h dO_r) + Σ_{s≤r} N_rs k_s
//   dk_s = Σ_{r≥s} N_rs q_r + F_s (dh U_new,s) + e_s γ_s dBk_s + e_s Σ_{t<s} M_st k_t + Σ_{r>s} M_rs e_r k_r
//   dv_r = w_r dBv_r (erase) or dU_r
//   de_r = Σ_s M_rs (k_r·k_s) + γ_r k_r·dBk_r,   dw_r = v_r·dBv_r
//   dG_r: every product above that holds a decay, then dg_t = Σ_{r≥t} dG_r (reverse cumulative sum)
// q and k gradients go to the per-value-head workspace (a key head's group adds them in phase 5).
// One CTA per (chunk, value head), float32; shared-memory atomics gather the per-row sums dG, de, dw.
#pragma once
#include "work.hpp"

namespace linea::cuda_detail::bwd {

struct grad_shape {
  static constexpr int dw_at = 0, dbk_at = dw_at + CL * max_kv, dbv_at = dbk_at + CL * max_kv,
                       n_at = dbv_at + CL * max_kv, m_at = n_at + CL * CL, g_at = m_at + CL * CL,
                       dg_at = g_at + CL, de_at = dg_at + CL, dwr_at = de_at + CL, end = dwr_at + CL;
  static constexpr std::size_t bytes = sizeof(float) * end;
};

template <bool Erases, bool Decays, class T>
__global__ void __launch_bounds__(threads) chunk_grad_kernel(const work w, const view<T, 4> dv_out) {
  using sh = grad_shape;
  const index_t c = blockIdx.x, hv = blockIdx.y, h = hv / w.G;
  const chunk_info ci = w.chunk[c];
  const int L = ci.len, K = int(w.K), V = int(w.V), tid = threadIdx.x;
  const index_t tok0 = w.token(ci.bt, ci.t0);
  extern __shared__ __align__(16) float sm[];
  float *sdW = sm + sh::dw_at, *sdBk = sm + sh::dbk_at, *sdBv = sm + sh::dbv_at, *sN = sm + sh::n_at,
        *sM = sm + sh::m_at, *sG = sm + sh::g_at, *sdG = sm + sh::dg_at, *sdE = sm + sh::de_at,
        *sdWr = sm + sh::dwr_at;

  const std::size_t cv = w.ch(c, hv);
  const float *hc = w.h + cv * w.K * w.V, *dhc = w.dh + cv * w.K * w.V, *dU = w.dU + cv * CL * w.V;
  const float *Pc = w.P + cv * CL * CL, *Tc = w.Tinv + cv * CL * CL, *Wc = w.W + cv * CL * w.K,
              *Uc = w.U + cv * CL * w.V, *Gc = w.Gc + cv * CL;
  const index_t ldq = w.H * w.K, ldv = w.HV * w.V;
  const float* q = w.q + (tok0 * w.H + h) * w.K;  // row r at r·ldq
  const float* k = w.k + (tok0 * w.H + h) * w.K;
  const float* v = w.v + (tok0 * w.HV + hv) * w.V;  // row r at r·ldv
  const float* dO = w.d_o + (tok0 * w.HV + hv) * w.V;
  const float* gate_e = w.erase + tok0 * w.HV + hv;  // row r at r·HV
  const float* gate_w = w.write + tok0 * w.HV + hv;
  // U_new: stored for an erasing update, V itself otherwise.
  const float* Un = Erases ? w.U_new + cv * CL * w.V : v;
  const index_t ldu = Erases ? w.V : ldv;

  for (int r = tid; r < CL; r += threads) sG[r] = Gc[r], sdG[r] = 0, sdE[r] = 0, sdWr[r] = 0;
  __syncthreads();
  // ---- the UT transform's adjoints: dW = −dU hᵀ, then dBv = Tᵀ dU, dBk = Tᵀ dW ----
  if constexpr (Erases) {
    for (int e = tid; e < CL * K; e += threads) {
      const int r = e / K, d = e % K;
      float x = 0;
      if (r < L)
        for (int j = 0; j < V; ++j) x = fmaf(-dU[r * w.V + j], hc[d * w.V + j], x);
      sdW[r * max_kv + d] = x;
    }
    __syncthreads();
    for (int e = tid; e < CL * V; e += threads) {
      const int r = e / V, j = e % V;
      float x = 0;
      for (int s = r; s < L; ++s) x = fmaf(Tc[s * CL + r], dU[s * w.V + j], x);
      sdBv[r * max_kv + j] = x;
    }
    for (int e = tid; e < CL * K; e += threads) {
      const int r = e / K, d = e % K;
      float x = 0;
      for (int s = r; s < L; ++s) x = fmaf(Tc[s * CL + r], sdW[s * max_kv + d], x);
      sdBk[r * max_kv + d] = x;
    }
  }
  // ---- dP = s dO U_newᵀ (causal), its decay terms, then N = dP ⊙ D ----
  for (int e = tid; e < CL * CL; e += threads) {
    const int r = e / CL, s = e % CL;
    float dp = 0;
    if (r < L && s <= r) {
      for (int j = 0; j < V; ++j) dp = fmaf(dO[r * ldv + j], Un[s * ldu + j], dp);
      dp *= w.scale;
      if (Decays && s < r) {
        const float y = dp * Pc[r * CL + s];
        atomicAdd(&sdG[r], y), atomicAdd(&sdG[s], -y);
      }
    }
    sN[e] = Decays && r < L && s <= r ? dp * __expf(sG[r] - sG[s]) : dp;
  }
  __syncthreads();
  // ---- dA = −(dBv Uᵀ + dBk Wᵀ) strictly lower; M = dA ⊙ D; its terms in de and dG ----
  if constexpr (Erases) {
    for (int e = tid; e < CL * CL; e += threads) {
      const int r = e / CL, s = e % CL;
      float m = 0, kk = 0;
      if (r < L && s < r) {
        float da = 0;
        for (int j = 0; j < V; ++j) da = fmaf(sdBv[r * max_kv + j], Uc[s * w.V + j], da);
        for (int d = 0; d < K; ++d) da = fmaf(sdBk[r * max_kv + d], Wc[s * w.K + d], da);
        for (int d = 0; d < K; ++d) kk = fmaf(k[r * ldq + d], k[s * ldq + d], kk);
        m = -da * (Decays ? __expf(sG[r] - sG[s]) : 1.f);
        atomicAdd(&sdE[r], m * kk);
        if (Decays) {
          const float y = m * gate_e[r * w.HV] * kk;  // dA_rs · A_rs
          atomicAdd(&sdG[r], y), atomicAdd(&sdG[s], -y);
        }
      }
      sM[e] = m;
    }
    __syncthreads();
  }
  // ---- dq, dk per (token, key channel) ----
  const float gL = __expf(sG[L - 1]);
  for (int e = tid; e < CL * K; e += threads) {
    const int r = e / K, d = e % K;
    if (r >= L) continue;
    const float gr = Decays ? __expf(sG[r]) : 1.f, Fr = Decays ? __expf(sG[L - 1] - sG[r]) : 1.f;
    // dq_r = γ_r s (h dO_r) + Σ_{s≤r} N_rs k_s
    float inter = 0;
    for (int j = 0; j < V; ++j) inter = fmaf(hc[d * w.V + j], dO[r * ldv + j], inter);
    inter *= w.scale * gr;
    float dq = inter;
    for (int s = 0; s <= r; ++s) dq = fmaf(sN[r * CL + s], k[s * ldq + d], dq);
    // dk_r = Σ_{t≥r} N_tr q_t + F_r (dh U_new,r) + erase terms
    float dk = 0;
    for (int t = r; t < L; ++t) dk = fmaf(sN[t * CL + r], q[t * ldq + d], dk);
    float kd = 0;
    for (int j = 0; j < V; ++j) kd = fmaf(dhc[d * w.V + j], Un[r * ldu + j], kd);
    kd *= Fr;
    dk += kd;
    const float kr = k[r * ldq + d];
    float dG = Decays ? q[r * ldq + d] * inter - kr * kd : 0.f;
    if constexpr (Erases) {
      const float er = gate_e[r * w.HV], bk = gr * sdBk[r * max_kv + d];
      dk = fmaf(er, bk, dk);
      float lower = 0, upper = 0;
      for (int t = 0; t < r; ++t) lower = fmaf(sM[r * CL + t], k[t * ldq + d], lower);
      for (int t = r + 1; t < L; ++t) upper = fmaf(sM[t * CL + r] * gate_e[t * w.HV], k[t * ldq + d], upper);
      dk += er * lower + upper;
      atomicAdd(&sdE[r], kr * bk);
      if (Decays) dG = fmaf(er * kr, bk, dG);
    }
    if (Decays) {
      atomicAdd(&sdG[r], dG);
      atomicAdd(&sdG[L - 1], kr * kd);
    }
    const std::size_t at = std::size_t(((tok0 + r) * w.HV + hv) * w.K + d);
    w.dq[at] = dq, w.dk[at] = dk;
  }
  // ---- dv, dw ----
  for (int e = tid; e < CL * V; e += threads) {
    const int r = e / V, j = e % V;
    if (r >= L) continue;
    float x;
    if constexpr (Erases) {
      const float dbv = sdBv[r * max_kv + j];
      x = gate_w[r * w.HV] * dbv;
      atomicAdd(&sdWr[r], v[r * ldv + j] * dbv);
    } else {
      x = dU[r * w.V + j];
    }
    if (dv_out.ptr) dv_out(ci.bt, ci.t0 + r, hv, j) = from_float<T>(x);
  }
  // ---- the decay of the state across the chunk: dG_L += γ_L ⟨h, dh⟩ ----
  if constexpr (Decays) {
    float hdh = 0;
    for (int e = tid; e < K * V; e += threads) hdh = fmaf(hc[(e / V) * w.V + e % V], dhc[(e / V) * w.V + e % V], hdh);
    atomicAdd(&sdG[L - 1], gL * hdh);
  }
  __syncthreads();
  if (tid == 0) {
    float acc = 0;  // dg_t = Σ_{r≥t} dG_r
    for (int r = L - 1; r >= 0; --r) {
      acc += sdG[r];
      w.dlog_alpha[(tok0 + r) * w.HV + hv] = acc;
      if (Erases) w.derase[(tok0 + r) * w.HV + hv] = sdE[r] + sdWr[r];
    }
  }
}

}  // namespace linea::cuda_detail::bwd
