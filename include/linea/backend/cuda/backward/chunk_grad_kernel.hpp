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
// One CTA per (chunk, value head), float32. The chunk's k and q rows are staged once in shared memory, dq and dk
// gather in shared memory and leave once, coalesced; products whose operands are all in shared memory read their
// mma fragments in place (block_gemm_direct: no slab, no barrier inside), the others stream their global operand
// through 32-deep slabs. For an erasing update dU and T first sit in the k and q tiles, so dBv and dBk are direct
// too. The K Kᵀ of de and of the decay terms of dA never forms: Σ_s M_rs (k_r·k_s) is k_r·(M K)_r and
// Σ_r M_rs e_r (k_r·k_s) is k_s·(Mᵀ E K)_s, rows of two products dk needs anyway. The per-row sums (dG, de, dw) are
// warp reductions over tiles a product leaves in shared memory (row_sums), not atomics from every element: tens of
// thousands of shared-memory atomics on 64 addresses (one of them, dG_L, hit by every element) serialized the
// kernel. dP's row and column sums go through block_gemm's scratch, free in its epilogue (a single 64 × 64 tile).
// The kernel is latency-bound (one CTA per SM, every global load behind a barrier), so global reads are batched:
// tiles are staged 16 loads per thread at a time, dv / dw issue every row's loads before the first store, P is
// staged (coalesced) for dP's decay sums, which all threads then add, ⟨h, dh⟩ keeps 16 + 16 loads in flight, and
// the reverse cumulative sum of dG is a warp scan. Wide sends the 128-wide products through one 64 × 128
// block_gemm tile (half the slabs): phases.hpp takes it without an erasing update (linear_attn, simple_gla: 5 % off
// this kernel on the H200, no spills); an erasing update's kernel spills with it at 255 registers, and is slower.
#pragma once
#include <algorithm>

#include "block_gemm.hpp"

namespace linea::cuda_detail::bwd {

inline constexpr int grad_tk = 32;  // slab depth of the global-operand products
inline constexpr int grad_batch = 16;  // loads in flight per thread when staging a tile (registers are nearly spent)
// block_gemm's 64 × 128 slabs, its 32-deep 64-wide ones, or dP's padded CL × CL tile
inline constexpr int grad_scratch = std::max({gemm_scratch_for<32, 128>, gemm_scratch_for<grad_tk>, CL * (CL + 1)});

// Tiles in floats. An erasing update adds the UT transform's dW, dBk, dBv and M; dW's tile then holds dk and dBv's
// holds dq once their contents die (dW after dBk = Tᵀ dW, dBv after M and dv), so the erasing CTA fits in the
// 227 KB of one SM; the additive one has tiles of its own for dq and dk.
template <bool Erases>
struct grad_shape {
  static constexpr int kv = CL * ld_kv, cc = CL * ld_cc;
  static constexpr int k_at = 0, q_at = k_at + kv, dw_at = q_at + kv, dbk_at = dw_at + (Erases ? kv : 0),
                       dbv_at = dbk_at + (Erases ? kv : 0), dk_at = Erases ? dw_at : dbv_at,
                       dq_at = Erases ? dbv_at : dk_at + kv, n_at = dq_at + kv, m_at = n_at + cc,
                       g_at = m_at + (Erases ? cc : 0), gam_at = g_at + CL, f_at = gam_at + CL, e_at = f_at + CL,
                       dg_at = e_at + CL, de_at = dg_at + CL, dwr_at = de_at + CL, scratch_at = dwr_at + CL,
                       end = scratch_at + grad_scratch;
  static constexpr std::size_t bytes = sizeof(float) * end;
  static_assert(bytes <= 227 * 1024, "chunk_grad_kernel: more shared memory than one SM has");
};

template <bool Erases, bool Decays, class T, bool Wide = false, precision Prec = precision_for<T>>
__global__ void __launch_bounds__(threads, 1) chunk_grad_kernel(const work w, const view<T, 4> dv_out) {
  using sh = grad_shape<Erases>;
  const index_t c = blockIdx.x, hv = blockIdx.y, h = hv / w.G;
  const chunk_info ci = w.chunk[c];
  const int L = ci.len, K = int(w.K), V = int(w.V), tid = threadIdx.x;
  const index_t tok0 = w.token(ci.bt, ci.t0);
  extern __shared__ __align__(16) float sm[];
  float *sK = sm + sh::k_at, *sQ = sm + sh::q_at, *sdW = sm + sh::dw_at, *sdBk = sm + sh::dbk_at,
        *sdBv = sm + sh::dbv_at, *sDK = sm + sh::dk_at, *sDQ = sm + sh::dq_at, *sN = sm + sh::n_at, *sM = sm + sh::m_at,
        *sG = sm + sh::g_at, *sGam = sm + sh::gam_at, *sF = sm + sh::f_at, *sE = sm + sh::e_at, *sdG = sm + sh::dg_at,
        *sdE = sm + sh::de_at, *sdWr = sm + sh::dwr_at, *scratch = sm + sh::scratch_at;

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

  // The chunk's gates and decays.
  if (tid < CL) {
    const int r = tid;
    sG[r] = Gc[r], sE[r] = Erases && r < L ? gate_e[r * HV] : 0.f, sdG[r] = 0, sdE[r] = 0, sdWr[r] = 0;
  }
  __syncthreads();
  if (tid < CL) sGam[tid] = __expf(sG[tid]), sF[tid] = tid < L ? __expf(sG[L - 1] - sG[tid]) : 0.f;
  const auto D = [&](int r, int s) { return Decays ? __expf(sG[r] - sG[s]) : 1.f; };
  // (every product starts with a barrier: a staged tile is complete before the first product reads it)

  // ---- the UT transform's adjoints: dW = −dU hᵀ, dBv = Tᵀ dU, dBk = Tᵀ dW; dA = −(dBv Uᵀ + dBk Wᵀ), M = dA ⊙ D ----
  if constexpr (Erases) {
    float *sdU = sK, *sT = sQ;  // dU and T stay in the k and q tiles until dBk (k and q come after)
    stage_tile<CL, max_kv, grad_batch>(sdU, ld_kv, [&](int r, int j) { return r < L && j < V ? dU[r * w.V + j] : 0.f; });
    stage_tile<CL, CL>(sT, ld_cc, [&](int s, int r) { return Tc[s * CL + r]; });  // sT[s][r] = T_sr
    gemm_128<Prec, Wide, grad_tk, walk::k, walk::k>(
        L, K, V, [&](int r, int j) { return sdU[r * ld_kv + j]; }, [&](int j, int d) { return hc[d * w.V + j]; },
        [&](int r, int d, float acc) { sdW[r * ld_kv + d] = -acc; }, scratch);
    block_gemm_direct<Prec, 64, direct_unroll<Erases, false>>(
        L, V, L, [&](int r, int s) { return sT[s * ld_cc + r]; }, [&](int s, int j) { return sdU[s * ld_kv + j]; },
        [&](int r, int j, float acc) { sdBv[r * ld_kv + j] = acc; });
    block_gemm_direct<Prec, 64, direct_unroll<Erases, false>>(
        L, K, L, [&](int r, int s) { return sT[s * ld_cc + r]; }, [&](int s, int d) { return sdW[s * ld_kv + d]; },
        [&](int r, int d, float acc) { sdBk[r * ld_kv + d] = acc; });
    block_gemm<Prec, 64, walk::k, walk::k, grad_tk>(
        L, L, V, [&](int r, int j) { return sdBv[r * ld_kv + j]; }, [&](int j, int s) { return Uc[s * w.V + j]; },
        [&](int r, int s, float acc) { sM[r * ld_cc + s] = acc; }, scratch);
    block_gemm<Prec, 64, walk::k, walk::k, grad_tk>(
        L, L, K, [&](int r, int d) { return sdBk[r * ld_kv + d]; }, [&](int d, int s) { return Wc[s * w.K + d]; },
        [&](int r, int s, float acc) { sM[r * ld_cc + s] = s < r ? -(sM[r * ld_cc + s] + acc) * D(r, s) : 0.f; },
        scratch);
    // dv_r = w_r dBv_r, dw_r = v_r·dBv_r: dBv's last reads, before its tile holds dq (a row per warp; the row's v
    // loaded before its dv is stored)
    // (every row's loads are issued before the first store: one round trip, not one per row)
    const int warp = tid >> 5, lane = tid & 31;
    constexpr int rows = CL / (threads / 32), cols = max_kv / 32;
    float vr[rows][cols], wr[rows];
#pragma unroll
    for (int i = 0; i < rows; ++i) {
      const int r = warp + i * (threads / 32);
      wr[i] = r < L ? gate_w[r * HV] : 0.f;
#pragma unroll
      for (int c = 0; c < cols; ++c) vr[i][c] = r < L && lane + 32 * c < V ? v[r * ldv + lane + 32 * c] : 0.f;
    }
#pragma unroll
    for (int i = 0; i < rows; ++i) {
      const int r = warp + i * (threads / 32);
      if (r >= L) break;  // (warp-uniform)
      float x = 0;
#pragma unroll
      for (int c = 0; c < cols; ++c) {
        const int j = lane + 32 * c;
        if (j >= V) continue;
        const float dbv = sdBv[r * ld_kv + j];
        x = fmaf(vr[i][c], dbv, x);
        if (dv_out.ptr) dv_out(ci.bt, ci.t0 + r, hv, j) = from_float<T>(wr[i] * dbv);
      }
#pragma unroll
      for (int o = 16; o; o >>= 1) x += __shfl_xor_sync(0xffffffffu, x, o);
      if (lane == 0) sdWr[r] = x;
    }
  } else if (dv_out.ptr) {  // dv = dU, through registers in batches (see stage_tile)
    constexpr int per = CL * max_kv / threads, batch = grad_batch;
    for (int b0 = 0; b0 < per; b0 += batch) {
      float x[batch];
#pragma unroll
      for (int i = 0; i < batch; ++i) {
        const int e = tid + (b0 + i) * threads, r = e / max_kv, j = e % max_kv;
        x[i] = r < L && j < V ? dU[r * w.V + j] : 0.f;
      }
#pragma unroll
      for (int i = 0; i < batch; ++i) {
        const int e = tid + (b0 + i) * threads, r = e / max_kv, j = e % max_kv;
        if (r < L && j < V) dv_out(ci.bt, ci.t0 + r, hv, j) = from_float<T>(x[i]);
      }
    }
  }
  // The chunk's k and q rows (zeros past L and K), read by every product below.
  stage_tile<CL, max_kv, grad_batch>(sK, ld_kv, [&](int r, int d) { return r < L && d < K ? k[r * ldq + d] : 0.f; });
  stage_tile<CL, max_kv, grad_batch>(sQ, ld_kv, [&](int r, int d) { return r < L && d < K ? q[r * ldq + d] : 0.f; });
  // P, for dP's decay terms, in dk's tile (free until dk's first product; dW's contents died with dBk)
  float* sP = sDK;
  if constexpr (Decays) stage_tile<CL, CL>(sP, ld_cc, [&](int r, int s) { return r < L && s < L ? Pc[r * CL + s] : 0.f; });
  // ---- dP = s dO U_newᵀ (causal), N = dP ⊙ D; its decay terms dG_r += Σ_s dP_rs P_rs, dG_s −= Σ_r dP_rs P_rs ----
  float* sdP = scratch;  // [CL][CL + 1]: block_gemm's slabs are dead in its epilogue (one 64 × 64 tile)
  block_gemm<Prec, 64, walk::k, walk::k, grad_tk>(
      L, L, V, [&](int r, int j) { return dO[r * ldv + j]; }, [&](int j, int s) { return Un[s * ldu + j]; },
      [&](int r, int s, float acc) {
        const float dp = s <= r ? scale * acc : 0.f;
        if (Decays) sdP[r * (CL + 1) + s] = s < r ? dp * sP[r * ld_cc + s] : 0.f;
        sN[r * ld_cc + s] = s <= r ? dp * D(r, s) : 0.f;  // (D past the diagonal may overflow)
      },
      scratch);
  if constexpr (Decays) {  // dG_i += Σ_t X_it − Σ_t X_ti, X = dP ⊙ P: four threads per i, a quarter of t each
    constexpr int parts = threads / CL, span = CL / parts;
    const int i = tid % CL, t0 = tid / CL * span;
    float x = 0;
#pragma unroll
    for (int t = t0; t < t0 + span; ++t)
      if (t < L) x += sdP[i * (CL + 1) + t] - sdP[t * (CL + 1) + i];
    if (i < L) atomicAdd(&sdG[i], x);  // (ordered before the row passes' plain updates by the next product's barrier)
  }
  // ---- dq = Γ s (dO hᵀ) + N K;  dG_r += q_r·(Γ s dO hᵀ)_r ----
  gemm_128<Prec, Wide, grad_tk, walk::k, walk::k>(
      L, K, V, [&](int r, int j) { return dO[r * ldv + j]; }, [&](int j, int d) { return hc[d * w.V + j]; },
      [&](int r, int d, float acc) { sDQ[r * ld_kv + d] = scale * sGam[r] * acc; }, scratch);
  if constexpr (Decays)
    row_sums(L, K, [&](int r, int d) { return sQ[r * ld_kv + d] * sDQ[r * ld_kv + d]; },
             [&](int r, float x) { sdG[r] += x; });
  block_gemm_direct<Prec, 64, direct_unroll<Erases, false>>(
      L, K, L, [&](int r, int s) { return sN[r * ld_cc + s]; }, [&](int s, int d) { return sK[s * ld_kv + d]; },
      [&](int r, int d, float acc) { sDQ[r * ld_kv + d] += acc; });
  // ---- dk = F ⊙ (U_new dhᵀ) + Nᵀ Q + the UT transform's terms ----
  // (with z_s = k_s·(F ⊙ U_new dhᵀ)_s: dG_s −= z_s, dG_L += z_s — but for the last row, whose F is 1: its −z and
  // +z meet in dG_L and reach no dg_t, yet in float32 (dG_L − z) + z keeps only ~2^-24 |z| of dG_L, and z, undecayed,
  // can dwarf every decayed term of dg (a chunk of one or two tokens under SPEC's extreme gates: issue #14)
  gemm_128<Prec, Wide, grad_tk, walk::k, walk::k>(
      L, K, V, [&](int s, int j) { return Un[s * ldu + j]; }, [&](int j, int d) { return dhc[d * w.V + j]; },
      [&](int s, int d, float acc) { sDK[s * ld_kv + d] = sF[s] * acc; }, scratch);
  if constexpr (Decays)
    row_sums(L, K, [&](int s, int d) { return sK[s * ld_kv + d] * sDK[s * ld_kv + d]; }, [&](int s, float z) {
      if (s < L - 1) atomicAdd(&sdG[s], -z), atomicAdd(&sdG[L - 1], z);
    });
  block_gemm_direct<Prec, 64, direct_unroll<Erases, false>>(
      L, K, L, [&](int s, int r) { return sN[r * ld_cc + s]; }, [&](int r, int d) { return sQ[r * ld_kv + d]; },
      [&](int s, int d, float acc) { sDK[s * ld_kv + d] += acc; });
  if constexpr (Erases) {
    // x_s = γ_s dBk_s + (M K)_s (into dBk's tile): dk_s += e_s x_s;  de_s += k_s·x_s, and e_s times that into dG_s
    block_gemm_direct<Prec, 64, direct_unroll<Erases, false>>(
        L, K, L, [&](int s, int t) { return sM[s * ld_cc + t]; }, [&](int t, int d) { return sK[t * ld_kv + d]; },
        [&](int s, int d, float acc) {
          const float x = sGam[s] * sdBk[s * ld_kv + d] + acc;
          sdBk[s * ld_kv + d] = x;
          sDK[s * ld_kv + d] += sE[s] * x;
        });
    row_sums(L, K, [&](int s, int d) { return sK[s * ld_kv + d] * sdBk[s * ld_kv + d]; }, [&](int s, float z) {
      sdE[s] += z;
      if (Decays) sdG[s] += sE[s] * z;
    });
    // y_s = Σ_{r>s} M_rs e_r k_r (into dBk's tile): dk_s += y_s;  dG_s −= k_s·y_s
    block_gemm_direct<Prec, 64, direct_unroll<Erases, false>>(
        L, K, L, [&](int s, int r) { return sM[r * ld_cc + s]; }, [&](int r, int d) { return sE[r] * sK[r * ld_kv + d]; },
        [&](int s, int d, float acc) {
          sDK[s * ld_kv + d] += acc;
          if (Decays) sdBk[s * ld_kv + d] = acc;
        });
    if constexpr (Decays)
      row_sums(L, K, [&](int s, int d) { return sK[s * ld_kv + d] * sdBk[s * ld_kv + d]; },
               [&](int s, float z) { sdG[s] -= z; });
  }
  // ---- dq, dk leave; the decay of the state across the chunk: dG_L += γ_L ⟨h, dh⟩ ----
  __syncthreads();  // (orders the last row pass's plain updates of dG before the atomics below)
  for (int e = tid; e < L * K; e += threads) {
    const int r = e / K, d = e % K;
    dq[r * ldg + d] = sDQ[r * ld_kv + d];
    dk[r * ldg + d] = sDK[r * ld_kv + d];
  }
  if constexpr (Decays) {  // (grad_batch loads of h and of dh in flight per thread)
    float hdh = 0;
    for (int e0 = 0; e0 < K * V; e0 += grad_batch * threads) {
      float x[grad_batch], y[grad_batch];
#pragma unroll
      for (int i = 0; i < grad_batch; ++i) {
        const int e = e0 + tid + i * threads;
        x[i] = e < K * V ? hc[e] : 0.f, y[i] = e < K * V ? dhc[e] : 0.f;
      }
#pragma unroll
      for (int i = 0; i < grad_batch; ++i) hdh = fmaf(x[i], y[i], hdh);
    }
#pragma unroll
    for (int o = 16; o; o >>= 1) hdh += __shfl_xor_sync(0xffffffffu, hdh, o);
    if ((tid & 31) == 0) atomicAdd(&sdG[L - 1], sGam[L - 1] * hdh);
  }
  __syncthreads();
  // dg_t = Σ_{r≥t} dG_r: a suffix scan in each of two warps, then warp 0 adds warp 1's total
  float dg = tid < L ? sdG[tid] : 0.f;
  if (tid < CL) {
    const int lane = tid & 31;
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
      const float y = __shfl_down_sync(0xffffffffu, dg, o);
      if (lane + o < 32) dg += y;
    }
    if (lane == 0) scratch[tid >> 5] = dg;  // (scratch is free: the last product ended with a barrier)
  }
  __syncthreads();
  if (tid < L) {
    w.dlog_alpha[(tok0 + tid) * w.HV + hv] = dg + (tid < 32 ? scratch[1] : 0.f);
    if (Erases) w.derase[(tok0 + tid) * w.HV + hv] = sdE[tid] + sdWr[tid];
  }
}

}  // namespace linea::cuda_detail::bwd
