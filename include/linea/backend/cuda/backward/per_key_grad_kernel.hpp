// linea/backend/cuda/backward/per_key_grad_kernel.hpp — phase 4 for per-key decays (gla, kda): chunk_grad_kernel's
// gradients with D_rsd = exp(G_rd − G_sd) per key channel (docs/math/backward.md §6). The products without a
// per-channel decay inside (dW, dBv, dBk, dA, dP, dO hᵀ, U_new dhᵀ) are block_gemms; the decayed ones
//   dq_rd += Σ_{s≤r} dP_rs k_sd D_rsd                     dk_rd += Σ_{t≥r} dP_tr q_td D_trd
//   rowA_rd = Σ_{s<r} dA_rs k_sd D_rsd                    colA_rd = Σ_{t>r} dA_tr e_t k_td D_trd
//   dk_rd += e_r rowA_rd + colA_rd + e_r γ_rd dBk_rd      de_r += Σ_d k_rd (rowA_rd + γ_rd dBk_rd)
// go by 16-token blocks of the chunk (per_key_blocks.hpp, as phase 1), all on tensor cores (token_block): 16 rows ×
// 16 channels a warp, dq's and rowA's terms as N and M times (k ⊙ exp(G_ρ − G)), dk's and colA's as Nᵀ and Mᵀ times
// (q ⊙ exp(G − G_ρ)) and (e k ⊙ exp(G − G_ρ)), each row then scaled by its decay to or from the reference ρ, the
// block's middle token (pk13): the diagonal block's own terms join the product through the same reference, with
// factors up to exp(diag_span); a (block, channel) whose decay over half a block is larger keeps the exact
// per-(token, channel) sums in log space for its diagonal block (kgrad12's references, every exponent ≤ 0, for the
// rest; bench/cuda/README.md).
// and the decay's gradient per channel is (each product contributes x ⊙ dx for its row factor, −x ⊙ dx for its
// column factor):
//   dG_rd = q_rd (dq_rd) − k_rd (dk_rd)   over the P, A, Kd, Bk and inter-chunk terms, + Σ_s k_sd (Kd term) and
//           γ_Ld ⟨h_d, dh_d⟩ at r = L;   then dgk_td = Σ_{r≥t} dG_rd.
// Terms that hold no decay — dP's diagonal (D_rrd = 1) and the last row's state write (its decay to the chunk's end
// is 1) — enter dG twice with opposite signs within every dgk_t's sum and reach none: they are left out of dG (in
// float32 their roundings would remain, and under strong decays swamp dgk; issue #14).
// With Channels (GDN-2, channel_gates.hpp) e_r is b_rd in every term above, and instead of de_r, dw_r (sums over
// the row) the kernel writes db_rd = k_rd (rowA_rd + γ_rd dBk_rd) and dw_rj = v_rj dBv_rj; dv_rj = w_rj dBv_rj.
// Latency-bound like chunk_grad_kernel (one CTA per SM for an erasing update): there the products with
// k-contiguous global operands (dW, M's two halves, dP, dq's and dk's inter-chunk terms) stream them through
// block_gemm_ring (async_copy.hpp: three 32-deep cp.async slabs, two in flight), with A read in place where it is
// in shared memory (dBv, dBk): the ring has a region of its own, and once dv, dw have read dBv (right after M),
// dBv's tile joins it so that the products whose A is global too get their slabs of both operands. (Inter: 16-bit
// inputs with work.hpp's per_key_inter — dW, dP, dq's and dk's inter-chunk terms come from inter_grad_kernel.hpp and,
// erasing, dBv, dBk, M from ut_grad_kernel.hpp, launched before this kernel: it stages them instead of forming
// them, and takes dG's inter-chunk terms from dq, dk as those kernels left them.) Tᵀ dU and
// Tᵀ dW (T, dU read down their columns) stay block_gemms through 32-deep slabs. gla's kernel (two CTAs per SM at
// 128 registers) keeps 16-deep block_gemm tiles. The q rows the intra-chunk loops read (four times) are staged in
// dBv's tile, and the erase gates in a row of their own; the h·dh and Σ_s k dk reductions batch their loads.
#pragma once
#include "channel_gates.hpp"
#include "direct_grads.hpp"
#include "chunk_grad_kernel.hpp"
#include "block_gemm.hpp"
#include "inputs_kernel.hpp"
#include "per_key_blocks.hpp"

namespace linea::cuda_detail::bwd {

inline constexpr int LK = max_kv + 1;  // padded row stride of [CL][K] shared tiles read column-wise

// gla (no erase: two CTAs per SM within the shared memory budget): dW's tile (also dG's), N, G, a row, the
// block_gemm scratch. An erasing update (one CTA per SM) adds dBk, dBv, M, the staged k rows and the erase gates,
// its [CL][K] tiles padded to ld_kv (conflict-free fragments where block_gemm_ring reads dBv, dBk in place), and
// the ring's own region right after dBv's tile (dBv's tile joins it once dv, dw have read it).
template <bool Erases>
struct per_key_grad_shape {
  static constexpr int ld = Erases ? ld_kv : max_kv;  // rows of the dW / dG, dBk, dBv (q) tiles
  static constexpr int ldn = ld_cc;  // rows of N and M (token_block reads them by rows and by columns: ≡ 4 mod 32)
  static constexpr int ut_kv = Erases ? CL * ld : 0, ut_cc = Erases ? CL * ldn : 0, ut_k = Erases ? CL * LK : 0;
  static constexpr int ring_own = Erases ? ring_floats<3, true> : 0;
  static constexpr int dw_at = 0, dbk_at = dw_at + CL * ld, dbv_at = dbk_at + ut_kv, ring_at = dbv_at + ut_kv,
                       n_at = ring_at + ring_own, m_at = n_at + CL * ldn, g_at = m_at + ut_cc, k_at = g_at + CL * LK,
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

template <bool Erases, class T, bool Channels = false, bool Wide = false, precision Prec = precision_for<T>,
          bool Inter = false>
__global__ void __launch_bounds__(threads, Erases ? 1 : 2) per_key_grad_kernel(const work w, const view<T, 4> dv_out,
                                                                               const channel_gates cg,
                                                                               const channel_grads<T> cd,
                                                                               const direct_grads<T> out = {}) {
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

  constexpr int ld = sh::ld, ldn = sh::ldn;  // rows of the dW / dG, dBk, dBv (q) tiles; of N and M
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

  if constexpr (Erases && Inter) {  // dBv, dBk (in dW's slot), M = dA from ut_grad_kernel.hpp
    const float *dBv_g = w.dBv_inter + cv * CL * w.V, *dBk_g = w.dW_inter + cv * CL * w.K, *M_g = w.M_inter + cv * CL * CL;
    stage_tile<CL, max_kv, grad_batch>(sdBv, ld, [&](int r, int j) { return r < L && j < V ? dBv_g[r * w.V + j] : 0.f; });
    stage_tile<CL, max_kv, grad_batch>(sdBk, ld, [&](int r, int d) { return r < L && d < K ? dBk_g[r * w.K + d] : 0.f; });
    stage_tile<CL, CL>(sM, ldn, [&](int r, int s) { return r < L && s < r ? M_g[r * CL + s] : 0.f; });
    __syncthreads();
    dv_dw();
  } else if constexpr (Erases) {  // dW = −dU hᵀ, dBv = Tᵀ dU, dBk = Tᵀ dW, dA = −(dBv Uᵀ + dBk Wᵀ) (strictly lower)
    global_product(L, K, V, dU, w.V, hc, w.V, [&](int r, int d, float acc) { sdW[r * ld + d] = -acc; });
    gemm_128<Prec, Wide, pk_tk<Erases>, walk::mn, walk::mn>(
        L, V, L, [&](int r, int s) { return Tc[s * CL + r]; }, [&](int s, int j) { return dU[s * w.V + j]; },
        [&](int r, int j, float acc) { sdBv[r * ld + j] = acc; }, scratch);
    gemm_128<Prec, Wide, pk_tk<Erases>, walk::mn, walk::mn>(
        L, K, L, [&](int r, int s) { return Tc[s * CL + r]; }, [&](int s, int d) { return sdW[s * ld + d]; },
        [&](int r, int d, float acc) { sdBk[r * ld + d] = acc; }, scratch);
    block_gemm_ring<Prec, 3, true>(
        L, L, V, sdBv, ld, Uc, w.V, [&](int r, int s, float acc) { sM[r * ldn + s] = acc; }, scratch);
    block_gemm_ring<Prec, 3, true>(
        L, L, K, sdBk, ld, Wc, w.K, [&](int r, int s, float acc) { sM[r * ldn + s] = s < r ? -(sM[r * ldn + s] + acc) : 0.f; },
        scratch);
    dv_dw();  // (dBv's last reads: the next product's ring covers its tile, and starts with a barrier)
  }
  if constexpr (Inter) {
    // dP (causal, undecayed, s applied) from inter_grad_kernel.hpp; dG's inter-chunk terms from dq, dk as it left
    // them (q ⊙ dq − k ⊙ dk, the last row's k term left out as below)
    const float* dP_g = w.dP_inter + cv * CL * CL;
    stage_tile<CL, CL>(sN, ldn, [&](int r, int s) { return r < L && s <= r ? dP_g[r * CL + s] : 0.f; });
    stage_tile<CL, max_kv, grad_batch>(sdG, ld, [&](int r, int d) {  // (batched: the loads in flight together)
      if (r >= L || d >= K) return 0.f;
      const float x = q[r * ldq + d] * dq[r * ldg + d];
      return r < L - 1 ? x - ks(r, d) * dk[r * ldg + d] : x;
    });
  } else {
    // dP = s dO U_newᵀ (causal, undecayed)
    global_product(L, L, V, dO, ldv, Un, ldu,
                   [&](int r, int s, float acc) { sN[r * ldn + s] = s <= r ? scale * acc : 0.f; });
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
  }
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
  __syncthreads();  // (the products below add to dk)
  if constexpr (!Erases) dv_dw();
  if constexpr (Erases) {  // q's rows into dBv's tile (dead since dv, dw; the ring's last product has ended)
    stage_tile<CL, max_kv, grad_batch>(sQ, ld, [&](int r, int d) { return r < L && d < K ? q[r * ldq + d] : 0.f; });
    __syncthreads();
  }
  // q_td: the staged rows for an erasing update, global rows otherwise
  const auto qs = [&](int t, int d) { return Erases ? sQ[t * ld + d] : q[t * ldq + d]; };
  // The decayed intra-chunk products, all on tensor cores (token_block): warp w takes key channels 16 w + [0, 16) of
  // every 16-row block I (rows r0 = 16 I + [0, 16), last = min(L, r0 + 16) − 1), through the block's middle row
  // ρ = min(r0 + 8, last) as reference (diag_refs, per_key_blocks.hpp):
  //   from the left (tokens s ≤ last):   dq_r += f_r Ñ_r K̃,  rowA_r += f_r M_r K̃,   K̃_sd = k_sd exp(G_ρd − G_sd),
  //     f_rd = exp(G_rd − G_ρd), Ñ = N without its diagonal (masked s < r);
  //   from the right (tokens t ≥ r0):   dkP_r = f'_r (Ñᵀ)_r Q̃,  colA_r = f'_r (Mᵀ)_r X̃,   Q̃_td = q_td exp(G_td − G_ρd),
  //     X̃_td = e_td k_td exp(G_td − G_ρd), f'_rd = exp(G_ρd − G_rd).
  // Below (above) the diagonal block every exponent of the operands is ≤ 0; within it the operands' and the rows'
  // factors reach at most exp(span) with span the decay over half the block — ≤ diag_span nats unless the channel is
  // "wide" there (log decays below −5 per token on average). A wide (block, channel) takes references r0 (left) and
  // last (right) instead and leaves its diagonal block out of the products (zero operands: every exponent ≤ 0, as
  // kgrad12's blocks); the exact per-(token, channel) sums in log space add it after the products (their only
  // remaining use, under extreme gates). Each lane then adds its elements' terms (a lane owns the same elements in
  // both products) to dq, dk (float32 workspace), dG and dBk's tile (de; db for gdn2) — with the terms that hold no
  // per-pair decay: dP's diagonal, undecayed, into dq and dk but not dG (it would enter dG twice with opposite signs
  // and reach no dgk_t; in float32 its two roundings would not cancel: issue #14), and (erasing update) dBk's row
  // term e_r γ_rd dBk_rd, after which dBk's element holds k_rd (rowA_rd + γ_rd dBk_rd) (de_r's term, or db_rd).
  bool any_wide = false;
  if (const int warp = tid >> 5, c0 = diag_block * warp, blocks = (L + diag_block - 1) / diag_block; c0 < K) {
    const int lane = tid & 31, g = lane >> 2, t4 = lane & 3;
    const auto kx = [&](int s, int d) { return d < K ? ks(s, d) : 0.f; };
    const auto qx = [&](int t, int d) { return d < K ? qs(t, d) : 0.f; };
    const auto ex = [&](int t, int d) { return d < K ? erase(t, d) * ks(t, d) : 0.f; };
    // adds the terms of rows r0 + [0, 16) from the left (lp: dq's, la: rowA's) and from the right (rp: dk's, ra:
    // colA's) products; `left` / `right` say which ran (both for an erasing update)
    const auto add = [&](const diag_refs& b, bool left, bool right, const float (&lp)[2][4], const float (&la)[2][4],
                         const float (&rp)[2][4], const float (&ra)[2][4]) {
      const int r0 = b.b0;
      // the references' log decays of the lane's four channels (c0 + 8 j + 2 t4 + u)
      float gl[2][2], gr[2][2];
#pragma unroll
      for (int j = 0; j < 2; ++j)
#pragma unroll
        for (int u = 0; u < 2; ++u) {
          const int d = c0 + 8 * j + 2 * t4 + u;
          const bool wide = b.wide<LK>(sG, d);
          gl[j][u] = sG[(wide ? b.b0 : b.mid) * LK + d], gr[j][u] = sG[(wide ? b.last : b.mid) * LK + d];
        }
      // the lane's dq and dk elements, all loads in flight before the first store (one round trip, not 16)
      float oq[2][4], ok[2][4];
#pragma unroll
      for (int j = 0; j < 2; ++j)
#pragma unroll
        for (int x = 0; x < 4; ++x) {
          const int r = r0 + g + 8 * (x >> 1), d = c0 + 8 * j + 2 * t4 + (x & 1);
          const bool in = r < L && d < K;
          oq[j][x] = in && left ? dq[r * ldg + d] : 0.f;
          ok[j][x] = in && right ? dk[r * ldg + d] : 0.f;
        }
#pragma unroll
      for (int j = 0; j < 2; ++j)
#pragma unroll
        for (int x = 0; x < 4; ++x) {
          const int r = r0 + g + 8 * (x >> 1), d = c0 + 8 * j + 2 * t4 + (x & 1);
          if (r >= L || d >= K) continue;
          const float Gr = sG[r * LK + d], nrr = sN[r * ldn + r];  // (dP's diagonal, undecayed)
          const float fl = left ? __expf(Gr - gl[j][x & 1]) : 0.f;
          const float fr = right ? __expf(gr[j][x & 1] - Gr) : 0.f;
          // (a product that did not run is not read: `left` and `right` are constants where add is inlined)
          const float dqP = left ? fl * lp[j][x] : 0.f, dkP = right ? fr * rp[j][x] : 0.f, qr = qs(r, d), kr = ks(r, d);
          if constexpr (Erases) {
            const float er = erase(r, d), rowA = fl * la[j][x], colA = fr * ra[j][x];
            const float bk = __expf(Gr) * sdBk[r * ld + d];
            dq[r * ldg + d] = oq[j][x] + fmaf(nrr, kr, dqP);
            dk[r * ldg + d] = ok[j][x] + (fmaf(nrr, qr, dkP) + (er * (rowA + bk) + colA));
            sdG[r * ld + d] += (qr * dqP - kr * dkP) + kr * (er * (rowA + bk) - colA);
            sdBk[r * ld + d] = kr * (rowA + bk);
          } else {
            if (left) dq[r * ldg + d] = oq[j][x] + fmaf(nrr, kr, dqP);
            if (right) dk[r * ldg + d] = ok[j][x] + fmaf(nrr, qr, dkP);
            sdG[r * ld + d] += qr * dqP - kr * dkP;
          }
        }
    };
    // per n-tile j, the lane's B channel c0 + 8 j + g: its reference's log decay and the tokens it takes
    const auto from_left = [&](const diag_refs& b, float (&lp)[2][4], float (&la)[2][4]) {
      float gref[2];
      int cut[2];  // tokens ≥ cut read as zeros (a wide channel's diagonal block)
#pragma unroll
      for (int j = 0; j < 2; ++j) {
        const int d = c0 + 8 * j + g;
        const bool wide = b.wide<LK>(sG, d);
        any_wide |= wide && d < K;
        gref[j] = sG[(wide ? b.b0 : b.mid) * LK + d], cut[j] = wide ? b.b0 : L;
      }
      token_block<Erases, Prec>(
          b.b0, c0, 0, b.last + 1, [&](int r, int s) { return s < r && r < L ? sN[r * ldn + s] : 0.f; },
          [&](int r, int s) { return s < r && r < L ? sM[r * ldn + s] : 0.f; }, kx, kx,
          [&](int s, int d, int j) { return s < cut[j] ? __expf(gref[j] - sG[s * LK + d]) : 0.f; }, lp, la);
    };
    const auto from_right = [&](const diag_refs& b, float (&rp)[2][4], float (&ra)[2][4]) {
      float gref[2];
      int cut[2];  // tokens < cut read as zeros (a wide channel's diagonal block)
#pragma unroll
      for (int j = 0; j < 2; ++j) {
        const int d = c0 + 8 * j + g;
        const bool wide = b.wide<LK>(sG, d);
        gref[j] = sG[(wide ? b.last : b.mid) * LK + d], cut[j] = wide ? b.last + 1 : 0;
      }
      token_block<Erases, Prec>(
          b.b0, c0, b.b0, L, [&](int r, int t) { return t > r ? sN[t * ldn + r] : 0.f; },
          [&](int r, int t) { return t > r ? sM[t * ldn + r] : 0.f; }, qx, ex,
          [&](int t, int d, int j) { return t >= cut[j] ? __expf(sG[t * LK + d] - gref[j]) : 0.f; }, rp, ra);
    };
    for (int I = 0; I < blocks; ++I) {
      const diag_refs b(diag_block * I, L);
      float lp[2][4] = {}, la[2][4] = {}, rp[2][4] = {}, ra[2][4] = {};
      if constexpr (Erases) {  // both products, then one pass over the elements
        from_left(b, lp, la);
        from_right(b, rp, ra);
        add(b, true, true, lp, la, rp, ra);
      } else {  // (two CTAs an SM, 128 registers: one product's accumulators live at a time)
        from_left(b, lp, la), add(b, true, false, lp, la, rp, ra);
        from_right(b, rp, ra), add(b, false, true, lp, la, rp, ra);
      }
    }
  }
  // The diagonal blocks of wide (block, channel) pairs, per (token, channel) in log space (one exp per (r, s, d);
  // every exponent ≤ 0), after the products' terms (their writes are in after the barrier). Under ordinary gates no
  // pair is wide and the loop does not run.
  if (__syncthreads_or(any_wide)) {
    for (int e = tid; e < L * K; e += threads) {
      const int r = e / K, d = e % K;
      const diag_refs b(r - r % diag_block, L);
      if (!b.wide<LK>(sG, d)) continue;
      const float qr = qs(r, d), kr = ks(r, d);
      float dqP = 0, dkP = 0;
      if constexpr (Erases) {  // rowA shares dq's decays and k_s, colA dk's decays
        const float er = erase(r, d);
        float rowA = 0, colA = 0;
        for (int s = b.b0; s < r; ++s) {
          const float x = ks(s, d), decay = D(r, s, d);
          dqP = fmaf(sN[r * ldn + s] * x, decay, dqP);
          rowA = fmaf(sM[r * ldn + s] * x, decay, rowA);
        }
        for (int t = r + 1; t <= b.last; ++t) {
          const float decay = D(t, r, d);
          dkP = fmaf(sN[t * ldn + r] * qs(t, d), decay, dkP);
          colA = fmaf(sM[t * ldn + r] * erase(t, d) * ks(t, d), decay, colA);
        }
        dq[r * ldg + d] += dqP;
        dk[r * ldg + d] += dkP + (er * rowA + colA);
        sdG[r * ld + d] += (qr * dqP - kr * dkP) + kr * (er * rowA - colA);
        sdBk[r * ld + d] += kr * rowA;
      } else {
        for (int s = b.b0; s < r; ++s) dqP = fmaf(sN[r * ldn + s] * ks(s, d), D(r, s, d), dqP);
        for (int t = r + 1; t <= b.last; ++t) dkP = fmaf(sN[t * ldn + r] * qs(t, d), D(t, r, d), dkP);
        dq[r * ldg + d] += dqP;
        dk[r * ldg + d] += dkP;
        sdG[r * ld + d] += qr * dqP - kr * dkP;
      }
    }
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
  for (int d = tid; d < K; d += threads) {  // dgk_td = Σ_{r≥t} dG_rd (out.on: the caller's dgk, direct_grads.hpp)
    float acc = sdGL[d];
    for (int r = L - 1; r >= 0; --r) {
      acc += sdG[r * ld + d];
      if (!out.on) w.dlog_alpha_k[((tok0 + r) * w.HV + hv) * w.K + d] = acc;
      else if (out.dgk.ptr) out.dgk(ci.bt, ci.t0 + r, hv, d) = from_float<T>(acc);
    }
  }
  if (out.on) {  // dq, dk: this CTA's rows of the workspace are final (the barrier above) — the caller's, h = hv
    store_grad_rows(out.dq, dq, ldg, ci.bt, ci.t0, h, L, K);
    store_grad_rows(out.dk, dk, ldg, ci.bt, ci.t0, h, L, K);
  }
  if constexpr (Channels) {  // db_rd: dBk's tile as the terms above left it
    if (cd.db.ptr)
      for (int e = tid; e < L * K; e += threads) {
        const int r = e / K, d = e % K;
        cd.db(ci.bt, ci.t0 + r, hv, d) = from_float<T>(sdBk[r * ld + d]);
      }
  }
  if constexpr (Erases && !Channels)  // de_r + dw_r = Σ_d of dBk's tile (the terms left there above) + sdWr
    row_sums(
        L, K, [&](int r, int c) { return sdBk[r * ld + c]; },
        [&](int r, float x) {
          if (!out.on) w.derase[(tok0 + r) * w.HV + hv] = x + sdWr[r];
          else if (out.dbeta.ptr) out.dbeta(ci.bt, ci.t0 + r, hv) = from_float<T>(x + sdWr[r]);
        });
}

}  // namespace linea::cuda_detail::bwd
