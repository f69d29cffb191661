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
// One CTA per (chunk, value head), float32: every product is a block_gemm through shared memory, its epilogue
// folding in the decays and the masks; shared-memory atomics gather the per-row sums dG, de, dw.
#pragma once
#include "block_gemm.hpp"

namespace linea::cuda_detail::bwd {

// The UT transform's tiles (dW, dBk, dBv, M, KK) only for an erasing update: without them an additive rule's CTA
// fits several times per SM.
template <bool Erases>
struct grad_shape {
  static constexpr int ut_kv = Erases ? CL * max_kv : 0, ut_cc = Erases ? CL * CL : 0;
  static constexpr int dw_at = 0, dbk_at = dw_at + ut_kv, dbv_at = dbk_at + ut_kv,
                       n_at = dbv_at + ut_kv, m_at = n_at + CL * CL, kk_at = m_at + ut_cc, g_at = kk_at + ut_cc,
                       gam_at = g_at + CL, f_at = gam_at + CL, dg_at = f_at + CL, de_at = dg_at + CL, dwr_at = de_at + CL,
                       scratch_at = dwr_at + CL, end = scratch_at + gemm_scratch;
  static constexpr std::size_t bytes = sizeof(float) * end;
};

template <bool Erases, bool Decays, class T>
__global__ void __launch_bounds__(threads, Erases ? 1 : 2) chunk_grad_kernel(const work w, const view<T, 4> dv_out) {
  using sh = grad_shape<Erases>;
  const index_t c = blockIdx.x, hv = blockIdx.y, h = hv / w.G;
  const chunk_info ci = w.chunk[c];
  const int L = ci.len, K = int(w.K), V = int(w.V), tid = threadIdx.x;
  const index_t tok0 = w.token(ci.bt, ci.t0);
  extern __shared__ __align__(16) float sm[];
  float *sdW = sm + sh::dw_at, *sdBk = sm + sh::dbk_at, *sdBv = sm + sh::dbv_at, *sN = sm + sh::n_at,
        *sM = sm + sh::m_at, *sKK = sm + sh::kk_at, *sG = sm + sh::g_at, *sGam = sm + sh::gam_at, *sF = sm + sh::f_at,
        *sdG = sm + sh::dg_at, *sdE = sm + sh::de_at, *sdWr = sm + sh::dwr_at, *scratch = sm + sh::scratch_at;

  const std::size_t cv = w.ch(c, hv);
  const float *hc = w.h + cv * w.K * w.V, *dhc = w.dh + cv * w.K * w.V, *dU = w.dU + cv * CL * w.V;
  const float *Pc = w.P + cv * CL * CL, *Tc = w.Tinv + cv * CL * CL, *Wc = w.W + cv * CL * w.K,
              *Uc = w.U + cv * CL * w.V, *Gc = w.Gc + cv * CL;
  const index_t ldq = w.H * w.K, ldv = w.HV * w.V, HV = w.HV;
  const float* q = w.q + (tok0 * w.H + h) * w.K;  // row r at r·ldq
  const float* k = w.k + (tok0 * w.H + h) * w.K;
  const float* v = w.v + (tok0 * w.HV + hv) * w.V;  // row r at r·ldv
  const float* dO = w.d_o + (tok0 * w.HV + hv) * w.V;
  const float* gate_e = w.erase + tok0 * w.HV + hv;  // row r at r·HV
  const float* gate_w = w.write + tok0 * w.HV + hv;
  float* dq = w.dq + (tok0 * w.HV + hv) * w.K;  // row r at r·HV·K
  float* dk = w.dk + (tok0 * w.HV + hv) * w.K;
  const index_t ldg = w.HV * w.K;
  // U_new: stored for an erasing update, V itself otherwise.
  const float* Un = Erases ? w.U_new + cv * CL * w.V : v;
  const index_t ldu = Erases ? w.V : ldv;
  const float scale = w.scale;

  for (int r = tid; r < CL; r += threads) sG[r] = Gc[r], sdG[r] = 0, sdE[r] = 0, sdWr[r] = 0;
  __syncthreads();
  for (int r = tid; r < CL; r += threads) sGam[r] = __expf(sG[r]), sF[r] = r < L ? __expf(sG[L - 1] - sG[r]) : 0.f;
  const auto D = [&](int r, int s) { return Decays ? __expf(sG[r] - sG[s]) : 1.f; };

  // ---- the UT transform's adjoints: dW = −dU hᵀ, dBv = Tᵀ dU, dBk = Tᵀ dW; dA = −(dBv Uᵀ + dBk Wᵀ), M = dA ⊙ D ----
  if constexpr (Erases) {
    block_gemm<64, walk::k, walk::k>(
        L, K, V, [&](int r, int j) { return dU[r * w.V + j]; }, [&](int j, int d) { return hc[d * w.V + j]; },
        [&](int r, int d, float acc) { sdW[r * max_kv + d] = -acc; }, scratch);
    block_gemm<64, walk::mn, walk::mn>(
        L, V, L, [&](int r, int s) { return Tc[s * CL + r]; }, [&](int s, int j) { return dU[s * w.V + j]; },
        [&](int r, int j, float acc) { sdBv[r * max_kv + j] = acc; }, scratch);
    block_gemm<64, walk::mn, walk::mn>(
        L, K, L, [&](int r, int s) { return Tc[s * CL + r]; }, [&](int s, int d) { return sdW[s * max_kv + d]; },
        [&](int r, int d, float acc) { sdBk[r * max_kv + d] = acc; }, scratch);
    block_gemm<64, walk::k, walk::k>(
        L, L, K, [&](int r, int d) { return k[r * ldq + d]; }, [&](int d, int s) { return k[s * ldq + d]; },
        [&](int r, int s, float acc) { sKK[r * CL + s] = acc; }, scratch);
    block_gemm<64, walk::k, walk::k>(
        L, L, V, [&](int r, int j) { return sdBv[r * max_kv + j]; }, [&](int j, int s) { return Uc[s * w.V + j]; },
        [&](int r, int s, float acc) { sM[r * CL + s] = acc; }, scratch);
    block_gemm<64, walk::k, walk::k>(
        L, L, K, [&](int r, int d) { return sdBk[r * max_kv + d]; }, [&](int d, int s) { return Wc[s * w.K + d]; },
        [&](int r, int s, float acc) {
          float m = 0;
          if (s < r) {
            m = -(sM[r * CL + s] + acc) * D(r, s);
            const float kk = sKK[r * CL + s];
            atomicAdd(&sdE[r], m * kk);
            if (Decays) {
              const float y = m * gate_e[r * HV] * kk;  // dA_rs · A_rs
              atomicAdd(&sdG[r], y), atomicAdd(&sdG[s], -y);
            }
          }
          sM[r * CL + s] = m;
        },
        scratch);
  }
  // ---- dP = s dO U_newᵀ (causal), its decay terms, N = dP ⊙ D ----
  block_gemm<64, walk::k, walk::k>(
      L, L, V, [&](int r, int j) { return dO[r * ldv + j]; }, [&](int j, int s) { return Un[s * ldu + j]; },
      [&](int r, int s, float acc) {
        const float dp = s <= r ? scale * acc : 0.f;
        if (Decays && s < r) {
          const float y = dp * Pc[r * CL + s];
          atomicAdd(&sdG[r], y), atomicAdd(&sdG[s], -y);
        }
        sN[r * CL + s] = s <= r ? dp * D(r, s) : 0.f;
      },
      scratch);
  // ---- dq = Γ s (dO hᵀ) + N K ----
  block_gemm<64, walk::k, walk::k>(
      L, K, V, [&](int r, int j) { return dO[r * ldv + j]; }, [&](int j, int d) { return hc[d * w.V + j]; },
      [&](int r, int d, float acc) {
        const float inter = scale * sGam[r] * acc;
        dq[r * ldg + d] = inter;
        if (Decays) atomicAdd(&sdG[r], q[r * ldq + d] * inter);
      },
      scratch);
  block_gemm<64, walk::k, walk::mn>(
      L, K, L, [&](int r, int s) { return sN[r * CL + s]; }, [&](int s, int d) { return k[s * ldq + d]; },
      [&](int r, int d, float acc) { dq[r * ldg + d] += acc; }, scratch);
  // ---- dk = Nᵀ Q + F ⊙ (U_new dhᵀ) + the UT transform's terms ----
  block_gemm<64, walk::mn, walk::mn>(
      L, K, L, [&](int s, int r) { return sN[r * CL + s]; }, [&](int r, int d) { return q[r * ldq + d]; },
      [&](int s, int d, float acc) { dk[s * ldg + d] = acc; }, scratch);
  block_gemm<64, walk::k, walk::k>(
      L, K, V, [&](int s, int j) { return Un[s * ldu + j]; }, [&](int j, int d) { return dhc[d * w.V + j]; },
      [&](int s, int d, float acc) {
        const float x = sF[s] * acc;
        dk[s * ldg + d] += x;
        if (Decays) {
          const float kx = k[s * ldq + d] * x;
          atomicAdd(&sdG[s], -kx), atomicAdd(&sdG[L - 1], kx);
        }
      },
      scratch);
  if constexpr (Erases) {
    // dk_s += e_s γ_s dBk_s + e_s (M K)_s;  de_s += γ_s k_s·dBk_s
    block_gemm<64, walk::k, walk::mn>(
        L, K, L, [&](int s, int t) { return sM[s * CL + t]; }, [&](int t, int d) { return k[t * ldq + d]; },
        [&](int s, int d, float acc) {
          const float es = gate_e[s * HV], ks = k[s * ldq + d], bk = sGam[s] * sdBk[s * max_kv + d];
          dk[s * ldg + d] += es * (bk + acc);
          atomicAdd(&sdE[s], ks * bk);
          if (Decays) atomicAdd(&sdG[s], es * ks * bk);
        },
        scratch);
    // dk_s += Σ_{r>s} M_rs e_r k_r
    block_gemm<64, walk::mn, walk::mn>(
        L, K, L, [&](int s, int r) { return sM[r * CL + s]; }, [&](int r, int d) { return gate_e[r * HV] * k[r * ldq + d]; },
        [&](int s, int d, float acc) { dk[s * ldg + d] += acc; }, scratch);
  }
  // ---- dv, dw ----
  for (int e = tid; e < CL * V; e += threads) {
    const int r = e / V, j = e % V;
    if (r >= L) continue;
    float x;
    if constexpr (Erases) {
      const float dbv = sdBv[r * max_kv + j];
      x = gate_w[r * HV] * dbv;
      atomicAdd(&sdWr[r], v[r * ldv + j] * dbv);
    } else {
      x = dU[r * w.V + j];
    }
    if (dv_out.ptr) dv_out(ci.bt, ci.t0 + r, hv, j) = from_float<T>(x);
  }
  // ---- the decay of the state across the chunk: dG_L += γ_L ⟨h, dh⟩ ----
  if constexpr (Decays) {
    float hdh = 0;
    for (int e = tid; e < K * V; e += threads) hdh = fmaf(hc[e], dhc[e], hdh);
    atomicAdd(&sdG[L - 1], sGam[L - 1] * hdh);
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
