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
// For 16-bit inputs (Inter, grad13) the four products that contract over V — dW, dk's and dq's inter-chunk terms,
// dP — come from inter_grad_kernel.hpp (several small CTAs an SM) and are staged here as tiles; the rest is the same.
// With them (grad13b, erasing rules) the UT transform's dBv = Tᵀ dU, dBk = Tᵀ dW and M come from ut_grad_kernel.hpp
// and are staged at the start with k and dk's term (dU, T and dW are not read here then).
// One CTA per (chunk, value head), float32 (docs: bench/cuda/README.md's phase-4 sections). The kernel is
// latency-bound (one CTA per SM), so its global reads avoid round trips behind barriers:
// - the six products with a global operand (dW, M's two halves, dP, dq's and dk's inter-chunk terms) stream it
//   through block_gemm_ring (async_copy.hpp): three 32-deep cp.async slabs, two in flight while the tensor cores
//   work on one, with A read in place where it is already in shared memory (dU, dBv, dBk);
// - the staged tiles (dU, T, k, q, P) are cp.async copies issued as soon as their tile is free, waited on by the
//   next product's first slab;
// - products whose operands are all in shared memory read their fragments in place (block_gemm_direct);
// - the UT transform's tiles live in the read part's tiles (dU in k's, T in N's, dW in dk's, dBv in dq's, dBk in
//   q's, M in P's), and the decay terms of M (x = γ dBk + M K, y = Mᵀ E K) are added to dk right after the UT
//   transform, so that its tiles are free when k and q are staged; dk starts as F ⊙ (U_new dhᵀ), formed first
//   so that its decay sum k·dk is a row pass over that term alone.
// The K Kᵀ of de and of the decay terms of dA never forms: Σ_s M_rs (k_r·k_s) is k_r·(M K)_r and
// Σ_r M_rs e_r (k_r·k_s) is k_s·(Mᵀ E K)_s, rows of two products dk needs anyway. The per-row sums (dG, de, dw) are
// warp reductions over tiles a product leaves in shared memory (row_sums), not atomics from every element. dP's
// row and column sums go through the ring, free in dP's epilogue.
#pragma once
#include <algorithm>

#include "async_copy.hpp"
#include "block_gemm.hpp"

namespace linea::cuda_detail::bwd {

inline constexpr int grad_tk = 32;  // slab depth of block_gemm's global-operand products (per_key_grad_kernel.hpp)
inline constexpr int grad_batch = 16;  // loads in flight per thread when staging a tile through registers
inline constexpr int grad_stages = 3;   // block_gemm_ring's slabs (two in flight)
// block_gemm_direct's products load the next k-step's fragments ahead (prof11); LINEA_BWD_GRAD_PIPE=0 turns it off
// (bench/cuda/grad_ab.cu's A/B builds), not a user option
#ifdef LINEA_BWD_GRAD_PIPE
inline constexpr bool grad_pipe = LINEA_BWD_GRAD_PIPE;
#else
inline constexpr bool grad_pipe = true;
#endif
// block_gemm's 64 × 128 slabs, its 32-deep 64-wide ones, or dP's padded CL × CL tile (per_key_grad_kernel.hpp)
inline constexpr int grad_scratch = std::max({gemm_scratch_for<32, 128>, gemm_scratch_for<grad_tk>, CL * (CL + 1)});
// chunk_grad's ring: three slabs of both operands, also dP's padded CL × CL tile in dP's epilogue
inline constexpr int grad_ring = std::max(ring_floats<grad_stages, false>, CL * (CL + 1));

// Tiles in floats: k, q, dq, dk [CL][ld_kv]; N and (decaying or erasing rules) P / M [CL][ld_cc]; seven rows; the
// ring. An erasing update's UT transform runs in these tiles before k and q are staged (see above), so every rule
// has the same footprint.
template <bool Erases>
struct grad_shape {
  static constexpr int kv = CL * ld_kv, cc = CL * ld_cc;
  static constexpr int k_at = 0, q_at = k_at + kv, dq_at = q_at + kv, dk_at = dq_at + kv, n_at = dk_at + kv,
                       pm_at = n_at + cc, g_at = pm_at + cc, gam_at = g_at + CL, f_at = gam_at + CL,
                       e_at = f_at + CL, dg_at = e_at + CL, de_at = dg_at + CL, dwr_at = de_at + CL,
                       ring_at = dwr_at + CL, end = ring_at + grad_ring;
  static_assert(ring_at % 4 == 0 && kv % 4 == 0 && cc % 4 == 0, "chunk_grad_kernel: 16-byte aligned tiles");
  static constexpr std::size_t bytes = sizeof(float) * end;
  static_assert(bytes <= 227 * 1024, "chunk_grad_kernel: more shared memory than one SM has");
};

// (Wide: kept for the launch's signature; the ring's 64-wide tiles serve every product.)
// Inter (16-bit inputs, grad13): inter_grad_kernel.hpp has already formed the four products that contract over V —
// dq's γ s dO hᵀ and dk's F ⊙ (U_new dhᵀ) in w.dq / w.dk, dW in w.dW_inter, dP in w.dP_inter — and this kernel
// stages them as tiles where it formed them (the same tiles, the same epilogue arithmetic after them).
template <bool Erases, bool Decays, class T, bool Wide = false, precision Prec = precision_for<T>, bool Inter = false>
__global__ void __launch_bounds__(threads, 1) chunk_grad_kernel(const work w, const view<T, 4> dv_out) {
  using sh = grad_shape<Erases>;
  const index_t c = blockIdx.x, hv = blockIdx.y, h = hv / w.G;
  const chunk_info ci = w.chunk[c];
  const int L = ci.len, K = int(w.K), V = int(w.V), tid = threadIdx.x;
  const index_t tok0 = w.token(ci.bt, ci.t0);
  extern __shared__ __align__(16) float sm[];
  float *sK = sm + sh::k_at, *sQ = sm + sh::q_at, *sDQ = sm + sh::dq_at, *sDK = sm + sh::dk_at, *sN = sm + sh::n_at,
        *sPM = sm + sh::pm_at, *sG = sm + sh::g_at, *sGam = sm + sh::gam_at, *sF = sm + sh::f_at, *sE = sm + sh::e_at,
        *sdG = sm + sh::dg_at, *sdE = sm + sh::de_at, *sdWr = sm + sh::dwr_at, *ring = sm + sh::ring_at;
  // the UT transform's tiles (erasing update), in tiles that are free until the read part
  float *sdU = sK, *sT = sN, *sdW = sDK, *sdBv = sDQ, *sdBk = sQ, *sM = sPM;
  float* sP = sPM;  // (decaying rules) P, once M is dead

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
  const float *dWi = Inter && Erases ? w.dW_inter + cv * CL * w.K : nullptr, *dPi = Inter ? w.dP_inter + cv * CL * CL : nullptr;

  // The first staged tiles: dU and T (erasing update), else k, q and P at once (their tiles are free); with Inter
  // also dW (erase: in dk's tile, free until dBk has read it), else dk's, dq's and dP's inter-chunk terms.
  if constexpr (Erases && Inter) {  // grad13b: dBv, dBk (in dW_inter) and M from ut_grad_kernel.hpp, with k, dk's term
    async_tile<CL, max_kv>(sK, ld_kv, k, ldq, L, K);
    async_tile<CL, max_kv>(sdBv, ld_kv, w.dBv_inter + cv * CL * w.V, w.V, L, V);
    async_tile<CL, max_kv>(sdBk, ld_kv, dWi, w.K, L, K);
    async_tile<CL, CL>(sM, ld_cc, w.M_inter + cv * CL * CL, CL, L, CL);
    async_tile<CL, max_kv>(sDK, ld_kv, dk, ldg, L, K);
  } else if constexpr (Erases) {
    async_tile<CL, max_kv>(sdU, ld_kv, dU, w.V, L, V);
    async_tile<CL, CL>(sT, ld_cc, Tc, CL, CL, CL);  // sT[s][r] = T_sr
  } else {
    async_tile<CL, max_kv>(sK, ld_kv, k, ldq, L, K);
    async_tile<CL, max_kv>(sQ, ld_kv, q, ldq, L, K);
    if constexpr (Decays) async_tile<CL, CL>(sP, ld_cc, Pc, CL, L, CL);
    if constexpr (Inter) {
      async_tile<CL, max_kv>(sDK, ld_kv, dk, ldg, L, K);
      async_tile<CL, max_kv>(sDQ, ld_kv, dq, ldg, L, K);
      async_tile<CL, CL>(sN, ld_cc, dPi, CL, L, CL);
    }
  }
  async_commit();
  // The chunk's gates and decays.
  if (tid < CL) {
    const int r = tid;
    sG[r] = Gc[r], sE[r] = Erases && r < L ? gate_e[r * HV] : 0.f, sdG[r] = 0, sdE[r] = 0, sdWr[r] = 0;
  }
  __syncthreads();
  if (tid < CL) sGam[tid] = __expf(sG[tid]), sF[tid] = tid < L ? __expf(sG[L - 1] - sG[tid]) : 0.f;
  const auto D = [&](int r, int s) { return Decays ? __expf(sG[r] - sG[s]) : 1.f; };
  // (every product starts with a barrier, and a ring product's first slab waits for every older cp.async group:
  // a staged tile is complete before the first product after it reads it)

  // ---- the UT transform's adjoints: dW = −dU hᵀ, dBv = Tᵀ dU, dBk = Tᵀ dW; dA = −(dBv Uᵀ + dBk Wᵀ), M = dA ⊙ D ----
  if constexpr (Erases) {
    if constexpr (Inter) {  // (dBv, dBk, M, k and dk's term staged)
      async_wait<0>();
      __syncthreads();
    } else {
      block_gemm_ring<Prec, grad_stages, true>(
          L, K, V, sdU, ld_kv, hc, w.V, [&](int r, int d, float acc) { sdW[r * ld_kv + d] = -acc; }, ring);
      block_gemm_direct<Prec, 64, direct_unroll<Erases, false>, grad_pipe>(
          L, V, L, [&](int r, int s) { return sT[s * ld_cc + r]; }, [&](int s, int j) { return sdU[s * ld_kv + j]; },
          [&](int r, int j, float acc) { sdBv[r * ld_kv + j] = acc; });
      // (dU is dead: k's rows come into its tile while dBk and M form)
      async_tile<CL, max_kv>(sK, ld_kv, k, ldq, L, K);
      async_commit();
      block_gemm_direct<Prec, 64, direct_unroll<Erases, false>, grad_pipe>(
          L, K, L, [&](int r, int s) { return sT[s * ld_cc + r]; }, [&](int s, int d) { return sdW[s * ld_kv + d]; },
          [&](int r, int d, float acc) { sdBk[r * ld_kv + d] = acc; });
      block_gemm_ring<Prec, grad_stages, true>(
          L, L, V, sdBv, ld_kv, Uc, w.V, [&](int r, int s, float acc) { sM[r * ld_cc + s] = acc; }, ring);
      block_gemm_ring<Prec, grad_stages, true>(
          L, L, K, sdBk, ld_kv, Wc, w.K,
          [&](int r, int s, float acc) { sM[r * ld_cc + s] = s < r ? -(sM[r * ld_cc + s] + acc) * D(r, s) : 0.f; },
          ring);
    }
    // dv_r = w_r dBv_r, dw_r = v_r·dBv_r: dBv's last reads (a row per warp; every row's loads issued before the
    // first store: one round trip, not one per row). Row pointers step by 8 rows: the 64-bit index arithmetic of v
    // and dv_out is done once per row, not per element (prof11: this block, fully unrolled, was ~2000 instructions
    // run once per CTA, and the fetch of code run once is a third of phase 4's stalls).
    const int warp = tid >> 5, lane = tid & 31;
    constexpr int rows = CL / (threads / 32), cols = max_kv / 32;
    float vr[rows][cols], wr[rows];
    {
      const float* vp = v + warp * ldv + lane;  // row warp + 8 i at vp + 8 i ldv
      const float* wp = gate_w + warp * HV;
#pragma unroll
      for (int i = 0; i < rows; ++i) {
        const int r = warp + i * (threads / 32);
        wr[i] = r < L ? wp[i * (threads / 32) * HV] : 0.f;
#pragma unroll
        for (int c = 0; c < cols; ++c)
          vr[i][c] = r < L && lane + 32 * c < V ? vp[i * (threads / 32) * ldv + 32 * c] : 0.f;
      }
    }
    T* dvp = dv_out.ptr ? &dv_out(ci.bt, ci.t0 + warp, hv, lane) : nullptr;  // (row warp, column lane)
    const index_t dv_row = (threads / 32) * dv_out.stride(1), dv_col = 32 * dv_out.stride(3);
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
        if (dvp) dvp[i * dv_row + c * dv_col] = from_float<T>(wr[i] * dbv);
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
  // ---- dk = F ⊙ (U_new dhᵀ) (with z_s = k_s·dk_s: dG_s −= z_s, dG_L += z_s — but for the last row, whose F is 1:
  // its −z and +z meet in dG_L and reach no dg_t, yet in float32 (dG_L − z) + z keeps only ~2^-24 |z| of dG_L, and
  // z, undecayed, can dwarf every decayed term of dg: a chunk of one or two tokens under SPEC's extreme gates, #14) ----
  if constexpr (Inter) {  // (staged: dk's tile complete and visible before its row pass)
    async_wait<0>();
    __syncthreads();
  } else {
    block_gemm_ring<Prec, grad_stages, false>(
        L, K, V, Un, ldu, dhc, w.V, [&](int s, int d, float acc) { sDK[s * ld_kv + d] = sF[s] * acc; }, ring);
  }
  if constexpr (Decays)
    row_sums(L, K, [&](int s, int d) { return sK[s * ld_kv + d] * sDK[s * ld_kv + d]; }, [&](int s, float z) {
      if (s < L - 1) atomicAdd(&sdG[s], -z), atomicAdd(&sdG[L - 1], z);
    });
  if constexpr (Erases) {
    // x_s = γ_s dBk_s + (M K)_s (into dBk's tile): dk_s += e_s x_s;  de_s += k_s·x_s, and e_s times that into dG_s
    block_gemm_direct<Prec, 64, direct_unroll<Erases, false>, grad_pipe>(
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
    block_gemm_direct<Prec, 64, direct_unroll<Erases, false>, grad_pipe>(
        L, K, L, [&](int s, int r) { return sM[r * ld_cc + s]; }, [&](int r, int d) { return sE[r] * sK[r * ld_kv + d]; },
        [&](int s, int d, float acc) {
          sDK[s * ld_kv + d] += acc;
          if (Decays) sdBk[s * ld_kv + d] = acc;
        });
    if constexpr (Decays)
      row_sums(L, K, [&](int s, int d) { return sK[s * ld_kv + d] * sdBk[s * ld_kv + d]; },
               [&](int s, float z) { sdG[s] -= z; });
    __syncthreads();  // (dBk's and M's last reads: q and P come into their tiles)
    async_tile<CL, max_kv>(sQ, ld_kv, q, ldq, L, K);
    if constexpr (Decays) async_tile<CL, CL>(sP, ld_cc, Pc, CL, L, CL);
    if constexpr (Inter) {  // (dBv's and T's tiles are dead)
      async_tile<CL, max_kv>(sDQ, ld_kv, dq, ldg, L, K);
      async_tile<CL, CL>(sN, ld_cc, dPi, CL, L, CL);
    }
    async_commit();
  }
  // ---- dP = s dO U_newᵀ (causal), N = dP ⊙ D; its decay terms dG_r += Σ_s dP_rs P_rs, dG_s −= Σ_r dP_rs P_rs ----
  float* sdP = ring;  // [CL][CL + 1]: the ring is free in the product's epilogue
  if constexpr (Inter) {  // dP staged in N's tile (zeros above the diagonal and past L): the same epilogue in place
    async_wait<0>();
    __syncthreads();
    for (int e = tid; e < L * CL; e += threads) {
      const int r = e / CL, s = e % CL;
      const float dp = sN[r * ld_cc + s];
      if (Decays) sdP[r * (CL + 1) + s] = s < r ? dp * sP[r * ld_cc + s] : 0.f;
      sN[r * ld_cc + s] = s <= r ? dp * D(r, s) : 0.f;
    }
    __syncthreads();
  } else {
    block_gemm_ring<Prec, grad_stages, false>(
        L, L, V, dO, ldv, Un, ldu,
        [&](int r, int s, float acc) {
          const float dp = s <= r ? scale * acc : 0.f;
          if (Decays) sdP[r * (CL + 1) + s] = s < r ? dp * sP[r * ld_cc + s] : 0.f;
          sN[r * ld_cc + s] = s <= r ? dp * D(r, s) : 0.f;  // (D past the diagonal may overflow)
        },
        ring);
  }
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
  if constexpr (Inter) {
    __syncthreads();  // (dq's term is staged; the barrier orders the atomics above before the row pass)
  } else {
    block_gemm_ring<Prec, grad_stages, false>(
        L, K, V, dO, ldv, hc, w.V, [&](int r, int d, float acc) { sDQ[r * ld_kv + d] = scale * sGam[r] * acc; },
        ring);
  }
  if constexpr (Decays)
    row_sums(L, K, [&](int r, int d) { return sQ[r * ld_kv + d] * sDQ[r * ld_kv + d]; },
             [&](int r, float x) { sdG[r] += x; });
  block_gemm_direct<Prec, 64, direct_unroll<Erases, false>, grad_pipe>(
      L, K, L, [&](int r, int s) { return sN[r * ld_cc + s]; }, [&](int s, int d) { return sK[s * ld_kv + d]; },
      [&](int r, int d, float acc) { sDQ[r * ld_kv + d] += acc; });
  // ---- dk += Nᵀ Q ----
  block_gemm_direct<Prec, 64, direct_unroll<Erases, false>, grad_pipe>(
      L, K, L, [&](int s, int r) { return sN[r * ld_cc + s]; }, [&](int r, int d) { return sQ[r * ld_kv + d]; },
      [&](int s, int d, float acc) { sDK[s * ld_kv + d] += acc; });
  // ---- dq, dk leave; the decay of the state across the chunk: dG_L += γ_L ⟨h, dh⟩ ----
  // (block_gemm_direct ended with a barrier: it orders the last row pass's plain updates of dG before the atomics)
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
    if (lane == 0) ring[tid >> 5] = dg;  // (the ring is free: the last product ended with a barrier)
  }
  __syncthreads();
  if (tid < L) {
    w.dlog_alpha[(tok0 + tid) * w.HV + hv] = dg + (tid < 32 ? ring[1] : 0.f);
    if (Erases) w.derase[(tok0 + tid) * w.HV + hv] = sdE[tid] + sdWr[tid];
  }
}

}  // namespace linea::cuda_detail::bwd
