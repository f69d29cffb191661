// bench/cuda/grad_ab_v0.hpp — phase 4 as main 07de2f4 runs it (chunk_grad_kernel.hpp, per_key_grad_kernel.hpp and
// async_copy.hpp's block_gemm_ring before prof11), in namespace bwd::v0, so that grad_ab.cu times and compares both on
// the same workspace in one process. block_gemm_direct resolves to the library's with its Pipe off (main's loop).
// Generated from `git show 07de2f4:<file>`; not part of the library.
#pragma once
#include <linea/backend/cuda/backward/phases.hpp>

namespace linea::cuda_detail::bwd::v0 {

// ---- async_copy.hpp (main) ----
template <precision Prec, int Stages, bool AResident, class Out>
__device__ __forceinline__ void block_gemm_ring(int M, int N, int Kd, const float* a, index_t lda, const float* b,
                                                index_t ldb, Out out, float* ring) {
  static_assert(threads == 256 && Stages >= 2, "block_gemm_ring: 256 threads, at least two stages");
  constexpr int NT = 4, SF = ring_stage_floats<AResident>, BO = AResident ? 0 : gemm_tm * ring_ld;
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, g = lane >> 2, t = lane & 3;
  const int wm = 16 * (warp & 3), wn = 32 * (warp >> 2);  // this warp's 16 × 32 strip of a 64 × 64 tile
  const int slabs = (Kd + ring_tk - 1) / ring_tk, tiles_n = (N + 63) / 64, jobs = slabs * tiles_n;
  const auto aligned = [](const float* p, index_t ld) {
    return ld % 4 == 0 && reinterpret_cast<std::uintptr_t>(p) % 16 == 0;
  };
  const bool wide = Kd % 4 == 0 && aligned(b, ldb) && (AResident || aligned(a, lda));
  const auto fill = [&](int j) {  // job j = (n-tile j / slabs, slab j % slabs) into stage j % Stages
    float* st = ring + (j % Stages) * SF;
    const int n0 = 64 * (j / slabs), k0 = ring_tk * (j % slabs);
    if constexpr (!AResident) ring_fill(st, a, lda, M, k0, Kd, wide);
    ring_fill(st + BO, b + n0 * ldb, ldb, N - n0, k0, Kd, wide);
  };
  __syncthreads();  // (the ring's previous readers are done; a resident A is complete)
#pragma unroll
  for (int j = 0; j < Stages - 1; ++j) {
    if (j < jobs) fill(j);
    async_commit();
  }
  float acc[NT][4] = {};
  const int ma = wm + g, mb = ma + 8;
  for (int j = 0; j < jobs; ++j) {
    async_wait<Stages - 2>();  // this thread's pieces of slab j are in
    __syncthreads();           // everyone's are; and slab j − 1's stage has been read by all
    if (j + Stages - 1 < jobs) fill(j + Stages - 1);
    async_commit();
    const float* As = ring + (j % Stages) * SF;
    const float* Bs = As + BO;
    const int k0 = ring_tk * (j % slabs), n0 = 64 * (j / slabs);
    const int steps = (Kd - k0 < ring_tk ? Kd - k0 + 7 : ring_tk) / 8;  // (the slab's zeros past Kd skip)
    for (int s = 0; s < steps; ++s) {
      const int kk = 8 * s, ka = kk + t, kb = ka + 4;
      std::uint32_t ab[4], as[4];
      if constexpr (AResident) {  // (A past M or Kd read as zeros, never from the tile)
        const int ga = k0 + ka, gb = k0 + kb;
        a_operand<Prec>(ma < M && ga < Kd ? a[ma * lda + ga] : 0.f, ab[0], as[0]);
        a_operand<Prec>(mb < M && ga < Kd ? a[mb * lda + ga] : 0.f, ab[1], as[1]);
        a_operand<Prec>(ma < M && gb < Kd ? a[ma * lda + gb] : 0.f, ab[2], as[2]);
        a_operand<Prec>(mb < M && gb < Kd ? a[mb * lda + gb] : 0.f, ab[3], as[3]);
      } else {
        a_operand<Prec>(As[ma * ring_ld + ka], ab[0], as[0]);
        a_operand<Prec>(As[mb * ring_ld + ka], ab[1], as[1]);
        a_operand<Prec>(As[ma * ring_ld + kb], ab[2], as[2]);
        a_operand<Prec>(As[mb * ring_ld + kb], ab[3], as[3]);
      }
#pragma unroll
      for (int i = 0; i < NT; ++i) {
        const int n = wn + 8 * i + g;
        mma_step<Prec>(acc[i], ab, as, Bs[n * ring_ld + ka], Bs[n * ring_ld + kb]);
      }
    }
    if (j % slabs == slabs - 1) {  // the n-tile is done
      if (j == jobs - 1) __syncthreads();  // (out may write over the ring: every warp is past its last read)
#pragma unroll
      for (int i = 0; i < NT; ++i)
#pragma unroll
        for (int x = 0; x < 4; ++x) {
          const int m = wm + g + 8 * (x >> 1), n = n0 + wn + 8 * i + 2 * t + (x & 1);
          if (m < M && n < N) out(m, n, acc[i][x]);
          acc[i][x] = 0.f;
        }
    }
  }
  async_wait<0>();  // (only empty groups are left)
  __syncthreads();
}


// ---- chunk_grad_kernel.hpp (main) ----


inline constexpr int grad_tk = 32;  // slab depth of block_gemm's global-operand products (per_key_grad_kernel.hpp)
inline constexpr int grad_batch = 16;  // loads in flight per thread when staging a tile through registers
inline constexpr int grad_stages = 3;   // block_gemm_ring's slabs (two in flight)
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
template <bool Erases, bool Decays, class T, bool Wide = false, precision Prec = precision_for<T>>
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

  // The first staged tiles: dU and T (erasing update), else k, q and P at once (their tiles are free).
  if constexpr (Erases) {
    async_tile<CL, max_kv>(sdU, ld_kv, dU, w.V, L, V);
    async_tile<CL, CL>(sT, ld_cc, Tc, CL, CL, CL);  // sT[s][r] = T_sr
  } else {
    async_tile<CL, max_kv>(sK, ld_kv, k, ldq, L, K);
    async_tile<CL, max_kv>(sQ, ld_kv, q, ldq, L, K);
    if constexpr (Decays) async_tile<CL, CL>(sP, ld_cc, Pc, CL, L, CL);
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
    block_gemm_ring<Prec, grad_stages, true>(
        L, K, V, sdU, ld_kv, hc, w.V, [&](int r, int d, float acc) { sdW[r * ld_kv + d] = -acc; }, ring);
    block_gemm_direct<Prec, 64, direct_unroll<Erases, false>>(
        L, V, L, [&](int r, int s) { return sT[s * ld_cc + r]; }, [&](int s, int j) { return sdU[s * ld_kv + j]; },
        [&](int r, int j, float acc) { sdBv[r * ld_kv + j] = acc; });
    // (dU is dead: k's rows come into its tile while dBk and M form)
    async_tile<CL, max_kv>(sK, ld_kv, k, ldq, L, K);
    async_commit();
    block_gemm_direct<Prec, 64, direct_unroll<Erases, false>>(
        L, K, L, [&](int r, int s) { return sT[s * ld_cc + r]; }, [&](int s, int d) { return sdW[s * ld_kv + d]; },
        [&](int r, int d, float acc) { sdBk[r * ld_kv + d] = acc; });
    block_gemm_ring<Prec, grad_stages, true>(
        L, L, V, sdBv, ld_kv, Uc, w.V, [&](int r, int s, float acc) { sM[r * ld_cc + s] = acc; }, ring);
    block_gemm_ring<Prec, grad_stages, true>(
        L, L, K, sdBk, ld_kv, Wc, w.K,
        [&](int r, int s, float acc) { sM[r * ld_cc + s] = s < r ? -(sM[r * ld_cc + s] + acc) * D(r, s) : 0.f; },
        ring);
    // dv_r = w_r dBv_r, dw_r = v_r·dBv_r: dBv's last reads (a row per warp; every row's loads issued before the
    // first store: one round trip, not one per row)
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
  // ---- dk = F ⊙ (U_new dhᵀ) (with z_s = k_s·dk_s: dG_s −= z_s, dG_L += z_s — but for the last row, whose F is 1:
  // its −z and +z meet in dG_L and reach no dg_t, yet in float32 (dG_L − z) + z keeps only ~2^-24 |z| of dG_L, and
  // z, undecayed, can dwarf every decayed term of dg: a chunk of one or two tokens under SPEC's extreme gates, #14) ----
  block_gemm_ring<Prec, grad_stages, false>(
      L, K, V, Un, ldu, dhc, w.V, [&](int s, int d, float acc) { sDK[s * ld_kv + d] = sF[s] * acc; }, ring);
  if constexpr (Decays)
    row_sums(L, K, [&](int s, int d) { return sK[s * ld_kv + d] * sDK[s * ld_kv + d]; }, [&](int s, float z) {
      if (s < L - 1) atomicAdd(&sdG[s], -z), atomicAdd(&sdG[L - 1], z);
    });
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
    __syncthreads();  // (dBk's and M's last reads: q and P come into their tiles)
    async_tile<CL, max_kv>(sQ, ld_kv, q, ldq, L, K);
    if constexpr (Decays) async_tile<CL, CL>(sP, ld_cc, Pc, CL, L, CL);
    async_commit();
  }
  // ---- dP = s dO U_newᵀ (causal), N = dP ⊙ D; its decay terms dG_r += Σ_s dP_rs P_rs, dG_s −= Σ_r dP_rs P_rs ----
  float* sdP = ring;  // [CL][CL + 1]: the ring is free in the product's epilogue
  block_gemm_ring<Prec, grad_stages, false>(
      L, L, V, dO, ldv, Un, ldu,
      [&](int r, int s, float acc) {
        const float dp = s <= r ? scale * acc : 0.f;
        if (Decays) sdP[r * (CL + 1) + s] = s < r ? dp * sP[r * ld_cc + s] : 0.f;
        sN[r * ld_cc + s] = s <= r ? dp * D(r, s) : 0.f;  // (D past the diagonal may overflow)
      },
      ring);
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
  block_gemm_ring<Prec, grad_stages, false>(
      L, K, V, dO, ldv, hc, w.V, [&](int r, int d, float acc) { sDQ[r * ld_kv + d] = scale * sGam[r] * acc; }, ring);
  if constexpr (Decays)
    row_sums(L, K, [&](int r, int d) { return sQ[r * ld_kv + d] * sDQ[r * ld_kv + d]; },
             [&](int r, float x) { sdG[r] += x; });
  block_gemm_direct<Prec, 64, direct_unroll<Erases, false>>(
      L, K, L, [&](int r, int s) { return sN[r * ld_cc + s]; }, [&](int s, int d) { return sK[s * ld_kv + d]; },
      [&](int r, int d, float acc) { sDQ[r * ld_kv + d] += acc; });
  // ---- dk += Nᵀ Q ----
  block_gemm_direct<Prec, 64, direct_unroll<Erases, false>>(
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


// ---- per_key_grad_kernel.hpp (main) ----


inline constexpr int LK = max_kv + 1;  // padded row stride of [CL][K] shared tiles read column-wise

// gla (no erase: two CTAs per SM within the shared memory budget): dW's tile (also dG's), N, G, a row, the
// block_gemm scratch. An erasing update (one CTA per SM) adds dBk, dBv, M, the staged k rows and the erase gates,
// its [CL][K] tiles padded to ld_kv (conflict-free fragments where block_gemm_ring reads dBv, dBk in place), and
// the ring's own region right after dBv's tile (dBv's tile joins it once dv, dw have read it).
template <bool Erases>
struct per_key_grad_shape {
  static constexpr int ld = Erases ? ld_kv : max_kv;  // rows of the dW / dG, dBk, dBv (q) tiles
  static constexpr int ut_kv = Erases ? CL * ld : 0, ut_cc = Erases ? CL * CL : 0, ut_k = Erases ? CL * LK : 0;
  static constexpr int ring_own = Erases ? ring_floats<3, true> : 0;
  static constexpr int dw_at = 0, dbk_at = dw_at + CL * ld, dbv_at = dbk_at + ut_kv, ring_at = dbv_at + ut_kv,
                       n_at = ring_at + ring_own, m_at = n_at + CL * CL, g_at = m_at + ut_cc, k_at = g_at + CL * LK,
                       gl_at = k_at + ut_k, e_at = gl_at + max_kv, dwr_at = e_at + (Erases ? CL : 0),
                       scratch_at = Erases ? ring_at : dwr_at + (Erases ? CL : 0),
                       end = Erases ? dwr_at + CL : scratch_at + grad_scratch;
  static_assert(!Erases || (ring_own >= gemm_scratch_for<grad_tk> && ut_kv + ring_own >= ring_floats<3, false>),
                "per_key_grad_kernel: the ring's region holds block_gemm's 32-deep slabs, and with dBv's tile a full ring");
  static_assert(dbv_at % 4 == 0 && ring_at % 4 == 0, "per_key_grad_kernel: 16-byte aligned ring");
  static constexpr std::size_t bytes = sizeof(float) * end;
  static_assert(bytes <= 227 * 1024, "per_key_grad_kernel: more shared memory than one SM has");
};

// The products: an erasing update (one CTA per SM) streams 32 deep (Wide: 64 × 128 tiles, for Tᵀ dU and Tᵀ dW);
// gla's kernel keeps 16-deep, 64-wide tiles, as its two CTAs per SM have 128 registers a thread.
template <bool Erases>
inline constexpr int pk_tk = Erases ? grad_tk : gemm_tk;

template <bool Erases, class T, bool Channels = false, bool Wide = false, precision Prec = precision_for<T>>
__global__ void __launch_bounds__(threads, Erases ? 1 : 2) per_key_grad_kernel(const work w, const view<T, 4> dv_out,
                                                                               const channel_gates cg,
                                                                               const channel_grads<T> cd) {
  static_assert(Erases || !Channels, "channel gates belong to an erasing update");
  using sh = per_key_grad_shape<Erases>;
  const index_t c = blockIdx.x, hv = blockIdx.y, h = hv / w.G;
  const chunk_info ci = w.chunk[c];
  const int L = ci.len, K = int(w.K), V = int(w.V), tid = threadIdx.x;
  const index_t tok0 = w.token(ci.bt, ci.t0);
  extern __shared__ __align__(16) float sm[];
  float *sdW = sm + sh::dw_at, *sdBk = sm + sh::dbk_at, *sdBv = sm + sh::dbv_at, *sN = sm + sh::n_at,
        *sM = sm + sh::m_at, *sG = sm + sh::g_at, *sK = sm + sh::k_at, *sdGL = sm + sh::gl_at,
        *sE = sm + sh::e_at, *sdWr = sm + sh::dwr_at, *scratch = sm + sh::scratch_at;
  float* sQ = sdBv;  // (erasing update) the chunk's q rows [CL][ld], once dv and dw have read dBv
  float* sdG = sdW;  // dG [CL][ld] reuses dW's tile once dBk has been formed

  const std::size_t cv = w.ch(c, hv);
  const float *hc = w.h + cv * w.K * w.V, *dhc = w.dh + cv * w.K * w.V, *dU = w.dU + cv * CL * w.V;
  const float *Tc = w.Tinv + cv * CL * CL, *Wc = w.W + cv * CL * w.K, *Uc = w.U + cv * CL * w.V;
  const float* Gk = w.Gk + cv * CL * w.K;
  const index_t ldq = w.H * w.K, ldv = w.HV * w.V, HV = w.HV, ldg = w.HV * w.K;
  const float* q = w.q + (tok0 * w.H + h) * w.K;  // row r at r·ldq
  const float* k = w.k + (tok0 * w.H + h) * w.K;
  const float* v = w.v + (tok0 * w.HV + hv) * w.V;  // row r at r·ldv
  const float* dO = w.d_o + (tok0 * w.HV + hv) * w.V;
  const float* gate_e = w.erase + tok0 * w.HV + hv;  // row r at r·HV
  const float* gate_w = w.write + tok0 * w.HV + hv;
  const float* b_ch = Channels ? cg.b + (tok0 * w.HV + hv) * w.K : nullptr;  // row r at r·ldg
  const float* w_ch = Channels ? cg.w + (tok0 * w.HV + hv) * w.V : nullptr;  // row r at r·ldv
  // the erase gate of token r, key channel d
  const auto erase = [&](int r, int d) { return Channels ? b_ch[r * ldg + d] : sE[r]; };
  float* dq = w.dq + (tok0 * w.HV + hv) * w.K;  // row r at r·ldg
  float* dk = w.dk + (tok0 * w.HV + hv) * w.K;
  const float* Un = Erases ? w.U_new + cv * CL * w.V : v;
  const index_t ldu = Erases ? w.V : ldv;
  const float scale = w.scale;

  constexpr int ld = sh::ld;  // rows of the dW / dG, dBk, dBv (q) tiles
  float* ring = sdBv;          // (erasing update) the full ring, once dv and dw have read dBv: dBv's tile and the
                               // ring's region; before that the region alone, for products with A in place
  stage_tile<CL, max_kv>(sG, LK, [&](int r, int d) { return r < L && d < K ? Gk[r * K + d] : 0.f; });
  if constexpr (Erases) {
    stage_tile<CL, max_kv, grad_batch>(sK, LK, [&](int r, int d) { return r < L && d < K ? k[r * ldq + d] : 0.f; });
    if (tid < CL) sE[tid] = tid < L ? gate_e[tid * HV] : 0.f;
  }
  __syncthreads();
  const auto D = [&](int r, int s, int d) { return __expf(sG[r * LK + d] - sG[s * LK + d]); };
  // k_sd: the staged rows for an erasing update (its intra-chunk loops read them four times), global rows otherwise
  const auto ks = [&](int s, int d) { return Erases ? sK[s * LK + d] : k[s * ldq + d]; };
  // A product whose operands are both global and contiguous along k, A(m, j) = a[m·lda + j], B(j, n) = b[n·ldb + j]:
  // through the full ring (erasing update; dBv's tile must be dead), else block_gemm's 16-deep slabs
  const auto global_product = [&](int M, int N, int Kd, const float* a, index_t lda, const float* b, index_t ldb,
                                  auto out) {
    if constexpr (Erases)
      block_gemm_ring<Prec, 3, false>(M, N, Kd, a, lda, b, ldb, out, ring);
    else
      block_gemm<Prec, 64, walk::k, walk::k, pk_tk<Erases>>(
          M, N, Kd, [&](int m, int j) { return a[m * lda + j]; }, [&](int j, int n) { return b[n * ldb + j]; }, out,
          scratch);
  };
  // dv, dw (an erasing update: dw_r = Σ_j v_rj dBv_rj by warp reductions into sdWr; channel gates: dw_rj, dv_rj);
  // dv = dU otherwise
  const auto dv_dw = [&] {
    if constexpr (Erases && !Channels) {
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
        float x = 0;
#pragma unroll
        for (int c = 0; c < cols; ++c) {
          const int j = lane + 32 * c;
          if (r >= L || j >= V) continue;
          const float dbv = sdBv[r * ld + j];
          x = fmaf(vr[i][c], dbv, x);
          if (dv_out.ptr) dv_out(ci.bt, ci.t0 + r, hv, j) = from_float<T>(wr[i] * dbv);
        }
        x = warp_sum(x);
        if (lane == 0 && r < L) sdWr[r] = x;
      }
    } else {
      for (int e = tid; e < CL * V; e += threads) {
        const int r = e / V, j = e % V;
        if (r >= L) continue;
        float x;
        if constexpr (Erases) {  // (channel gates)
          const float dbv = sdBv[r * ld + j];
          x = w_ch[r * ldv + j] * dbv;
          if (cd.dw.ptr) cd.dw(ci.bt, ci.t0 + r, hv, j) = from_float<T>(v[r * ldv + j] * dbv);
        } else {
          x = dU[r * w.V + j];
        }
        if (dv_out.ptr) dv_out(ci.bt, ci.t0 + r, hv, j) = from_float<T>(x);
      }
    }
  };

  if constexpr (Erases) {  // dW = −dU hᵀ, dBv = Tᵀ dU, dBk = Tᵀ dW, dA = −(dBv Uᵀ + dBk Wᵀ) (strictly lower)
    global_product(L, K, V, dU, w.V, hc, w.V, [&](int r, int d, float acc) { sdW[r * ld + d] = -acc; });
    gemm_128<Prec, Wide, pk_tk<Erases>, walk::mn, walk::mn>(
        L, V, L, [&](int r, int s) { return Tc[s * CL + r]; }, [&](int s, int j) { return dU[s * w.V + j]; },
        [&](int r, int j, float acc) { sdBv[r * ld + j] = acc; }, scratch);
    gemm_128<Prec, Wide, pk_tk<Erases>, walk::mn, walk::mn>(
        L, K, L, [&](int r, int s) { return Tc[s * CL + r]; }, [&](int s, int d) { return sdW[s * ld + d]; },
        [&](int r, int d, float acc) { sdBk[r * ld + d] = acc; }, scratch);
    block_gemm_ring<Prec, 3, true>(
        L, L, V, sdBv, ld, Uc, w.V, [&](int r, int s, float acc) { sM[r * CL + s] = acc; }, scratch);
    block_gemm_ring<Prec, 3, true>(
        L, L, K, sdBk, ld, Wc, w.K, [&](int r, int s, float acc) { sM[r * CL + s] = s < r ? -(sM[r * CL + s] + acc) : 0.f; },
        scratch);
    dv_dw();  // (dBv's last reads: the next product's ring covers its tile, and starts with a barrier)
  }
  // dP = s dO U_newᵀ (causal, undecayed)
  global_product(L, L, V, dO, ldv, Un, ldu,
                 [&](int r, int s, float acc) { sN[r * CL + s] = s <= r ? scale * acc : 0.f; });
  for (int e = tid; e < CL * max_kv; e += threads) sdG[(e / max_kv) * ld + e % max_kv] = 0;  // (dW's tile is free)
  // inter-chunk read: dq = s Γ ⊙ (dO hᵀ);  state write: dk = Kd-decay ⊙ (U_new dhᵀ)
  global_product(L, K, V, dO, ldv, hc, w.V, [&](int r, int d, float acc) {
    const float x = scale * __expf(sG[r * LK + d]) * acc;
    dq[r * ldg + d] = x;
    sdG[r * ld + d] += q[r * ldq + d] * x;
  });
  global_product(L, K, V, Un, ldu, dhc, w.V, [&](int s, int d, float acc) {
    const float x = __expf(sG[(L - 1) * LK + d] - sG[s * LK + d]) * acc;
    dk[s * ldg + d] = x;
    if (s < L - 1) sdG[s * ld + d] -= ks(s, d) * x;  // (the last row's term: below)
  });
  // dG_Ld's share of the state write, Σ_{s<L-1} k_sd dk_sd, one channel per thread over dk as the product left it
  // (this CTA's own global writes, visible after the product's closing barrier) in place of an atomic from every
  // element (two threads per channel, each over half the rows with all its loads in flight; sdGL zeroed first).
  // The last row's term, undecayed (F = 1), would enter dG_L and leave dG_{L-1} — both in every dgk_t of the chunk —
  // and reach none: in float32 its rounding is all that it adds, and it can dwarf every decayed term (issue #14).
  if (tid < max_kv) sdGL[tid] = 0;
  __syncthreads();
  {
    constexpr int half = CL / 2, batch = 16;
    const int d = tid % max_kv, s0 = tid / max_kv * half;
    float z = 0;
    for (int b0 = s0; b0 < s0 + half; b0 += batch) {
      float x[batch], y[batch];
#pragma unroll
      for (int i = 0; i < batch; ++i) {
        const int s = b0 + i;
        x[i] = d < K && s < L ? dk[s * ldg + d] : 0.f;
        y[i] = d < K && s < L - 1 ? ks(s, d) : 0.f;
      }
#pragma unroll
      for (int i = 0; i < batch; ++i) z = fmaf(y[i], x[i], z);
    }
    if (d < K) atomicAdd(&sdGL[d], z);
  }
  __syncthreads();  // (the loop below adds to dk)
  if constexpr (!Erases) dv_dw();
  if constexpr (Erases) {  // q's rows into dBv's tile (dead since dv, dw; the ring's last product has ended)
    stage_tile<CL, max_kv, grad_batch>(sQ, ld, [&](int r, int d) { return r < L && d < K ? q[r * ldq + d] : 0.f; });
    __syncthreads();
  }
  // q_td: the staged rows for an erasing update, global rows otherwise
  const auto qs = [&](int t, int d) { return Erases ? sQ[t * ld + d] : q[t * ldq + d]; };
  // the decayed intra-chunk products, per (token, channel). dG takes the off-diagonal terms only: the diagonal
  // one, dP_rr q_rd k_rd (D_rrd = 1), is added to dG_rd as q (dq) and taken off as k (dk), so it reaches no dgk_t;
  // in float32 the two roundings of it would not cancel (at T = 1 they are all that the rule gives: issue #14).
  for (int e = tid; e < L * K; e += threads) {
    const int r = e / K, d = e % K;
    const float qr = qs(r, d), kr = ks(r, d);
    float dqP = 0, dkP = 0, ddk, dG;
    if constexpr (Erases) {  // rowA shares dq's decays and k_s, colA dk's decays (each accumulator in the same order)
      const float er = erase(r, d), bk = __expf(sG[r * LK + d]) * sdBk[r * ld + d];
      float rowA = 0, colA = 0;
      for (int s = 0; s < r; ++s) {
        const float x = ks(s, d), decay = D(r, s, d);
        dqP = fmaf(sN[r * CL + s] * x, decay, dqP);
        rowA = fmaf(sM[r * CL + s] * x, decay, rowA);
      }
      for (int t = r + 1; t < L; ++t) {
        const float decay = D(t, r, d);
        dkP = fmaf(sN[t * CL + r] * qs(t, d), decay, dkP);
        colA = fmaf(sM[t * CL + r] * erase(t, d) * ks(t, d), decay, colA);
      }
      dG = (qr * dqP - kr * dkP) + kr * (er * (rowA + bk) - colA);
      const float nrr = sN[r * CL + r];  // the diagonal, undecayed
      dqP = fmaf(nrr, kr, dqP), dkP = fmaf(nrr, qr, dkP);
      ddk = dkP + (er * (rowA + bk) + colA);
      if constexpr (Channels) {
        if (cd.db.ptr) cd.db(ci.bt, ci.t0 + r, hv, d) = from_float<T>(kr * (rowA + bk));
      } else {
        sdBk[r * ld + d] = kr * (rowA + bk);  // de_r's term (dBk's element is read only here, by this thread)
      }
    } else {
      for (int s = 0; s < r; ++s) dqP = fmaf(sN[r * CL + s] * ks(s, d), D(r, s, d), dqP);
      for (int t = r + 1; t < L; ++t) dkP = fmaf(sN[t * CL + r] * qs(t, d), D(t, r, d), dkP);
      dG = qr * dqP - kr * dkP;
      const float nrr = sN[r * CL + r];  // the diagonal, undecayed
      dqP = fmaf(nrr, kr, dqP), dkP = fmaf(nrr, qr, dkP);
      ddk = dkP;
    }
    dq[r * ldg + d] += dqP;
    dk[r * ldg + d] += ddk;
    sdG[r * ld + d] += dG;
  }
  // the state's decay across the chunk: dG_Ld += γ_Ld ⟨h_d, dh_d⟩ (a warp per channel, four channels per warp at a
  // time with all their loads in flight)
  for (int d0 = tid / 32; d0 < K; d0 += 4 * (threads / 32)) {
    constexpr int chans = 4, cols = max_kv / 32;
    float x[chans][cols], y[chans][cols];
#pragma unroll
    for (int c = 0; c < chans; ++c)
#pragma unroll
      for (int i = 0; i < cols; ++i) {
        const int d = d0 + c * (threads / 32), j = tid % 32 + 32 * i;
        x[c][i] = d < K && j < V ? hc[d * w.V + j] : 0.f, y[c][i] = d < K && j < V ? dhc[d * w.V + j] : 0.f;
      }
#pragma unroll
    for (int c = 0; c < chans; ++c) {
      const int d = d0 + c * (threads / 32);
      float z = 0;
#pragma unroll
      for (int i = 0; i < cols; ++i) z = fmaf(x[c][i], y[c][i], z);
      z = warp_sum(z);
      if (tid % 32 == 0 && d < K) atomicAdd(&sdGL[d], __expf(sG[(L - 1) * LK + d]) * z);
    }
  }
  __syncthreads();
  for (int d = tid; d < K; d += threads) {  // dgk_td = Σ_{r≥t} dG_rd
    float acc = sdGL[d];
    for (int r = L - 1; r >= 0; --r) {
      acc += sdG[r * ld + d];
      w.dlog_alpha_k[((tok0 + r) * w.HV + hv) * w.K + d] = acc;
    }
  }
  if constexpr (Erases && !Channels)  // de_r + dw_r = Σ_d of dBk's tile (the terms left there above) + sdWr
    row_sums(
        L, K, [&](int r, int c) { return sdBk[r * ld + c]; },
        [&](int r, float x) { w.derase[(tok0 + r) * w.HV + hv] = x + sdWr[r]; });
}

}  // namespace linea::cuda_detail::bwd::v0
